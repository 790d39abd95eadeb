package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/overview"
)

// AdminOverview is the service at a glance, for the operator console.
type AdminOverview struct {
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

func newPlatformCount(p devices.PlatformCount) PlatformCount {
	return PlatformCount{Platform: p.Platform, Count: p.Count}
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

// NewAdminOverview renders the overview.
func NewAdminOverview(o overview.Overview) AdminOverview {
	d, a, b, w, rl := o.Devices, o.Accounts, o.Broadcasts, o.Webhooks, o.RateLimiter
	return AdminOverview{
		Version:  o.Version,
		Accounts: AccountCounts{Total: a.Total, Verified: a.Verified, NewLast24h: a.NewLast24h, Disabled: a.Disabled},
		Devices: DeviceCounts{Total: d.Total, TokensValid: d.TokensValid, TokensInvalid: d.TokensInvalid, TokensMissing: d.TokensMissing,
			ByPlatform: All(d.ByPlatform, newPlatformCount)},
		Broadcasts:  BroadcastCounts{Running: b.Running, Queued: b.Queued, Scheduled: b.Scheduled, MessengerRunning: b.MessengerRunning},
		Bot:         NewMessengerBotStatus(o.Bot),
		Webhooks:    WebhookCounts{Total: w.Total, Failing: w.Failing, Disabled: w.Disabled},
		RateLimiter: RateLimiterState{Backend: rl.Backend, Degraded: rl.Degraded, Reason: nonEmpty(rl.Reason)},
	}
}

// Ban is a banned client address.
type Ban struct {
	IP        string    `json:"ip"`
	Reason    string    `json:"reason"`
	CreatedAt time.Time `json:"createdAt"`
}

// NewBan renders a ban.
func NewBan(b limits.Ban) Ban {
	return Ban{IP: b.IP, Reason: b.Reason, CreatedAt: seconds(b.CreatedAt)}
}

// BanLifted answers the lifting of a ban: what was banned.
type BanLifted struct {
	IP     string `json:"ip"`
	Lifted bool   `json:"lifted"`
}
