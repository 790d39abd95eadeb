package mfa

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// InsertOpts puts the notice on the email queue, beside the code emails.
func (RecoveryCodeUsedArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{Queue: accounts.QueueEmail}
}

// Renderer composes an email (*mail.Templates).
type Renderer interface {
	Render(email, locale, to string, v mail.Vars) (mail.Message, error)
}

// Mailer sends one email (mail.Sender).
type Mailer interface {
	Send(ctx context.Context, m mail.Message) error
}

// AccountReader reads an account (the sqlstore).
type AccountReader interface {
	AccountByID(ctx context.Context, id string) (accounts.Account, error)
}

// NoticeWorker works RecoveryCodeUsedArgs: the email, in the account's
// locale, that says a recovery code was used and how many are left. A
// failed send returns the error, so River retries it.
type NoticeWorker struct {
	river.WorkerDefaults[RecoveryCodeUsedArgs]
	Accounts    AccountReader
	Templates   Renderer
	Mail        Mailer
	SendTimeout time.Duration
	Log         *slog.Logger
}

// Work sends the notice.
func (w *NoticeWorker) Work(ctx context.Context, job *river.Job[RecoveryCodeUsedArgs]) error {
	acct, err := w.Accounts.AccountByID(ctx, job.Args.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("mfa notice: account %s no longer exists", job.Args.AccountID))
	}
	if err != nil {
		return err
	}
	if acct.Email == "" || acct.Disabled() {
		return nil
	}
	msg, err := w.Templates.Render(mail.EmailRecoveryCodeUsed, acct.Locale, acct.Email, mail.Vars{Date: job.Args.UsedAt, Count: job.Args.Left})
	if err != nil {
		return err
	}
	timeout := w.SendTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	sendCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := w.Mail.Send(sendCtx, msg); err != nil {
		if w.Log != nil {
			w.Log.WarnContext(ctx, "recovery code notice not sent; retried", "account_id", acct.ID, "err", err)
		}
		return err
	}
	return nil
}
