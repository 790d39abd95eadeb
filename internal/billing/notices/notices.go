// Package notices works subscriptions.NoticeArgs: it tells an account's
// owner that a renewal's payment failed, that the subscription expired or
// was refunded, or that the trial ends soon, by push to the account's
// devices, by email and by Telegram to the linked chat.
//
// The channels, their skips and their retries without repeats are
// package ownernotice's. Billing notices go to the account's address
// whether or not it was verified: the owner gave it, and a payment
// problem is worth telling even before the code was typed in.
//
// # Stale notices
//
// A notice that no longer holds when its job runs is dropped: a failed
// payment whose entitlement is active again (recovered), an expiry or a
// refund of an entitlement that is live again, a trial that is no longer
// a trial.
package notices

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/ownernotice"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/riverqueue/river"
)

// The services the worker reads and sends through (ownernotice's).
type (
	Accounts = ownernotice.Accounts
	Pusher   = ownernotice.Pusher
	Renderer = ownernotice.Renderer
	Mailer   = ownernotice.Mailer
	Chats    = ownernotice.Chats
)

// Entitlements reads an entitlement (the sqlstore implements it).
type Entitlements interface {
	EntitlementByID(ctx context.Context, id string) (subscriptions.Entitlement, error)
}

// Config is what the worker says and where it links.
type Config struct {
	// Product is the product's name in push and Telegram texts
	// (HERALD_PRODUCT_NAME); mail.DefaultProduct when empty. The emails
	// take theirs from their templates' brand.
	Product string
	// RenewURL is where the owner of a purchase from source renews it or
	// fixes the payment (subscriptions.Service.RenewURL). Required.
	RenewURL func(source subscriptions.Source) string
	// SendTimeout bounds each channel's send; 30 seconds when zero.
	SendTimeout time.Duration
}

// Deps are the services the notices go through, and the entitlements
// they are about.
type Deps struct {
	ownernotice.Deps
	Entitlements Entitlements
}

// Worker works subscriptions.NoticeArgs jobs.
type Worker struct {
	river.WorkerDefaults[subscriptions.NoticeArgs]
	send         *ownernotice.Sender
	entitlements Entitlements
	cfg          Config
}

// New returns the worker; an error when a required dependency or the
// default renew link is missing.
func New(deps Deps, cfg Config) (*Worker, error) {
	if deps.Accounts == nil || deps.Entitlements == nil {
		return nil, errors.New("notices: Accounts and Entitlements are required")
	}
	if cfg.RenewURL == nil {
		return nil, errors.New("notices: RenewURL is required")
	}
	if cfg.Product == "" {
		cfg.Product = mail.DefaultProduct
	}
	send, err := ownernotice.NewSender(deps.Deps, "subscription notice", cfg.SendTimeout)
	if err != nil {
		return nil, err
	}
	return &Worker{send: send, entitlements: deps.Entitlements, cfg: cfg}, nil
}

// Timeout bounds one attempt: the three channels, one after another.
func (w *Worker) Timeout(*river.Job[subscriptions.NoticeArgs]) time.Duration {
	return w.send.JobTimeout()
}

// emailOf is each notice's email; "" for an event that has none.
func emailOf(event string) string {
	switch event {
	case subscriptions.EventPaymentFailed:
		return mail.EmailPaymentFailed
	case subscriptions.EventExpired:
		return mail.EmailExpired
	case subscriptions.EventRefunded:
		return mail.EmailRefunded
	case subscriptions.NoticeTrialEnding:
		return mail.EmailTrialEnding
	}
	return ""
}

// codeOf is the error code apps show the matching screen for; a trial
// ending has none.
func codeOf(event string) string {
	switch event {
	case subscriptions.EventPaymentFailed:
		return string(apperr.PaymentFailed)
	case subscriptions.EventExpired, subscriptions.EventRefunded:
		return string(apperr.SubscriptionExpired)
	}
	return ""
}

// Work sends the notice on each channel (ownernotice.Sender.Send): an
// error, so that River retries, when a channel failed in a way a retry
// may mend.
func (w *Worker) Work(ctx context.Context, job *river.Job[subscriptions.NoticeArgs]) error {
	args := job.Args
	if emailOf(args.Event) == "" {
		return river.JobCancel(fmt.Errorf("notices: no notice for the event %q", args.Event))
	}
	acct, ok, err := w.send.Recipient(ctx, args.AccountID)
	if !ok {
		return err
	}
	var source subscriptions.Source // "" when the entitlement is gone
	var date time.Time              // when access ends or ended; zero if unknown
	ent, err := w.entitlements.EntitlementByID(ctx, args.EntitlementID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// Told all the same, with the default link.
	case err != nil:
		return err
	default:
		if stale(args.Event, ent.State) {
			w.send.Log().InfoContext(ctx, "subscription notice dropped: no longer true", "account_id", acct.ID, "event", args.Event, "state", string(ent.State))
			return nil
		}
		source, date = ent.Source, dateOf(args.Event, ent)
	}
	renewURL := w.cfg.RenewURL(source)
	title, body, _ := texts.Notice(args.Event, acct.Locale, texts.NoticeVars{Product: w.cfg.Product, Plan: args.Plan, Date: date})
	data := map[string]any{"type": "subscription", "event": args.Event, "plan": args.Plan, "renewUrl": renewURL}
	if code := codeOf(args.Event); code != "" {
		data["code"] = code
	}
	return w.send.Send(ctx, ownernotice.Job{
		KeyPrefix: "subscription_notice", ID: job.ID, Attempt: job.Attempt, Operation: "subscriptionNotice", Request: args,
		LogAttrs: []any{"event", args.Event},
	}, ownernotice.Notice{
		Account: acct, Category: preferences.CategoryBilling, Title: title, Body: body, PushData: data,
		Email: emailOf(args.Event), EmailVars: mail.Vars{Plan: args.Plan, RenewURL: renewURL, Date: date},
		Telegram: title + "\n\n" + body + "\n\n" + renewURL,
	})
}

// stale reports whether the entitlement's state now belies the notice.
func stale(event string, s subscriptions.State) bool {
	switch event {
	case subscriptions.EventPaymentFailed:
		return s == subscriptions.StateActive || s == subscriptions.StateTrial
	case subscriptions.EventExpired, subscriptions.EventRefunded:
		return s == subscriptions.StateActive || s == subscriptions.StateTrial || s == subscriptions.StateGrace
	case subscriptions.NoticeTrialEnding:
		return s != subscriptions.StateTrial
	}
	return false
}

// dateOf is the date a notice names: when access ends (a failed payment's
// grace, a trial) or ended (an expiry); none for a refund.
func dateOf(event string, e subscriptions.Entitlement) time.Time {
	switch event {
	case subscriptions.EventPaymentFailed:
		if e.GraceEndsAt != nil {
			return *e.GraceEndsAt
		}
		return time.Time{}
	case subscriptions.EventExpired, subscriptions.NoticeTrialEnding:
		return e.ExpiresAt
	}
	return time.Time{}
}
