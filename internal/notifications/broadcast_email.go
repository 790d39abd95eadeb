package notifications

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
)

// emailWalk is a broadcast's email part (Job.Emails), run by the same
// broadcast job after its device passes: page by page, the store queues
// one EmailArgs per account of the audience (ClaimEmailBatch), in the
// transaction that moves the job's email cursor, so that a run taking
// the job over (after a crash, on any replica) continues after the last
// page committed and no account is emailed twice. The email itself is
// the email channel's job (the notification template in the account's
// locale, its unsubscribe link and header), which reads the account and
// its preferences again when it runs. Each email is due when a device of
// its owner would be (emailDue): an owner inside their quiet hours, or
// whose 09:00 of a "local time" job has not come, gets the email job
// scheduled then. Cancelling the job stops the walk at its next page:
// an email queued but not yet sent (held, or waiting in the queue) is
// not sent: its job finds the broadcast cancelled. It returns
// errSliceDone when the slice is over first, errStopped when the job
// stopped being this run's.
func (r *run) emailWalk(ctx context.Context, subject, content, category string) error {
	email := func(accountID string, s preferences.Schedule) (EmailArgs, time.Time) {
		return EmailArgs{AccountID: accountID, Subject: subject, Content: content, Category: category, BroadcastID: r.id}, r.emailDue(s, r.s.cfg.Now())
	}
	for {
		if r.s.cfg.Now().After(r.sliceEnd) {
			return errSliceDone
		}
		c, err := r.s.store.ClaimEmailBatch(ctx, r.id, r.owner, r.s.cfg.BatchSize, r.s.leaseUntil(), email)
		switch {
		case err != nil:
			return err
		case c.Stop:
			return errStopped
		}
		if c.Queued > 0 {
			r.s.progress.Changed(r.id, false)
		}
		if c.Done {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// emailDue is when the email of an owner of schedule s is due, under the
// rules decide applies to their devices: for a job "at 09:00 local" its
// owner's instant (LocalTime.DueFor) if still ahead, then, unless the
// job is urgent or its category critical, the end of the quiet hours
// that instant falls in (preferences.Schedule.HoldUntil). The zero time
// is now. Decided once, when the walk queues the email: a window moved
// afterwards does not move it.
func (r *run) emailDue(s preferences.Schedule, now time.Time) time.Time {
	var due time.Time
	at := now
	if r.local != nil {
		if d := r.local.DueFor(s); d.After(now) {
			due, at = d, d
		}
	}
	if r.quiet {
		if until, held := s.HoldUntil(at); held {
			due = until
		}
	}
	return due
}
