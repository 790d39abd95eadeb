package notifications

import "context"

// emailWalk is a broadcast's email part (Job.Emails), run by the same
// broadcast job after its device passes: page by page, the store queues
// one EmailArgs per account of the audience (ClaimEmailBatch), in the
// transaction that moves the job's email cursor, so that a run taking
// the job over (after a crash, on any replica) continues after the last
// page committed and no account is emailed twice. The email itself is
// the email channel's job (the notification template in the account's
// locale, its unsubscribe link and header), which reads the account and
// its preferences again when it runs. Cancelling the job stops the walk
// at its next page: emails already queued go out. It returns
// errSliceDone when the slice is over first, errStopped when the job
// stopped being this run's.
func (r *run) emailWalk(ctx context.Context, subject, content, category string) error {
	email := func(accountID string) EmailArgs {
		return EmailArgs{AccountID: accountID, Subject: subject, Content: content, Category: category, BroadcastID: r.id}
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
