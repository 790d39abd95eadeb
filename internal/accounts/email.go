package accounts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// Mailer sends one email.
type Mailer interface {
	Send(ctx context.Context, m mail.Message) error
}

// CodeEmailArgs is the durable job that emails a fresh code after signup.
// It carries no code: the worker makes one when it runs, so no code is ever
// stored in clear, not even in the job table.
type CodeEmailArgs struct {
	AccountID string  `json:"account_id"`
	Purpose   Purpose `json:"purpose"`
	// Requested marks a code the user asked for (password reset): it
	// counts against the resend limits.
	Requested bool `json:"requested,omitempty"`
}

func (CodeEmailArgs) Kind() string { return "code_email" }

// InsertOpts puts code emails on their own queue so a push broadcast cannot
// delay them.
func (CodeEmailArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueEmail} }

// QueueEmail is the River queue of code emails.
const QueueEmail = "email"

// CodeEmailWorker works CodeEmailArgs jobs.
type CodeEmailWorker struct {
	river.WorkerDefaults[CodeEmailArgs]
	Service *Service
}

// Timeout bounds one attempt; River retries the job elsewhere once it has
// passed, should the process die mid-send.
func (w *CodeEmailWorker) Timeout(*river.Job[CodeEmailArgs]) time.Duration {
	return w.Service.cfg.SendTimeout + 10*time.Second
}

func (w *CodeEmailWorker) Work(ctx context.Context, job *river.Job[CodeEmailArgs]) error {
	return w.Service.deliverQueuedCode(ctx, job.Args, job.CreatedAt)
}

// deliverQueuedCode sends the code email of a job. A failed send returns the
// error so River retries with backoff: a mail-server outage delays the email
// but never loses it.
func (s *Service) deliverQueuedCode(ctx context.Context, args CodeEmailArgs, queuedAt time.Time) error {
	accountID, p := args.AccountID, args.Purpose
	acct, err := s.store.AccountByID(ctx, accountID)
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("account %s no longer exists", accountID))
	}
	if err != nil {
		return err
	}
	if p == PurposeVerify && acct.Verified() {
		return nil
	}
	now := s.now()
	stats, err := s.store.SendStats(ctx, acct.ID, p, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if stats.LastSent.After(queuedAt) {
		return nil // the user asked for a newer code, which went out already
	}
	ok, err := s.store.AcquireSendLease(ctx, acct.ID, p, now.Add(s.leaseFor()))
	if err != nil {
		return err
	}
	if !ok {
		return river.JobSnooze(5 * time.Second)
	}
	return s.sendCode(ctx, acct, p, args.Requested)
}

// sendCode makes a code, stages it as pending, mails it, and only then makes
// it the live code: a failed send drops the pending code and leaves the one
// the user already has alive. The caller holds the lease.
func (s *Service) sendCode(ctx context.Context, acct Account, p Purpose, requested bool) error {
	bg := context.WithoutCancel(ctx)
	// The send counts from its start: a code asked for while it was on its
	// way (its job queued after this moment) is not answered by it, even
	// if the mail arrived before this send was recorded.
	started := s.now()
	to, hashed := acct.Email, p
	if p == PurposeEmailChange {
		// The code goes to the new address, and confirms that one only.
		pending, err := s.store.PendingEmail(ctx, acct.ID)
		if err == nil && pending == "" {
			err = errors.New("no email change is pending")
		}
		if err != nil {
			s.store.ReleaseSendLease(bg, acct.ID, p)
			return err
		}
		to, hashed = pending, emailChangePurpose(pending)
	}
	code, err := newCode()
	if err != nil {
		s.store.ReleaseSendLease(bg, acct.ID, p)
		return err
	}
	hash, expires := hashCode(s.codeKey, acct.ID, hashed, code), s.now().Add(s.cfg.CodeTTL)
	if err := s.store.StagePendingCode(ctx, acct.ID, p, hash, expires); err != nil {
		s.store.ReleaseSendLease(bg, acct.ID, p)
		return err
	}
	msg, err := s.emails.Render(emailOf[p], acct.Locale, to, mail.Vars{Code: code, TTL: s.cfg.CodeTTL})
	if err == nil {
		sendCtx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
		err = s.mailer.Send(sendCtx, msg)
		cancel()
	}
	if err != nil {
		s.store.DropPendingCode(bg, acct.ID, p)
		s.store.ReleaseSendLease(bg, acct.ID, p)
		s.logger.WarnContext(ctx, "code email not sent", "account_id", acct.ID, "purpose", string(p), "err", err)
		return fmt.Errorf("send %s code email: %w", p, err)
	}
	return s.store.RecordCodeSent(bg, CodeSent{
		AccountID: acct.ID,
		Purpose:   p,
		Hash:      hash,
		ExpiresAt: expires,
		Attempts:  s.cfg.CodeAttempts,
		Requested: requested,
		StartedAt: started,
	})
}

// emailOf names the email of each purpose.
var emailOf = map[Purpose]string{PurposeVerify: mail.EmailVerify, PurposeReset: mail.EmailReset, PurposeEmailChange: mail.EmailChangeEmail}
