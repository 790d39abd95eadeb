package graph

import (
	"context"
	"github.com/herald-vpn/herald/internal/securitylog"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/services"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Resolver holds the services the GraphQL door opens onto. It does no work
// of its own: every rule lives in the services.
type Resolver struct {
	services.Services
	Version string
}

// caller is the authenticated account of the request, as its owner sees
// it (accounts.Service.Profile).
func (r *Resolver) caller(ctx context.Context) (accounts.Account, error) {
	return r.Accounts.Profile(ctx, auth.Caller(ctx).AccountID)
}

func (r *Resolver) user(a accounts.Account) *view.User {
	return ptr(view.NewUser(a, r.Accounts.Now()))
}

func (r *Resolver) userRecord(rec accounts.Record) *view.UserRecord {
	return ptr(view.NewUserRecord(rec, r.Accounts.Now()))
}

func (r *Resolver) apiKey(k apikeys.Key) view.APIKey {
	return view.NewAPIKey(k, r.APIKeys.RateLimitOf(k))
}

func webhookEndpoint(e webhooks.Endpoint) view.WebhookEndpoint {
	return view.NewWebhookEndpoint(e, time.Now())
}

// ptr is a pointer to v: gqlgen takes the objects a resolver answers as
// pointers.
func ptr[T any](v T) *T { return &v }

// ptrOrNil is a shared door operation's answer as a resolver returns it:
// nil with the error, else a pointer to the value.
func ptrOrNil[T any](v T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return &v, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func pageInfo(end string, more bool) *view.PageInfo {
	return ptr(view.NewPageInfo(end, more))
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

// securityLog is a page of an account's security log.
func (r *queryResolver) securityLog(ctx context.Context, accountID string, operators bool, first *int, after *string) (*SecurityEventConnection, error) {
	if first != nil && *first < 1 {
		return nil, apperr.Invalid("first", "between 1 and 100", strconv.Itoa(*first))
	}
	read := r.Accounts.SecurityEvents
	if operators { // the operators' log (operatorSecurityLog)
		read = func(ctx context.Context, _ string, first int, after string) ([]securitylog.Event, bool, error) {
			return r.Accounts.OperatorSecurityEvents(ctx, first, after)
		}
	}
	page, more, err := read(ctx, accountID, deref(first), deref(after))
	if err != nil {
		return nil, err
	}
	end := ""
	if len(page) > 0 {
		end = page[len(page)-1].ID
	}
	p := view.NewPage(page, view.NewSecurityEvent, end, more)
	return &SecurityEventConnection{Nodes: p.Nodes, PageInfo: &p.PageInfo}, nil
}
