package rest

import (
	"net/http"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/overview"
)

// What the operator console reads besides the rest of the API: the
// overview, bans, subscribers and message previews.

// Overview is GET /api/v1/admin/overview's data (GraphQL adminOverview).
type Overview struct {
	Version     string             `json:"version"`
	Accounts    AccountCounts      `json:"accounts"`
	Devices     DeviceCounts       `json:"devices"`
	Broadcasts  BroadcastCounts    `json:"broadcasts"`
	Bot         MessengerBotStatus `json:"bot"`
	Webhooks    WebhookCounts      `json:"webhooks"`
	RateLimiter RateLimiterState   `json:"rateLimiter"`
}

// AccountCounts are the accounts not deleted.
type AccountCounts struct {
	Total      int `json:"total"`
	Verified   int `json:"verified"`
	NewLast24h int `json:"newLast24h"`
	Disabled   int `json:"disabled"`
}

// DeviceCounts are the active devices.
type DeviceCounts struct {
	Total         int             `json:"total"`
	ByPlatform    []PlatformCount `json:"byPlatform"`
	TokensValid   int             `json:"tokensValid"`
	TokensInvalid int             `json:"tokensInvalid"`
	TokensMissing int             `json:"tokensMissing"`
}

// PlatformCount is the active devices of one platform.
type PlatformCount struct {
	Platform string `json:"platform"`
	Count    int    `json:"count"`
}

// BroadcastCounts are the broadcasts not yet finished.
type BroadcastCounts struct {
	Running          int `json:"running"`
	Queued           int `json:"queued"`
	Scheduled        int `json:"scheduled"`
	MessengerRunning int `json:"messengerRunning"`
}

// WebhookCounts are the webhook endpoints.
type WebhookCounts struct {
	Total    int `json:"total"`
	Failing  int `json:"failing"`
	Disabled int `json:"disabled"`
}

// RateLimiterState is how the answering replica's rate limiter counts.
type RateLimiterState struct {
	Backend  string  `json:"backend"`
	Degraded bool    `json:"degraded"`
	Reason   *string `json:"reason"`
}

// MessengerBotStatus is the bot's connection (GraphQL MessengerBotStatus).
type MessengerBotStatus struct {
	Connected       bool    `json:"connected"`
	BotUsername     *string `json:"botUsername"`
	BotName         *string `json:"botName"`
	SubscriberCount int     `json:"subscriberCount"`
	WebhookURL      *string `json:"webhookUrl"`
}

func newOverview(o overview.Overview) Overview {
	d := o.Devices
	devs := DeviceCounts{Total: d.Total, ByPlatform: make([]PlatformCount, 0, len(d.ByPlatform)), TokensValid: d.TokensValid, TokensInvalid: d.TokensInvalid, TokensMissing: d.TokensMissing}
	for _, p := range d.ByPlatform {
		devs.ByPlatform = append(devs.ByPlatform, PlatformCount{Platform: p.Platform, Count: p.Count})
	}
	a, b, w, rl := o.Accounts, o.Broadcasts, o.Webhooks, o.RateLimiter
	return Overview{
		Version:     o.Version,
		Accounts:    AccountCounts{Total: a.Total, Verified: a.Verified, NewLast24h: a.NewLast24h, Disabled: a.Disabled},
		Devices:     devs,
		Broadcasts:  BroadcastCounts{Running: b.Running, Queued: b.Queued, Scheduled: b.Scheduled, MessengerRunning: b.MessengerRunning},
		Bot:         newBotStatus(o.Bot),
		Webhooks:    WebhookCounts{Total: w.Total, Failing: w.Failing, Disabled: w.Disabled},
		RateLimiter: RateLimiterState{Backend: rl.Backend, Degraded: rl.Degraded, Reason: nonEmpty(rl.Reason)},
	}
}

func newBotStatus(st messenger.Status) MessengerBotStatus {
	return MessengerBotStatus{Connected: st.Connected, BotUsername: st.BotUsername, BotName: st.BotName, SubscriberCount: st.SubscriberCount, WebhookURL: st.WebhookURL}
}

// AdminOverview is GET /api/v1/admin/overview.
func (h *Handlers) AdminOverview() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		o, err := h.Overview.Get(r.Context())
		if err != nil {
			return nil, err
		}
		return newOverview(o), nil
	})
}

// Ban is a banned client address as REST shows it.
type Ban struct {
	IP        string    `json:"ip"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"createdAt"`
}

func newBan(b limits.Ban) Ban {
	return Ban{IP: b.IP, Reason: b.Reason, CreatedAt: b.CreatedAt.UTC().Truncate(time.Second)}
}

// pageArgs reads a listing's first (a whole number; 0 when absent) and
// after.
func pageArgs(r *http.Request) (first int, after string, err error) {
	q := r.URL.Query()
	if s := q.Get("first"); s != "" {
		if first, err = strconv.Atoi(s); err != nil {
			return 0, "", apperr.Invalid("first", "a whole number", s)
		}
	}
	return first, q.Get("after"), nil
}

// ListBans is GET /api/v1/admin/bans?first=&after=.
func (h *Handlers) ListBans() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		first, after, err := pageArgs(r)
		if err != nil {
			return nil, err
		}
		page, err := h.Bans.List(r.Context(), first, after)
		if err != nil {
			return nil, err
		}
		return listPage(page, newBan), nil
	})
}

// AddBan is POST /api/v1/admin/bans (banAddress): 201 with the ban, the
// one already there when the address was banned.
func (h *Handlers) AddBan() http.HandlerFunc {
	type input struct {
		IP     string `json:"ip"`
		Reason string `json:"reason"`
	}
	return handle(http.StatusCreated, func(r *http.Request, in input) (any, error) {
		b, err := h.Bans.Add(r.Context(), in.IP, in.Reason)
		if err != nil {
			return nil, err
		}
		return newBan(b), nil
	})
}

// LiftBan is DELETE /api/v1/admin/bans/{ip} (liftBan); an IPv6 /64 is
// written with its slash escaped (2001:db8::%2F64).
func (h *Handlers) LiftBan() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		ip, err := h.Bans.Lift(r.Context(), r.PathValue("ip"))
		if err != nil {
			return nil, err
		}
		return map[string]any{"ip": ip, "lifted": true}, nil
	})
}

// MessengerSubscriber is a chat of the bot as REST shows it.
type MessengerSubscriber struct {
	ChatID          string    `json:"chatId"`
	Username        *string   `json:"username"`
	FirstName       *string   `json:"firstName"`
	StartPayload    *string   `json:"startPayload"`
	SubscribedSince time.Time `json:"subscribedSince"`
	Status          string    `json:"status"`
	UserID          *string   `json:"userId"`
}

func newMessengerSubscriber(s messenger.Subscriber) MessengerSubscriber {
	return MessengerSubscriber{ChatID: s.ChatID, Username: nonEmpty(s.Username), FirstName: nonEmpty(s.FirstName), StartPayload: nonEmpty(s.StartPayload),
		SubscribedSince: s.SubscribedSince.UTC().Truncate(time.Second), Status: string(s.Status), UserID: nonEmpty(s.UserID)}
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// MessengerSubscribers is GET /api/v1/messenger/subscribers?status=&first=&after=.
func (h *Handlers) MessengerSubscribers() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		first, after, err := pageArgs(r)
		if err != nil {
			return nil, err
		}
		page, err := h.Messenger.Subscribers(r.Context(), r.URL.Query().Get("status"), first, after)
		if err != nil {
			return nil, err
		}
		return listPage(page, newMessengerSubscriber), nil
	})
}

// MessengerPreview is POST /api/v1/messenger/preview (messengerPreview).
func (h *Handlers) MessengerPreview() http.HandlerFunc {
	type input struct {
		Message string `json:"message"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		p, err := h.Messenger.Preview(in.Message)
		if err != nil {
			return nil, err
		}
		return map[string]any{"html": p.HTML, "length": p.Length}, nil
	})
}
