package graph

import (
	"context"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sessions"
)

// Resolver holds the services the GraphQL door opens onto. It does no work
// of its own: every rule lives in the services.
type Resolver struct {
	Accounts      *accounts.Service
	Sessions      *sessions.Service
	Messenger     *messenger.Service
	Devices       *devices.Service
	Notifications *notifications.Service
	Version       string
}

// authDirective enforces @auth(scope:) before the field's resolver runs.
func (r *Resolver) authDirective(ctx context.Context, _ any, next graphql.Resolver, scope *string) (any, error) {
	s := ""
	if scope != nil {
		s = *scope
	}
	ctx, err := r.Sessions.Require(ctx, s)
	if err != nil {
		return nil, err
	}
	return next(ctx)
}

// caller is the authenticated account of the request.
func (r *Resolver) caller(ctx context.Context) (accounts.Account, error) {
	id, _ := sessions.FromContext(ctx)
	return r.Accounts.ByID(ctx, id.AccountID)
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
	return notifications.Notification{Subject: n.Subject, Content: n.Content, Data: n.Data}
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
		Error:           nonEmpty(j.Error),
	}
}
