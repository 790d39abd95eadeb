package graph

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/overview"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Resolver holds the services the GraphQL door opens onto. It does no work
// of its own: every rule lives in the services.
type Resolver struct {
	Accounts  *accounts.Service
	APIKeys   *apikeys.Service
	Sessions  *sessions.Service
	Messenger *messenger.Service
	// MessengerBroadcasts are the bot's broadcast jobs.
	MessengerBroadcasts *messenger.Broadcaster
	Devices             *devices.Service
	Notifications       *notifications.Service
	Idempotency         *idempotency.Service
	Plans               *subscriptions.Service
	Webhooks            *webhooks.Service
	// Overview is the operator console's service at a glance.
	Overview *overview.Service
	// Bans are the operators' bans of client addresses.
	Bans    *limits.Bans
	Version string
}

// caller is the authenticated account of the request, as its owner sees
// it (accounts.Service.Profile).
func (r *Resolver) caller(ctx context.Context) (accounts.Account, error) {
	return r.Accounts.Profile(ctx, auth.Caller(ctx).AccountID)
}

func (r *Resolver) user(a accounts.Account) *User {
	return &User{
		ID:            a.ID,
		Email:         a.Email,
		EmailVerified: a.Verified(),
		CreatedAt:     a.CreatedAt.UTC().Truncate(time.Second),
		ReferralCode:  a.ReferralCode,
		Subscription: &UserSubscription{
			Plan:      a.Subscription.Plan,
			Status:    a.Subscription.Status(r.Accounts.Now()),
			ExpiresAt: a.Subscription.ExpiresAt.UTC().Truncate(time.Second),
		},
		Locale: nonEmpty(a.Locale),
	}
}

func (r *Resolver) userRecord(rec accounts.Record) *UserRecord {
	u := r.user(rec.Account)
	return &UserRecord{
		ID:             u.ID,
		Email:          u.Email,
		EmailVerified:  u.EmailVerified,
		CreatedAt:      u.CreatedAt,
		ReferralCode:   u.ReferralCode,
		Subscription:   u.Subscription,
		Locale:         u.Locale,
		Disabled:       rec.Disabled(),
		DisabledAt:     utcPtr(rec.DisabledAt),
		DisabledReason: nonEmpty(rec.DisabledReason),
		LastLoginAt:    utcPtr(rec.LastLoginAt),
		DeviceCount:    rec.DeviceCount,
		SessionCount:   rec.SessionCount,
	}
}

func session(s sessions.Session, current string) Session {
	return Session{
		ID:         s.ID,
		CreatedAt:  s.CreatedAt.UTC().Truncate(time.Second),
		LastUsedAt: s.LastUsedAt.UTC().Truncate(time.Second),
		UserAgent:  s.UserAgent,
		IP:         s.IP,
		Current:    s.ID == current,
	}
}

func (r *Resolver) apiKey(k apikeys.Key) *APIKey {
	return &APIKey{
		ID:         k.ID,
		Name:       k.Name,
		Scopes:     k.Scopes,
		RateLimit:  r.APIKeys.RateLimitOf(k),
		ExpiresAt:  utcPtr(k.ExpiresAt),
		CreatedAt:  k.CreatedAt.UTC().Truncate(time.Second),
		LastUsedAt: utcPtr(k.LastUsedAt),
		RevokedAt:  utcPtr(k.RevokedAt),
	}
}

func authPayload(t sessions.Tokens) *AuthPayload {
	return &AuthPayload{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.TokenType, ExpiresIn: t.ExpiresIn}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func pageInfo(end string, more bool) *PageInfo {
	return &PageInfo{EndCursor: nonEmpty(end), HasNextPage: more}
}

func messengerOptions(o *MessengerMessageOptions) messenger.SendOptions {
	if o == nil {
		return messenger.SendOptions{}
	}
	out := messenger.SendOptions{Silent: deref(o.Silent), ImageURL: deref(o.ImageURL), DocumentURL: deref(o.DocumentURL)}
	for _, row := range o.Buttons {
		var r []messenger.Button
		for _, b := range row {
			r = append(r, messenger.Button{Text: b.Text, URL: b.URL})
		}
		out.Buttons = append(out.Buttons, r)
	}
	return out
}

func device(d devices.Device) *Device {
	return &Device{
		DeviceID:        d.ID,
		UserID:          d.AccountID,
		Platform:        d.Platform,
		Name:            d.Name,
		PushToken:       nonEmpty(d.PushToken),
		Active:          d.Active,
		PushTokenStatus: d.PushTokenStatus,
		CreatedAt:       d.CreatedAt.UTC().Truncate(time.Second),
		LastSeenAt:      d.LastSeenAt.UTC().Truncate(time.Second),
	}
}

func notificationInput(n NotificationInput) notifications.Notification {
	out := notifications.Notification{Subject: n.Subject, Content: n.Content, Data: n.Data}
	if o := n.Options; o != nil {
		out.Options = notifications.PushOptions{
			Priority: deref(o.Priority), TTLSeconds: o.TTL, Badge: o.Badge, Sound: deref(o.Sound), ImageURL: deref(o.ImageURL),
			ChannelID: deref(o.ChannelID), ThreadID: deref(o.ThreadID), ContentAvailable: deref(o.ContentAvailable),
		}
	}
	return out
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

func notificationJob(j notifications.Job) *NotificationJob {
	return &NotificationJob{
		ID:              j.ID,
		Status:          j.Status,
		Subject:         j.Subject,
		TotalRecipients: j.TotalRecipients,
		Sent:            j.Sent,
		Failed:          j.Failed,
		InvalidTokens:   j.InvalidTokens,
		CreatedAt:       j.CreatedAt.UTC().Truncate(time.Second),
		StartedAt:       utcPtr(j.StartedAt),
		FinishedAt:      utcPtr(j.FinishedAt),
		SendAt:          utcPtr(j.SendAt),
		Error:           nonEmpty(j.Error),
	}
}

func messengerBroadcast(b messenger.Broadcast) *MessengerBroadcast {
	return &MessengerBroadcast{
		ID:              b.ID,
		Status:          b.Status,
		TotalRecipients: b.TotalRecipients,
		Sent:            b.Sent,
		Failed:          b.Failed,
		Blocked:         b.Blocked,
		CreatedAt:       b.CreatedAt.UTC().Truncate(time.Second),
		StartedAt:       utcPtr(b.StartedAt),
		FinishedAt:      utcPtr(b.FinishedAt),
		Error:           nonEmpty(b.Error),
	}
}

func messengerSubscriber(sub messenger.Subscriber) *MessengerSubscriber {
	return &MessengerSubscriber{
		ChatID:          sub.ChatID,
		Username:        nonEmpty(sub.Username),
		FirstName:       nonEmpty(sub.FirstName),
		StartPayload:    nonEmpty(sub.StartPayload),
		SubscribedSince: sub.SubscribedSince.UTC().Truncate(time.Second),
		Status:          string(sub.Status),
		UserID:          nonEmpty(sub.UserID),
	}
}

func webhookEndpoint(e webhooks.Endpoint) *WebhookEndpoint {
	out := &WebhookEndpoint{ID: e.ID, URL: e.URL, Description: e.Description, EventTypes: e.EventTypes, Enabled: e.Enabled(),
		DisabledAt: utcPtr(e.DisabledAt), DisabledReason: nonEmpty(e.DisabledReason), FailingSince: utcPtr(e.FailingSince),
		CreatedAt: e.CreatedAt.UTC().Truncate(time.Second)}
	if len(e.SigningSecrets(time.Now())) > 1 {
		out.PreviousSecretExpiresAt = utcPtr(e.PreviousSecretUntil)
	}
	return out
}

func webhookDelivery(a webhooks.Attempt) WebhookDelivery {
	d := WebhookDelivery{ID: a.ID, EventID: a.EventID, EventType: a.EventType, Attempt: a.Attempt, Success: a.Succeeded(),
		DurationMs: int(a.Duration.Milliseconds()), Error: nonEmpty(a.Error), CreatedAt: a.CreatedAt.UTC().Truncate(time.Second)}
	if a.StatusCode != 0 {
		code := a.StatusCode
		d.StatusCode = &code
	}
	return d
}

func sendToUserResult(res notifications.UserSendResult) *SendToUserResult {
	out := &SendToUserResult{UserID: res.UserID, Status: res.Status, Message: res.Message, Outcomes: make([]DeviceSendOutcome, 0, len(res.Outcomes))}
	for _, o := range res.Outcomes {
		out.Outcomes = append(out.Outcomes, DeviceSendOutcome{DeviceID: nonEmpty(o.DeviceID), ChatID: nonEmpty(o.ChatID), Platform: o.Platform, Channel: o.Channel, Status: o.Status, Error: nonEmpty(o.Error)})
	}
	return out
}

// idempotencyKey is a send's idempotencyKey argument.
func (r *Resolver) idempotencyKey(v *string) idempotency.Key {
	return idempotency.Key{Service: r.Idempotency, Field: "idempotencyKey", Value: deref(v)}
}

// optionalAudience is a messenger broadcast's audience: nil (every
// subscribed chat) when the argument is absent.
func optionalAudience(a *AudienceInput) *audience.Audience {
	if a == nil {
		return nil
	}
	out := audienceInput(a)
	return &out
}

func audienceInput(a *AudienceInput) audience.Audience {
	if a == nil {
		return audience.Audience{}
	}
	return audience.Audience{Platforms: a.Platforms, Plans: a.Plans, SubscriptionStatus: deref(a.SubscriptionStatus)}
}

func ban(b limits.Ban) *Ban {
	return &Ban{IP: b.IP, Reason: b.Reason, CreatedAt: b.CreatedAt.UTC().Truncate(time.Second)}
}

func botStatus(st messenger.Status) *MessengerBotStatus {
	return &MessengerBotStatus{Connected: st.Connected, BotUsername: st.BotUsername, BotName: st.BotName, SubscriberCount: st.SubscriberCount, WebhookURL: st.WebhookURL}
}

func adminOverview(o overview.Overview) *AdminOverview {
	d := o.Devices
	devs := &DeviceCounts{Total: d.Total, ByPlatform: make([]PlatformCount, 0, len(d.ByPlatform)), TokensValid: d.TokensValid, TokensInvalid: d.TokensInvalid, TokensMissing: d.TokensMissing}
	for _, p := range d.ByPlatform {
		devs.ByPlatform = append(devs.ByPlatform, PlatformCount{Platform: p.Platform, Count: p.Count})
	}
	a, b, w, rl := o.Accounts, o.Broadcasts, o.Webhooks, o.RateLimiter
	return &AdminOverview{
		Version:     o.Version,
		Accounts:    &AccountCounts{Total: a.Total, Verified: a.Verified, NewLast24h: a.NewLast24h, Disabled: a.Disabled},
		Devices:     devs,
		Broadcasts:  &BroadcastCounts{Running: b.Running, Queued: b.Queued, Scheduled: b.Scheduled, MessengerRunning: b.MessengerRunning},
		Bot:         botStatus(o.Bot),
		Webhooks:    &WebhookCounts{Total: w.Total, Failing: w.Failing, Disabled: w.Disabled},
		RateLimiter: &RateLimiterState{Backend: rl.Backend, Degraded: rl.Degraded, Reason: nonEmpty(rl.Reason)},
	}
}
