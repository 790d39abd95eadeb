package securitylog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// Store keeps the log (sqlstore.DB). RecordSecurityEvent joins the
// transaction ctx carries, when it carries one.
type Store interface {
	storage.Transactor
	RecordSecurityEvent(ctx context.Context, e Event) error
	SecurityEvents(ctx context.Context, accountID, beforeID string, limit int) ([]Event, error)
	SignInHistory(ctx context.Context, accountID, key string) (before, seen bool, err error)
	PruneSecurityLog(ctx context.Context, retention time.Duration) (int64, error)
	Emit(ctx context.Context, p webhooks.Payload) error
	EnqueueJob(ctx context.Context, args river.JobArgs) error
}

// Log records security events: the entry, its security.<kind> webhook
// and, for a sign-in from a device the account has not signed in from
// before, a new_device_sign_in entry and the alert job. A nil *Log
// records nothing (a service built without one, in a unit test).
type Log struct {
	store Store
}

// New returns the log kept in store.
func New(store Store) *Log { return &Log{store: store} }

// clientKey carries the client a door saw, for the entries recorded
// while serving its request.
type clientKey struct{}

type client struct{ ip, userAgent string }

// WithClient returns ctx carrying the request's client address and user
// agent (the server's middleware sets them on every request).
func WithClient(ctx context.Context, ip, userAgent string) context.Context {
	return context.WithValue(ctx, clientKey{}, client{ip, userAgent})
}

// ClientOf is the client WithClient put in ctx ("" for none).
func ClientOf(ctx context.Context) (ip, userAgent string) {
	c, _ := ctx.Value(clientKey{}).(client)
	return c.ip, c.userAgent
}

// Record writes e to its account's log, in the transaction ctx carries
// when there is one (the entry commits or rolls back with the change it
// records), with the IP and user agent of ctx's client where e names
// none, and emits its webhook. A successful login (LoginOK) from a
// device key the account has not signed in from before, when it has
// signed in before, also records NewDeviceSignIn and enqueues the alert;
// detail["sessionId"] names the session the alert offers to end.
func (l *Log) Record(ctx context.Context, e Event) error {
	if l == nil {
		return nil
	}
	if e.AccountID == "" && !slices.Contains(OperatorKinds, e.Kind) {
		return fmt.Errorf("securitylog: an event of no account")
	}
	if e.Actor == "" {
		e.Actor = ActorUser
	}
	if ip, ua := ClientOf(ctx); e.IP == "" && e.UserAgent == "" {
		e.IP, e.UserAgent = ip, ua
	}
	if e.At.IsZero() {
		e.At = l.store.TxTime(ctx)
	}
	if err := e.Normalize(); err != nil {
		return err
	}
	return l.store.InTx(ctx, func(ctx context.Context) error {
		var alert bool
		if e.Kind == LoginOK && e.Outcome == OK {
			before, seen, err := l.store.SignInHistory(ctx, e.AccountID, DeviceKey(e.UserAgent, e.IP))
			if err != nil {
				return err
			}
			alert = AlertsFor(before, seen)
		}
		if err := l.write(ctx, &e); err != nil {
			return err
		}
		if !alert {
			return nil
		}
		nd := Event{
			AccountID: e.AccountID, Kind: NewDeviceSignIn, Outcome: OK, Actor: ActorSystem,
			IP: e.IP, UserAgent: e.UserAgent, At: e.At, Detail: map[string]string{},
		}
		if sid := e.Detail["sessionId"]; sid != "" {
			nd.Detail["sessionId"] = sid
		}
		if m := e.Detail["method"]; m != "" {
			nd.Detail["method"] = m
		}
		if err := l.write(ctx, &nd); err != nil {
			return err
		}
		return l.store.EnqueueJob(ctx, NewDeviceAlertArgs{
			AccountID: e.AccountID, EventID: nd.ID, SessionID: nd.Detail["sessionId"],
			IP: nd.IP, UserAgent: nd.UserAgent, At: nd.At,
		})
	})
}

func (l *Log) write(ctx context.Context, e *Event) error {
	if e.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return err
		}
		e.ID = id.String()
	}
	if err := l.store.RecordSecurityEvent(ctx, *e); err != nil {
		return err
	}
	if e.Kind == MFAReset {
		return nil // mfa.Reset is its webhook, with the factors it removed
	}
	return l.store.Emit(ctx, PayloadOf(*e))
}

// Paging of the log: DefaultPage entries unless asked, at most MaxPage.
const (
	DefaultPage = 20
	MaxPage     = 100
)

// ErrBadPage is a page asked for with first out of 1..MaxPage.
var ErrBadPage = errors.New("securitylog: first out of range")

// ErrBadCursor is an after that is no entry's id.
var ErrBadCursor = errors.New("securitylog: malformed cursor")

// Events reads a page of an account's log, newest first: first entries
// (0: DefaultPage) older than the entry whose id is after ("" for the
// newest), and whether more follow.
func (l *Log) Events(ctx context.Context, accountID string, first int, after string) (page []Event, more bool, err error) {
	if l == nil || accountID == "" { // "" is no account's: the operators' log is OperatorEvents
		return nil, false, nil
	}
	return l.events(ctx, accountID, first, after)
}

// OperatorEvents reads a page of the operators' log (the entries of no
// account: API keys made or revoked at the command line), as Events.
func (l *Log) OperatorEvents(ctx context.Context, first int, after string) (page []Event, more bool, err error) {
	if l == nil {
		return nil, false, nil
	}
	return l.events(ctx, "", first, after)
}

func (l *Log) events(ctx context.Context, accountID string, first int, after string) (page []Event, more bool, err error) {
	if first == 0 {
		first = DefaultPage
	}
	if first < 1 || first > MaxPage {
		return nil, false, ErrBadPage
	}
	if after != "" {
		if _, err := uuid.Parse(after); err != nil {
			return nil, false, ErrBadCursor
		}
	}
	evs, err := l.store.SecurityEvents(ctx, accountID, after, first+1)
	if err != nil {
		return nil, false, err
	}
	if len(evs) > first {
		return evs[:first], true, nil
	}
	return evs, false, nil
}

// Prune deletes the entries older than retention (the housekeeping job's
// call); it reports how many went.
func (l *Log) Prune(ctx context.Context, retention time.Duration) (int64, error) {
	return l.store.PruneSecurityLog(ctx, retention)
}

// Payload is the data of a security.<kind> webhook: the entry, without
// the time (the event's timestamp is it).
type Payload struct {
	Actor     string            `json:"actor"`
	Detail    map[string]string `json:"detail"`
	EventID   string            `json:"eventId"`
	IP        string            `json:"ip"`
	Kind      Kind              `json:"-"`
	Outcome   Outcome           `json:"outcome"`
	UserAgent string            `json:"userAgent"`
	UserID    *string           `json:"userId"` // null for the operators' log
}

// EventType is security.<kind>.
func (p Payload) EventType() string { return WebhookType(p.Kind) }

// PayloadOf is e's webhook data.
func PayloadOf(e Event) Payload {
	d := e.Detail
	if d == nil {
		d = map[string]string{}
	}
	p := Payload{Actor: e.Actor, Detail: d, EventID: e.ID, IP: e.IP, Kind: e.Kind, Outcome: e.Outcome, UserAgent: e.UserAgent}
	if e.AccountID != "" {
		p.UserID = &e.AccountID
	}
	return p
}

// NewDeviceAlertArgs is the job that tells an account's owner, by email,
// push and Telegram, of a sign-in from a new device, with an action that
// ends that session.
type NewDeviceAlertArgs struct {
	AccountID string    `json:"account_id"`
	EventID   string    `json:"event_id"`
	SessionID string    `json:"session_id"`
	IP        string    `json:"ip"`
	UserAgent string    `json:"user_agent"`
	At        time.Time `json:"at"`
}

func (NewDeviceAlertArgs) Kind() string { return "security_new_device_alert" }
