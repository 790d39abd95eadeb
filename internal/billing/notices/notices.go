// Package notices works subscriptions.NoticeArgs: it tells an account's
// owner that a renewal's payment failed, that the subscription expired or
// was refunded, or that the trial ends soon, by push to the account's
// devices, by email and by Telegram to the linked chat.
//
// # Channels
//
// Each channel is best effort and independent of the others. A channel
// with nothing to send to is skipped: no device with a valid push token,
// no linked chat (or no bot), no email address. Billing notices go to the
// account's address whether or not it was verified: the owner gave it,
// and a payment problem is worth telling even before the code was typed
// in. A channel that cannot succeed however often it is tried (a dead
// token, a blocked bot, a mail server's 5xx) is skipped too, and logged.
// A disabled account is told nothing.
//
// # Retries without repeats
//
// A transient failure of a channel makes Work return an error, so River
// retries the job; the channels that already succeeded are not sent
// again. Each channel runs under idempotency.Do with a key made of the
// job's id and the channel's name: the first success (or skip) is stored
// and a retry answers it without sending. A failure releases the key, so
// the retry sends that channel. Two windows remain, as for every send
// Herald makes: a process killed after the provider accepted a message
// and before the answer was stored sends it again once the claim lapses
// (idempotency.Service.ClaimTTL), and a retry more than idempotency.Window
// (24 hours) after a channel's success may send that channel again. A
// push that reached some devices but not others counts as sent: resending
// would repeat it on the devices that got it.
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
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/riverqueue/river"
)

// Accounts reads an account (the sqlstore implements it).
type Accounts interface {
	AccountByID(ctx context.Context, id string) (accounts.Account, error)
}

// Entitlements reads an entitlement (the sqlstore implements it).
type Entitlements interface {
	EntitlementByID(ctx context.Context, id string) (subscriptions.Entitlement, error)
}

// Pusher pushes to a user's devices (*notifications.Service).
type Pusher interface {
	SendToUser(ctx context.Context, userID string, n notifications.Notification, channels []string) (notifications.UserSendResult, error)
}

// Renderer composes an email (*mail.Templates).
type Renderer interface {
	Render(email, locale, to string, v mail.Vars) (mail.Message, error)
}

// Mailer sends one email (mail.Sender).
type Mailer interface {
	Send(ctx context.Context, m mail.Message) error
}

// Chats sends to a user's linked Telegram chat (*messenger.Service).
type Chats interface {
	SendToLinkedChat(ctx context.Context, userID, text string) (chatID string, found bool, err error)
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

// Deps are the services the worker sends through. Push, Mail (with
// Templates) and Chats may each be nil: that channel is then skipped.
// Idempotency nil sends without remembering (tests only: a retry would
// repeat the channels that succeeded).
type Deps struct {
	Accounts     Accounts
	Entitlements Entitlements
	Push         Pusher
	Templates    Renderer
	Mail         Mailer
	Chats        Chats
	Idempotency  *idempotency.Service
	Log          *slog.Logger
}

// Worker works subscriptions.NoticeArgs jobs.
type Worker struct {
	river.WorkerDefaults[subscriptions.NoticeArgs]
	deps Deps
	cfg  Config
}

// New returns the worker; an error when a required dependency or the
// default renew link is missing.
func New(deps Deps, cfg Config) (*Worker, error) {
	if deps.Accounts == nil || deps.Entitlements == nil {
		return nil, errors.New("notices: Accounts and Entitlements are required")
	}
	if (deps.Mail == nil) != (deps.Templates == nil) {
		return nil, errors.New("notices: Mail and Templates go together")
	}
	if cfg.RenewURL == nil {
		return nil, errors.New("notices: RenewURL is required")
	}
	if cfg.Product == "" {
		cfg.Product = mail.DefaultProduct
	}
	if cfg.SendTimeout <= 0 {
		cfg.SendTimeout = 30 * time.Second
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	return &Worker{deps: deps, cfg: cfg}, nil
}

// Timeout bounds one attempt: the three channels, one after another.
func (w *Worker) Timeout(*river.Job[subscriptions.NoticeArgs]) time.Duration {
	return 3*w.cfg.SendTimeout + 10*time.Second
}

// Channels of a notice, as the idempotency keys and the logs name them.
const (
	ChannelPush     = "push"
	ChannelEmail    = "email"
	ChannelTelegram = "telegram"
)

// Outcomes of a channel, stored as its idempotent answer.
const (
	outcomeSent    = "sent"
	outcomeSkipped = "skipped"
)

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

// notice is one notice as every channel says it.
type notice struct {
	job      int64
	args     subscriptions.NoticeArgs
	account  accounts.Account
	source   subscriptions.Source // "" when the entitlement is gone
	date     time.Time            // when access ends or ended; zero if unknown
	renewURL string
}

// Work sends the notice on each channel. It returns an error, so that
// River retries, when a channel failed in a way a retry may mend; the
// channels that succeeded are not sent again (see the package comment).
func (w *Worker) Work(ctx context.Context, job *river.Job[subscriptions.NoticeArgs]) error {
	args := job.Args
	if emailOf(args.Event) == "" {
		return river.JobCancel(fmt.Errorf("notices: no notice for the event %q", args.Event))
	}
	acct, err := w.deps.Accounts.AccountByID(ctx, args.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("notices: account %s no longer exists", args.AccountID))
	}
	if err != nil {
		return err
	}
	if acct.Disabled() {
		w.deps.Log.InfoContext(ctx, "subscription notice not sent: the account is disabled", "account_id", acct.ID, "event", args.Event)
		return nil
	}
	n := notice{job: job.ID, args: args, account: acct}
	ent, err := w.deps.Entitlements.EntitlementByID(ctx, args.EntitlementID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		// Told all the same, with the default link.
	case err != nil:
		return err
	default:
		if stale(args.Event, ent.State) {
			w.deps.Log.InfoContext(ctx, "subscription notice dropped: no longer true", "account_id", acct.ID, "event", args.Event, "state", string(ent.State))
			return nil
		}
		n.source, n.date = ent.Source, dateOf(args.Event, ent)
	}
	n.renewURL = w.cfg.RenewURL(n.source)

	var errs []error
	for _, ch := range []struct {
		name string
		send func(context.Context, notice) (string, error)
	}{
		{ChannelPush, w.push},
		{ChannelEmail, w.email},
		{ChannelTelegram, w.telegram},
	} {
		key := idempotency.Key{Service: w.deps.Idempotency, Field: "job", Value: fmt.Sprintf("subscription_notice:%d:%s", job.ID, ch.name)}
		outcome, err := idempotency.Do(ctx, key, "subscriptionNotice", []any{ch.name, args}, func(ctx context.Context) (string, error) {
			return ch.send(ctx, n)
		})
		if err != nil {
			w.deps.Log.WarnContext(ctx, "subscription notice: channel failed; the job retries it", "account_id", acct.ID, "event", args.Event, "channel", ch.name, "attempt", job.Attempt, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", ch.name, err))
			continue
		}
		w.deps.Log.DebugContext(ctx, "subscription notice", "account_id", acct.ID, "event", args.Event, "channel", ch.name, "outcome", outcome)
	}
	return errors.Join(errs...)
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

// words are the notice's title and body, for push and Telegram.
func (w *Worker) words(n notice) (title, body string) {
	title, body, _ = texts.Notice(n.args.Event, n.account.Locale, texts.NoticeVars{Product: w.cfg.Product, Plan: n.args.Plan, Date: n.date})
	return title, body
}

// push sends the notice to the account's devices, with the data apps
// open their subscription screen on.
func (w *Worker) push(ctx context.Context, n notice) (string, error) {
	if w.deps.Push == nil {
		return outcomeSkipped, nil
	}
	title, body := w.words(n)
	data := map[string]any{"type": "subscription", "event": n.args.Event, "plan": n.args.Plan, "renewUrl": n.renewURL}
	if code := codeOf(n.args.Event); code != "" {
		data["code"] = code
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.SendTimeout)
	defer cancel()
	res, err := w.deps.Push.SendToUser(ctx, n.account.ID, notifications.Notification{Subject: title, Content: body, Data: data}, []string{notifications.ChannelPush})
	if apperr.Is(err, apperr.UserNotFound) {
		return outcomeSkipped, nil
	}
	if err != nil {
		return "", err
	}
	switch res.Status {
	case notifications.UserSent, notifications.UserPartial:
		return outcomeSent, nil
	case notifications.UserFailed:
		for _, o := range res.Outcomes {
			if o.Status == notifications.OutcomeFailed {
				return "", fmt.Errorf("no device took the push: %s", res.Message)
			}
		}
		return outcomeSkipped, nil // every token is dead
	}
	return outcomeSkipped, nil // no device
}

// email sends the notice's email to the account's address.
func (w *Worker) email(ctx context.Context, n notice) (string, error) {
	if w.deps.Mail == nil || n.account.Email == "" {
		return outcomeSkipped, nil
	}
	msg, err := w.deps.Templates.Render(emailOf(n.args.Event), n.account.Locale, n.account.Email, mail.Vars{Plan: n.args.Plan, RenewURL: n.renewURL, Date: n.date})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.SendTimeout)
	defer cancel()
	if err := w.deps.Mail.Send(ctx, msg); err != nil {
		if mail.IsPermanent(err) {
			w.deps.Log.WarnContext(ctx, "subscription notice email refused", "account_id", n.account.ID, "err", err)
			return outcomeSkipped, nil
		}
		return "", err
	}
	return outcomeSent, nil
}

// telegram sends the notice, with the renew link, to the linked chat.
func (w *Worker) telegram(ctx context.Context, n notice) (string, error) {
	if w.deps.Chats == nil {
		return outcomeSkipped, nil
	}
	title, body := w.words(n)
	text := title + "\n\n" + body + "\n\n" + n.renewURL
	ctx, cancel := context.WithTimeout(ctx, w.cfg.SendTimeout)
	defer cancel()
	_, found, err := w.deps.Chats.SendToLinkedChat(ctx, n.account.ID, text)
	switch {
	case err == nil && !found:
		return outcomeSkipped, nil
	case err == nil:
		return outcomeSent, nil
	case apperr.Is(err, apperr.ChatBlocked), apperr.Is(err, apperr.ChatNotFound), apperr.Is(err, apperr.InvalidMessage), apperr.Is(err, apperr.MessengerNotConnected):
		// A retry cannot mend these: the user blocked the bot, the
		// chat is gone, or there is no bot.
		w.deps.Log.InfoContext(ctx, "subscription notice not sent to Telegram", "account_id", n.account.ID, "err", err)
		return outcomeSkipped, nil
	}
	return "", err
}
