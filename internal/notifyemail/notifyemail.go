// Package notifyemail works notifications.EmailArgs: the email channel
// of a send to a user. It emails the notification's subject and content,
// in the account's locale (mail.EmailNotification, with the product's
// branding), to the account's verified address, and, unless the category
// is critical, carries the category's one-click unsubscribe link in the
// body and in the List-Unsubscribe headers (RFC 8058).
//
// The job reads the account and the preferences when it runs: an
// account deleted meanwhile cancels it; one disabled, without a verified
// address (a guest's placeholder), or whose owner turned the category's
// email off since the send was asked for is told nothing. The send
// A broadcast's email (EmailArgs.BroadcastID) whose broadcast was
// cancelled before it ran, such as one scheduled for the end of its
// owner's quiet hours, is not sent. The send
// itself, its retries and their idempotency are package ownernotice's
// (the email channel alone: ownernotice.Sender.SendEmail).
package notifyemail

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/ownernotice"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// Settings reads an account's stored notification preferences (the
// sqlstore implements it).
type Settings interface {
	NotificationSettings(ctx context.Context, accountID string) ([]preferences.Setting, error)
}

// Broadcasts reads a broadcast job (the sqlstore implements it).
type Broadcasts interface {
	BroadcastJob(ctx context.Context, id string) (notifications.Job, error)
}

// Deps are what the worker reads and sends through: ownernotice's
// Accounts, Templates, Mail, Idempotency and Log (its Push and Chats are
// not used), the stored preferences, the deployment's categories, and
// UnsubscribeURL, the link that turns a category's email off for an
// account (nil, or an answer of "": the email carries none).
type Deps struct {
	ownernotice.Deps
	Settings   Settings
	Categories preferences.Catalogue
	// Broadcasts reads the status of a broadcast's email's job (nil: a
	// cancelled broadcast's emails still go).
	Broadcasts     Broadcasts
	UnsubscribeURL func(accountID, category string) string
}

// Worker works notifications.EmailArgs jobs.
type Worker struct {
	river.WorkerDefaults[notifications.EmailArgs]
	send    *ownernotice.Sender
	deps    Deps
	timeout time.Duration
}

// New returns the worker; sendTimeout bounds the SMTP send (30 seconds
// when zero). An error when a required dependency is missing.
func New(deps Deps, sendTimeout time.Duration) (*Worker, error) {
	deps.Push, deps.Chats = nil, nil
	if sendTimeout <= 0 {
		sendTimeout = 30 * time.Second
	}
	send, err := ownernotice.NewSender(deps.Deps, "notification email", sendTimeout)
	if err != nil {
		return nil, err
	}
	if deps.Categories.Empty() {
		deps.Categories, _ = preferences.NewCatalogue(nil)
	}
	return &Worker{send: send, deps: deps, timeout: sendTimeout}, nil
}

// Timeout bounds one attempt: one SMTP send, and the reads around it.
// River rescues the job of a replica that died once it is past it.
func (w *Worker) Timeout(*river.Job[notifications.EmailArgs]) time.Duration {
	return w.timeout + 10*time.Second
}

// Work sends the email, or skips it (see the package comment); an error,
// so that River retries, when the mail server failed in a way a retry
// may mend.
func (w *Worker) Work(ctx context.Context, job *river.Job[notifications.EmailArgs]) error {
	args := job.Args
	if args.BroadcastID != "" && w.deps.Broadcasts != nil {
		b, err := w.deps.Broadcasts.BroadcastJob(ctx, args.BroadcastID)
		switch {
		case err == nil && b.Status == notifications.StatusCancelled:
			w.send.Log().InfoContext(ctx, "notification email not sent: its broadcast was cancelled", "account_id", args.AccountID, "broadcast_id", args.BroadcastID, "job_id", job.ID)
			return nil
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return err
		}
	}
	acct, ok, err := w.send.Recipient(ctx, args.AccountID)
	if !ok {
		return err
	}
	log := w.send.Log().With("account_id", acct.ID, "category", args.Category, "job_id", job.ID)
	if !notifications.HasEmailAddress(acct) {
		log.InfoContext(ctx, "notification email not sent: the account has no verified address")
		return nil
	}
	settings, err := w.deps.Settings.NotificationSettings(ctx, acct.ID)
	if err != nil {
		return err
	}
	if !w.deps.Categories.Allows(settings, args.Category, preferences.ChannelEmail) {
		log.InfoContext(ctx, "notification email not sent: the user turned the category's email off")
		return nil
	}
	vars := mail.Vars{Title: args.Subject, Content: args.Content}
	if !Critical(w.deps.Categories, args.Category) && w.deps.UnsubscribeURL != nil {
		vars.UnsubscribeURL = w.deps.UnsubscribeURL(acct.ID, args.Category)
	}
	return w.send.SendEmail(ctx, ownernotice.Job{KeyPrefix: args.Kind(), ID: job.ID, Attempt: job.Attempt, Operation: "notificationEmail", Request: args},
		ownernotice.Notice{Account: acct, Category: args.Category, Email: mail.EmailNotification, EmailVars: vars})
}

// Critical reports whether a category's emails go without an unsubscribe
// link: security and billing, which no preference turns off.
func Critical(c preferences.Catalogue, category string) bool {
	k, ok := c.Find(category)
	return ok && k.Critical
}
