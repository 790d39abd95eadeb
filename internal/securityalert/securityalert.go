// Package securityalert works securitylog.NewDeviceAlertArgs: it tells an
// account's owner of a sign-in from a device the account had not signed
// in from, by email, by push to the account's devices and by Telegram to
// the linked chat. Each says when, from which IP and which device (user
// agent), and offers the link that ends that session
// (sessions.Service.EndLinkToken; GET /api/v1/auth/sessions/end).
//
// # Channels
//
// Each channel is best effort and independent of the others, as the
// subscription notices' (billing/notices) are. A channel that is not
// configured or has nothing to send to is skipped: no email address, no
// device with a valid push token, no linked chat (or no bot). A channel
// that cannot succeed however often it is tried (a mail server's 5xx, a
// blocked bot, every push token dead) is skipped too, and logged. A
// disabled account is told nothing; a deleted one cancels the job.
//
// # Retries without repeats
//
// A transient failure of a channel makes Work return an error, so River
// retries the job; the channels that already succeeded are not sent
// again: each runs under idempotency.Do with a key made of the job's id
// and the channel's name. The windows that remain are idempotency's: a
// process killed after the mail server took the email and before the
// answer was stored sends it once more when the claim lapses, and a retry
// more than idempotency.Window after a channel's success may repeat it.
package securityalert

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/riverqueue/river"
)

// Accounts reads an account (the sqlstore implements it).
type Accounts interface {
	AccountByID(ctx context.Context, id string) (accounts.Account, error)
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

// Deps are the services the worker sends through. Push, Mail (with
// Templates) and Chats may each be nil: that channel is then skipped.
// EndURL is the link that ends a session ("" or nil: the alerts carry
// none). Idempotency nil sends without remembering (tests only).
type Deps struct {
	Accounts    Accounts
	Push        Pusher
	Templates   Renderer
	Mail        Mailer
	Chats       Chats
	EndURL      func(accountID, sessionID string) string
	Idempotency *idempotency.Service
	Log         *slog.Logger
}

// Config is what the worker says.
type Config struct {
	// Product is the product's name in push and Telegram texts
	// (HERALD_PRODUCT_NAME); mail.DefaultProduct when empty.
	Product string
	// SendTimeout bounds each channel's send; 30 seconds when zero.
	SendTimeout time.Duration
}

// Worker works securitylog.NewDeviceAlertArgs jobs.
type Worker struct {
	river.WorkerDefaults[securitylog.NewDeviceAlertArgs]
	deps Deps
	cfg  Config
}

// New returns the worker; an error when a required dependency is missing.
func New(deps Deps, cfg Config) (*Worker, error) {
	if deps.Accounts == nil {
		return nil, errors.New("securityalert: Accounts is required")
	}
	if (deps.Mail == nil) != (deps.Templates == nil) {
		return nil, errors.New("securityalert: Mail and Templates go together")
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
func (w *Worker) Timeout(*river.Job[securitylog.NewDeviceAlertArgs]) time.Duration {
	return 3*w.cfg.SendTimeout + 10*time.Second
}

// Channels of an alert, as the idempotency keys and the logs name them.
const (
	ChannelEmail    = "email"
	ChannelPush     = "push"
	ChannelTelegram = "telegram"
)

// Outcomes of a channel, stored as its idempotent answer.
const (
	outcomeSent    = "sent"
	outcomeSkipped = "skipped"
)

// alert is one alert as every channel says it.
type alert struct {
	args    securitylog.NewDeviceAlertArgs
	account accounts.Account
	endURL  string // "" when there is none
}

// Work sends the alert on each channel; an error, so that River retries,
// when a channel failed in a way a retry may mend. The channels that
// succeeded are not sent again (see the package comment).
func (w *Worker) Work(ctx context.Context, job *river.Job[securitylog.NewDeviceAlertArgs]) error {
	args := job.Args
	acct, err := w.deps.Accounts.AccountByID(ctx, args.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("securityalert: account %s no longer exists", args.AccountID))
	}
	if err != nil {
		return err
	}
	if acct.Disabled() {
		w.deps.Log.InfoContext(ctx, "new-device alert not sent: the account is disabled", "account_id", acct.ID)
		return nil
	}
	a := alert{args: args, account: acct}
	if w.deps.EndURL != nil && args.SessionID != "" {
		a.endURL = w.deps.EndURL(acct.ID, args.SessionID)
	}
	var errs []error
	for _, ch := range []struct {
		name string
		send func(context.Context, alert) (string, error)
	}{
		{ChannelEmail, w.email},
		{ChannelPush, w.push},
		{ChannelTelegram, w.telegram},
	} {
		key := idempotency.Key{Service: w.deps.Idempotency, Field: "job", Value: fmt.Sprintf("%s:%d:%s", args.Kind(), job.ID, ch.name)}
		outcome, err := idempotency.Do(ctx, key, "newDeviceAlert", []any{ch.name, args}, func(ctx context.Context) (string, error) {
			return ch.send(ctx, a)
		})
		if err != nil {
			w.deps.Log.WarnContext(ctx, "new-device alert: channel failed; the job retries it", "account_id", acct.ID, "channel", ch.name, "attempt", job.Attempt, "err", err)
			errs = append(errs, fmt.Errorf("%s: %w", ch.name, err))
			continue
		}
		w.deps.Log.DebugContext(ctx, "new-device alert", "account_id", acct.ID, "channel", ch.name, "outcome", outcome)
	}
	return errors.Join(errs...)
}

// words are the alert's title and body, for push and Telegram.
func (w *Worker) words(a alert) (title, body string) {
	return texts.NewDevice(a.account.Locale, texts.NewDeviceVars{Product: w.cfg.Product, At: a.args.At, IP: a.args.IP, UserAgent: a.args.UserAgent})
}

// email sends the new_device email to the account's address.
func (w *Worker) email(ctx context.Context, a alert) (string, error) {
	if w.deps.Mail == nil || a.account.Email == "" {
		return outcomeSkipped, nil
	}
	msg, err := w.deps.Templates.Render(mail.EmailNewDevice, a.account.Locale, a.account.Email,
		mail.Vars{Date: a.args.At, IP: a.args.IP, UserAgent: a.args.UserAgent, EndURL: a.endURL})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.SendTimeout)
	defer cancel()
	if err := w.deps.Mail.Send(ctx, msg); err != nil {
		if mail.IsPermanent(err) {
			w.deps.Log.WarnContext(ctx, "new-device alert email refused", "account_id", a.account.ID, "err", err)
			return outcomeSkipped, nil
		}
		return "", err
	}
	return outcomeSent, nil
}

// push sends the alert to the account's devices, with the data an app
// shows it by: the session and the link that ends it.
func (w *Worker) push(ctx context.Context, a alert) (string, error) {
	if w.deps.Push == nil {
		return outcomeSkipped, nil
	}
	title, body := w.words(a)
	data := map[string]any{"type": "security", "event": string(securitylog.NewDeviceSignIn), "eventId": a.args.EventID, "ip": a.args.IP}
	if a.args.SessionID != "" {
		data["sessionId"] = a.args.SessionID
	}
	if a.endURL != "" {
		data["endSessionUrl"] = a.endURL
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.SendTimeout)
	defer cancel()
	res, err := w.deps.Push.SendToUser(ctx, a.account.ID, notifications.Notification{Subject: title, Content: body, Data: data}, []string{notifications.ChannelPush})
	if apperr.Is(err, apperr.UserNotFound) {
		return outcomeSkipped, nil
	}
	if apperr.Is(err, apperr.InvalidInput) {
		// Too large a push (a very long public URL): no retry mends it.
		w.deps.Log.WarnContext(ctx, "new-device alert push refused", "account_id", a.account.ID, "err", err)
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

// telegram sends the alert, with the end-session link, to the linked chat.
func (w *Worker) telegram(ctx context.Context, a alert) (string, error) {
	if w.deps.Chats == nil {
		return outcomeSkipped, nil
	}
	title, body := w.words(a)
	// The chat's text is Markdown: the client's words (its user agent)
	// are escaped, the link is bare (left as it is).
	text := "**" + escapeMarkdown(title) + "**\n\n" + escapeMarkdown(body)
	if a.endURL != "" {
		text += "\n\n" + a.endURL
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.SendTimeout)
	defer cancel()
	_, found, err := w.deps.Chats.SendToLinkedChat(ctx, a.account.ID, text)
	switch {
	case err == nil && !found:
		return outcomeSkipped, nil
	case err == nil:
		return outcomeSent, nil
	case apperr.Is(err, apperr.ChatBlocked), apperr.Is(err, apperr.ChatNotFound), apperr.Is(err, apperr.InvalidMessage), apperr.Is(err, apperr.MessengerNotConnected):
		// A retry cannot mend these: the user blocked the bot, the chat
		// is gone, or there is no bot.
		w.deps.Log.InfoContext(ctx, "new-device alert not sent to Telegram", "account_id", a.account.ID, "err", err)
		return outcomeSkipped, nil
	}
	return "", err
}

// escapeMarkdown makes s literal under telegram.FormatMarkdown: every
// Markdown marker is backslash-escaped.
func escapeMarkdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_~[]()", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
