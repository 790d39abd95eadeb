package sqlstore

import (
	"context"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// fanoutJobs is one table of fan-out jobs (notification_jobs,
// messenger_broadcasts): both have status, lease_owner, lease_until,
// requeued_at, started_at, finished_at and last_error, so the queries of a
// job's lease, its end, its cancel and its sweep are these, for both
// channels; each channel's file has its own walk and outcomes.
type fanoutJobs[J any] struct {
	table   string
	columns string // read by scan
	scan    func(row) (J, error)
	// event is the webhook payload of a finished or cancelled job, which
	// internal/view builds from the job's wire type and names by its
	// status; the store only writes it into the outbox.
	event func(J) webhooks.Payload
	// waits, when not "", is the condition of a running job that waits
	// on purpose (a push broadcast with devices held for quiet hours
	// until its resume_at), with one ? for now: the sweep leaves it alone.
	waits string
}

// get reads one job; ErrNotFound when unknown.
func (t fanoutJobs[J]) get(ctx context.Context, q querier, id string) (J, error) {
	return t.scan(q.queryRow(ctx, `SELECT `+t.columns+` FROM `+t.table+` WHERE id = ?`, id))
}

// acquire gives owner the job's lease until `until` when it is free,
// expired or owner's, moving a queued (or scheduled) job to running. A
// finished job is returned without a lease.
func (t fanoutJobs[J]) acquire(ctx context.Context, db *DB, id, owner string, until time.Time) (J, fanout.Lease, error) {
	var j J
	var l fanout.Lease
	err := db.inTx(ctx, func(tx *Tx) error {
		l = fanout.Lease{}
		var status string
		var holder *string
		// left is how long the lease has to run on the database's clock
		// (clock.go); zero or less: lapsed.
		var left time.Duration
		if db.dialect == storage.Postgres {
			var secs float64
			if err := tx.q.queryRow(ctx, `SELECT status, lease_owner, COALESCE(EXTRACT(EPOCH FROM lease_until - `+db.dbAt()+`), 0) FROM `+t.table+` WHERE id = ? FOR UPDATE`,
				db.dbAtArg(0), id).Scan(&status, &holder, &secs); err != nil {
				return err
			}
			left = time.Duration(secs * float64(time.Second))
		} else {
			var until *time.Time
			if err := tx.q.queryRow(ctx, `SELECT status, lease_owner, lease_until FROM `+t.table+` WHERE id = ?`, id).Scan(&status, &holder, &until); err != nil {
				return err
			}
			if until != nil {
				left = until.Sub(db.Now())
			}
		}
		if !fanout.Finished(status) {
			if holder != nil && *holder != owner && left > 0 {
				// The holder's end on this replica's clock.
				l.HeldBy, l.Until = *holder, db.Now().UTC().Add(left)
			} else {
				if _, err := tx.q.exec(ctx, `UPDATE `+t.table+` SET status = 'running', started_at = COALESCE(started_at, ?), lease_owner = ?, lease_until = `+db.dbAt()+` WHERE id = ?`,
					tx.now, owner, db.dbUntilArg(until), id); err != nil {
					return err
				}
				l.Acquired, l.Until = true, until.UTC()
			}
		}
		var err error
		j, err = t.get(ctx, tx.q, id)
		return err
	})
	return j, l, err
}

// holdsLease locks the job row and reports whether owner may go on: the
// job is running and owner holds its lease.
func (t fanoutJobs[J]) holdsLease(ctx context.Context, tx *Tx, id, owner string) (bool, error) {
	var status string
	var holder *string
	if err := tx.q.queryRow(ctx, `SELECT status, lease_owner FROM `+t.table+` WHERE id = ?`+tx.db.forUpdate(), id).Scan(&status, &holder); err != nil {
		return false, err
	}
	return status == fanout.Running && holder != nil && *holder == owner, nil
}

// renew moves owner's lease of the running job to until and reports
// whether owner still holds it.
func (t fanoutJobs[J]) renew(ctx context.Context, db *DB, q querier, id, owner string, until time.Time) (bool, error) {
	n, err := q.exec(ctx, `UPDATE `+t.table+` SET lease_until = `+db.dbAt()+` WHERE id = ? AND status = 'running' AND lease_owner = ?`, db.dbUntilArg(until), id, owner)
	return n == 1, err
}

// finish moves a running job whose lease owner holds to status (completed
// or failed, with errMsg), frees the lease and emits the job's event, in
// one transaction; it returns the job as it is.
func (t fanoutJobs[J]) finish(ctx context.Context, db *DB, id, owner, status, errMsg string) (J, error) {
	var j J
	err := db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE `+t.table+` SET status = ?, last_error = ?, finished_at = ?, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND status = 'running' AND lease_owner = ?`, status, errMsg, tx.now, id, owner)
		if err != nil {
			return err
		}
		if j, err = t.get(ctx, tx.q, id); err != nil || n == 0 {
			return err
		}
		return tx.emit(ctx, t.event(j))
	})
	return j, err
}

// cancel cancels a queued, scheduled or running job and emits its event;
// a finished job is returned unchanged. The lease stays with its holder:
// what its batch in flight sent is still counted.
func (t fanoutJobs[J]) cancel(ctx context.Context, db *DB, id string) (J, error) {
	var j J
	err := db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE `+t.table+` SET status = 'cancelled', finished_at = ? WHERE id = ? AND status IN ('queued', 'scheduled', 'running')`, tx.now, id)
		if err != nil {
			return err
		}
		if j, err = t.get(ctx, tx.q, id); err != nil || n == 0 {
			return err
		}
		return tx.emit(ctx, t.event(j))
	})
	return j, err
}

// release frees owner's lease.
func (t fanoutJobs[J]) release(ctx context.Context, db *DB, id, owner string) error {
	_, err := db.conn().exec(ctx, `UPDATE `+t.table+` SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?`, id, owner)
	return err
}

// requeueStalled queues a new River job for each running job whose lease
// has lapsed, at most once per minInterval. The conditional update makes
// it safe on every replica at once: only one of them moves requeued_at,
// and only that one inserts the job.
func (t fanoutJobs[J]) requeueStalled(ctx context.Context, db *DB, minInterval time.Duration, newJob func(id string) river.JobArgs) ([]string, error) {
	// The IN term lets SQLite use the table's partial index of unfinished
	// jobs. lease_until and requeued_at are the database's clock; a waiting
	// job's resume_at (see waits) is an owner's wall-clock time, as the
	// services computed it, compared with this replica's clock.
	notWaiting, args := "", []any{db.dbAtArg(0), db.dbAtArg(-minInterval)}
	if t.waits != "" {
		notWaiting, args = ` AND NOT (`+t.waits+`)`, append(args, db.Now())
	}
	rs, err := db.conn().query(ctx, `SELECT id FROM `+t.table+` WHERE status IN ('queued', 'running') AND status = 'running'
		AND (lease_until IS NULL OR lease_until < `+db.dbAt()+`) AND (requeued_at IS NULL OR requeued_at < `+db.dbAt()+`)`+notWaiting+` ORDER BY id`, args...)
	stalled, err := collect(rs, err, scanString)
	if err != nil {
		return nil, err
	}
	var requeued []string
	for _, id := range stalled {
		err := db.inTx(ctx, func(tx *Tx) error {
			args := []any{db.dbAtArg(0), id, db.dbAtArg(0), db.dbAtArg(-minInterval)}
			if t.waits != "" {
				args = append(args, tx.now)
			}
			n, err := tx.q.exec(ctx, `UPDATE `+t.table+` SET requeued_at = `+db.dbAt()+` WHERE id = ? AND status = 'running'
				AND (lease_until IS NULL OR lease_until < `+db.dbAt()+`) AND (requeued_at IS NULL OR requeued_at < `+db.dbAt()+`)`+notWaiting, args...)
			if err != nil || n == 0 {
				return err
			}
			if _, err := tx.InsertJob(ctx, newJob(id), nil); err != nil {
				return err
			}
			requeued = append(requeued, id)
			return nil
		})
		if err != nil {
			return requeued, err
		}
	}
	return requeued, nil
}
