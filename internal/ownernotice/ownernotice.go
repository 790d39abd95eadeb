// Package ownernotice tells an account's owner something on every
// channel Herald has: a push to the account's devices, an email, and a
// message to the linked Telegram chat. The subscription notices
// (billing/notices) and the new-device alerts (securityalert) are its
// River workers: each says what to tell, this package sends it.
//
// # Channels
//
// Each channel is best effort and independent of the others. A channel
// with nothing to send to is skipped: no device with a valid push token,
// no linked chat (or no bot), no email address. A channel that cannot
// succeed however often it is tried (a dead token, a push the provider
// path refuses as invalid, a blocked bot, a mail server's 5xx) is skipped
// too, and logged. A disabled account is told nothing; a deleted one
// cancels the job.
//
// # Retries without repeats
//
// A transient failure of a channel makes Send return an error, so River
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
package ownernotice

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
	"github.com/riverqueue/river"
)

// Accounts reads an account (the sqlstore implements it).
type Accounts interface {
	AccountByID(ctx context.Context, id string) (accounts.Account, error)
}

// Pusher pushes to a user's devices (*notifications.Service).
type Pusher interface {
	SendToUser(ctx context.Context, userID string, n notifications.Notification, opts notifications.UserSendOptions) (notifications.UserSendResult, error)
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

// Deps are the services the notices go through. Accounts is required;
// Push, Mail (with Templates) and Chats may each be nil: that channel is
// then skipped. Idempotency nil sends without remembering (tests only: a
// retry would repeat the channels that succeeded).
type Deps struct {
	Accounts    Accounts
	Push        Pusher
	Templates   Renderer
	Mail        Mailer
	Chats       Chats
	Idempotency *idempotency.Service
	Log         *slog.Logger
}

// Sender sends notices of one kind (What names it in the logs).
type Sender struct {
	deps    Deps
	what    string
	timeout time.Duration
}

// NewSender returns the sender of the notices named what; sendTimeout
// bounds each channel's send (30 seconds when zero). An error when a
// required dependency is missing.
func NewSender(deps Deps, what string, sendTimeout time.Duration) (*Sender, error) {
	if deps.Accounts == nil {
		return nil, errors.New(what + ": Accounts is required")
	}
	if (deps.Mail == nil) != (deps.Templates == nil) {
		return nil, errors.New(what + ": Mail and Templates go together")
	}
	if sendTimeout <= 0 {
		sendTimeout = 30 * time.Second
	}
	if deps.Log == nil {
		deps.Log = slog.New(slog.DiscardHandler)
	}
	return &Sender{deps: deps, what: what, timeout: sendTimeout}, nil
}

// Log is the sender's logger.
func (s *Sender) Log() *slog.Logger { return s.deps.Log }

// JobTimeout bounds one attempt of a job: the three channels, one after
// another.
func (s *Sender) JobTimeout() time.Duration { return 3*s.timeout + 10*time.Second }

// Recipient is the account a job tells: ok false (and nil) when it is
// disabled and told nothing; a cancelled job when it no longer exists.
func (s *Sender) Recipient(ctx context.Context, accountID string) (acct accounts.Account, ok bool, err error) {
	acct, err = s.deps.Accounts.AccountByID(ctx, accountID)
	if errors.Is(err, storage.ErrNotFound) {
		return acct, false, river.JobCancel(fmt.Errorf("%s: account %s no longer exists", s.what, accountID))
	}
	if err != nil {
		return acct, false, err
	}
	if acct.Disabled() {
		s.deps.Log.InfoContext(ctx, s.what+" not sent: the account is disabled", "account_id", acct.ID)
		return acct, false, nil
	}
	return acct, true, nil
}

// Notice is what every channel says to the account's owner.
type Notice struct {
	Account accounts.Account
	// Category is the notification category (preferences): security and
	// billing, which no preference turns off.
	Category string
	// Title and Body are the push's; PushData its data.
	Title, Body string
	PushData    map[string]any
	// Email is the email's template ("" for none) and EmailVars its vars.
	Email     string
	EmailVars mail.Vars
	// Telegram is the linked chat's text.
	Telegram string
}

// Job is the job a notice is sent for: its idempotency keys are
// keyPrefix:id:channel, under operation with request as what a key
// reused for something else would differ in.
type Job struct {
	KeyPrefix string
	ID        int64
	Attempt   int
	Operation string
	Request   any
	// LogAttrs are added to the channels' log lines.
	LogAttrs []any
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

// Send sends n on each channel. It returns an error, so that River
// retries, when a channel failed in a way a retry may mend; the channels
// that succeeded are not sent again (see the package comment).
func (s *Sender) Send(ctx context.Context, job Job, n Notice) error {
	return errors.Join(
		s.channel(ctx, job, n, ChannelPush, s.push),
		s.channel(ctx, job, n, ChannelEmail, s.email),
		s.channel(ctx, job, n, ChannelTelegram, s.telegram),
	)
}

// SendEmail sends n's email alone, as Send sends that channel: the job of
// a notification's email channel (internal/notifyemail).
func (s *Sender) SendEmail(ctx context.Context, job Job, n Notice) error {
	return s.channel(ctx, job, n, ChannelEmail, s.email)
}

// channel sends n on one channel under its idempotency key; an error
// when a retry may mend the failure.
func (s *Sender) channel(ctx context.Context, job Job, n Notice, name string, send func(context.Context, Notice) (string, error)) error {
	attrs := append([]any{"account_id", n.Account.ID}, job.LogAttrs...)
	key := idempotency.Key{Service: s.deps.Idempotency, Field: "job", Value: fmt.Sprintf("%s:%d:%s", job.KeyPrefix, job.ID, name)}
	outcome, err := idempotency.Do(ctx, key, job.Operation, []any{name, job.Request}, func(ctx context.Context) (string, error) {
		return send(ctx, n)
	})
	if err != nil {
		s.deps.Log.WarnContext(ctx, s.what+": channel failed; the job retries it", append(attrs, "channel", name, "attempt", job.Attempt, "err", err)...)
		return fmt.Errorf("%s: %w", name, err)
	}
	s.deps.Log.DebugContext(ctx, s.what, append(attrs, "channel", name, "outcome", outcome)...)
	return nil
}

// push sends the notice to the account's devices.
func (s *Sender) push(ctx context.Context, n Notice) (string, error) {
	if s.deps.Push == nil {
		return outcomeSkipped, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	res, err := s.deps.Push.SendToUser(ctx, n.Account.ID, notifications.Notification{Subject: n.Title, Content: n.Body, Data: n.PushData},
		notifications.UserSendOptions{Channels: []string{notifications.ChannelPush}, Category: n.Category})
	if apperr.Is(err, apperr.UserNotFound) {
		return outcomeSkipped, nil
	}
	if apperr.Is(err, apperr.InvalidInput) {
		// Too large a push (a very long link): no retry mends it.
		s.deps.Log.WarnContext(ctx, s.what+" push refused", "account_id", n.Account.ID, "err", err)
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
func (s *Sender) email(ctx context.Context, n Notice) (string, error) {
	if s.deps.Mail == nil || n.Email == "" || n.Account.Email == "" {
		return outcomeSkipped, nil
	}
	msg, err := s.deps.Templates.Render(n.Email, n.Account.Locale, n.Account.Email, n.EmailVars)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	if err := s.deps.Mail.Send(ctx, msg); err != nil {
		if mail.IsPermanent(err) {
			s.deps.Log.WarnContext(ctx, s.what+" email refused", "account_id", n.Account.ID, "err", err)
			return outcomeSkipped, nil
		}
		return "", err
	}
	return outcomeSent, nil
}

// telegram sends the notice's text to the linked chat.
func (s *Sender) telegram(ctx context.Context, n Notice) (string, error) {
	if s.deps.Chats == nil {
		return outcomeSkipped, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	_, found, err := s.deps.Chats.SendToLinkedChat(ctx, n.Account.ID, n.Telegram)
	switch {
	case err == nil && !found:
		return outcomeSkipped, nil
	case err == nil:
		return outcomeSent, nil
	case apperr.Is(err, apperr.ChatBlocked), apperr.Is(err, apperr.ChatNotFound), apperr.Is(err, apperr.InvalidMessage), apperr.Is(err, apperr.MessengerNotConnected):
		// A retry cannot mend these: the user blocked the bot, the chat
		// is gone, or there is no bot.
		s.deps.Log.InfoContext(ctx, s.what+" not sent to Telegram", "account_id", n.Account.ID, "err", err)
		return outcomeSkipped, nil
	}
	return "", err
}
