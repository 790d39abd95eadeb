package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/riverqueue/river"
)

const jobColumns = `id, status, subject, content, data, total_recipients, sent, failed, invalid_tokens, created_at, started_at, finished_at, last_error`

func scanJob(r row, extra ...any) (notifications.Job, error) {
	var j notifications.Job
	var data *string
	var started, finished *time.Time
	dest := append([]any{&j.ID, &j.Status, &j.Subject, &j.Content, &data, &j.TotalRecipients, &j.Sent, &j.Failed, &j.InvalidTokens,
		&j.CreatedAt, &started, &finished, &j.Error}, extra...)
	if err := r.Scan(dest...); err != nil {
		return notifications.Job{}, err
	}
	if data != nil {
		m, err := notifications.DecodeData([]byte(*data))
		if err != nil {
			return notifications.Job{}, fmt.Errorf("job %s: data: %w", j.ID, err)
		}
		j.Data = m
	}
	j.CreatedAt = j.CreatedAt.UTC()
	j.StartedAt, j.FinishedAt = utcPtr(started), utcPtr(finished)
	return j, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// recipients is the condition of a broadcast recipient; it matches the
// predicate of the devices_recipients partial index word for word.
const recipients = `active = TRUE AND push_token_status = 'valid'`

// CreateBroadcast implements notifications.Store.
func (db *DB) CreateBroadcast(ctx context.Context, b notifications.NewBroadcast, job river.JobArgs) (notifications.Job, error) {
	var j notifications.Job
	err := db.inTx(ctx, func(tx *Tx) error {
		var total int
		if err := tx.q.queryRow(ctx, `SELECT COUNT(*) FROM devices WHERE `+recipients).Scan(&total); err != nil {
			return err
		}
		var data any
		if b.Data != nil {
			data = string(b.Data)
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO notification_jobs (id, subject, content, data, status, total_recipients, created_at) VALUES (?, ?, ?, ?, 'queued', ?, ?)`,
			b.ID, b.Subject, b.Content, data, total, tx.now); err != nil {
			return err
		}
		if _, err := tx.InsertJob(ctx, job, nil); err != nil {
			return err
		}
		m, err := notifications.DecodeData(b.Data)
		if err != nil {
			return err
		}
		j = notifications.Job{ID: b.ID, Status: notifications.StatusQueued, Subject: b.Subject, Content: b.Content, Data: m, TotalRecipients: total, CreatedAt: tx.now}
		return nil
	})
	return j, err
}

// BroadcastJob implements notifications.Store.
func (db *DB) BroadcastJob(ctx context.Context, id string) (notifications.Job, error) {
	return scanJob(db.conn().queryRow(ctx, `SELECT `+jobColumns+` FROM notification_jobs WHERE id = ?`, id))
}

// BroadcastJobs implements notifications.Store: job IDs are UUIDv7, so ID
// order is creation order.
func (db *DB) BroadcastJobs(ctx context.Context, beforeID string, limit int) ([]notifications.Job, error) {
	var rs rows
	var err error
	if beforeID == "" {
		rs, err = db.conn().query(ctx, `SELECT `+jobColumns+` FROM notification_jobs ORDER BY id DESC LIMIT ?`, limit)
	} else {
		rs, err = db.conn().query(ctx, `SELECT `+jobColumns+` FROM notification_jobs WHERE id < ? ORDER BY id DESC LIMIT ?`, beforeID, limit)
	}
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []notifications.Job
	for rs.Next() {
		j, err := scanJob(rs)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, j)
	}
	return out, translate(rs.Err())
}

// CancelBroadcast implements notifications.Store.
func (db *DB) CancelBroadcast(ctx context.Context, id string) (notifications.Job, error) {
	var j notifications.Job
	err := db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `UPDATE notification_jobs SET status = 'cancelled', finished_at = ? WHERE id = ? AND status IN ('queued', 'running')`, tx.now, id); err != nil {
			return err
		}
		var err error
		j, err = scanJob(tx.q.queryRow(ctx, `SELECT `+jobColumns+` FROM notification_jobs WHERE id = ?`, id))
		return err
	})
	return j, err
}

// UnfinishedBroadcasts implements notifications.Store.
func (db *DB) UnfinishedBroadcasts(ctx context.Context) ([]string, error) {
	rs, err := db.conn().query(ctx, `SELECT id FROM notification_jobs WHERE status IN ('queued', 'running') ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var ids []string
	for rs.Next() {
		var id string
		if err := rs.Scan(&id); err != nil {
			return nil, translate(err)
		}
		ids = append(ids, id)
	}
	return ids, translate(rs.Err())
}

// AcquireBroadcast implements notifications.Store.
func (db *DB) AcquireBroadcast(ctx context.Context, id, owner string, until time.Time) (notifications.Lease, error) {
	var l notifications.Lease
	err := db.inTx(ctx, func(tx *Tx) error {
		l = notifications.Lease{}
		var holder *string
		var holdUntil *time.Time
		j, err := scanJob(tx.q.queryRow(ctx, `SELECT `+jobColumns+`, lease_owner, lease_until FROM notification_jobs WHERE id = ?`+db.forUpdate(), id), &holder, &holdUntil)
		if err != nil {
			return err
		}
		l.Job = j
		if j.Finished() {
			return nil
		}
		if holder != nil && *holder != owner && holdUntil != nil && holdUntil.After(tx.now) {
			l.HeldBy, l.Until = *holder, holdUntil.UTC()
			return nil
		}
		if _, err := tx.q.exec(ctx, `UPDATE notification_jobs SET status = 'running', started_at = COALESCE(started_at, ?), lease_owner = ?, lease_until = ? WHERE id = ?`,
			tx.now, owner, until, id); err != nil {
			return err
		}
		l.Acquired, l.Until = true, until.UTC()
		l.Job.Status = notifications.StatusRunning
		if l.Job.StartedAt == nil {
			now := tx.now
			l.Job.StartedAt = &now
		}
		return nil
	})
	return l, err
}

// holdsLease locks the job row and reports whether owner may go on: the
// job is running and owner holds its lease.
func (tx *Tx) holdsLease(ctx context.Context, id, owner string) (bool, error) {
	var status string
	var holder *string
	if err := tx.q.queryRow(ctx, `SELECT status, lease_owner FROM notification_jobs WHERE id = ?`+tx.db.forUpdate(), id).Scan(&status, &holder); err != nil {
		return false, err
	}
	return status == notifications.StatusRunning && holder != nil && *holder == owner, nil
}

// ClaimNextBatch implements notifications.Store.
func (db *DB) ClaimNextBatch(ctx context.Context, id, owner string, limit int, until time.Time) (notifications.Claims, error) {
	var c notifications.Claims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.Claims{}
		var status, cursor string
		var holder *string
		var done bool
		var created time.Time
		if err := tx.q.queryRow(ctx, `SELECT status, lease_owner, walk_cursor, walk_done, created_at FROM notification_jobs WHERE id = ?`+db.forUpdate(), id).
			Scan(&status, &holder, &cursor, &done, &created); err != nil {
			return err
		}
		if status != notifications.StatusRunning || holder == nil || *holder != owner {
			c.Stop = true
			return nil
		}
		if done {
			c.Done = true
			return nil
		}
		rs, err := tx.q.query(ctx, `SELECT id, platform, push_token FROM devices WHERE `+recipients+` AND id > ? AND created_at <= ? AND push_token IS NOT NULL ORDER BY id LIMIT ?`,
			cursor, created, limit)
		if err != nil {
			return err
		}
		var found []notifications.Claim
		for rs.Next() {
			var cl notifications.Claim
			if err := rs.Scan(&cl.DeviceID, &cl.Platform, &cl.Token); err != nil {
				rs.Close()
				return translate(err)
			}
			found = append(found, cl)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return translate(err)
		}
		c.Done = len(found) < limit
		if len(found) > 0 {
			c.Last = found[len(found)-1].DeviceID
			cursor = c.Last
			claimed, err := tx.insertClaims(ctx, id, owner, found)
			if err != nil {
				return err
			}
			c.Claims = claimed
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_jobs SET walk_cursor = ?, walk_done = ?, lease_until = ? WHERE id = ?`, cursor, c.Done, until, id)
		return err
	})
	return c, err
}

// insertClaims writes a claimed delivery per device and returns the
// devices actually claimed (not those already having a delivery row).
func (tx *Tx) insertClaims(ctx context.Context, id, owner string, found []notifications.Claim) ([]notifications.Claim, error) {
	const perInsert = 250
	mine := make(map[string]bool, len(found))
	for part := range chunks(found, perInsert) {
		args := make([]any, 0, len(part)*5)
		q := make([]byte, 0, len(part)*20)
		for i, cl := range part {
			if i > 0 {
				q = append(q, ", "...)
			}
			q = append(q, "(?, ?, 'claimed', ?, ?)"...)
			args = append(args, id, cl.DeviceID, owner, tx.now)
		}
		rs, err := tx.q.query(ctx, `INSERT INTO notification_deliveries (job_id, device_id, status, claimed_by, updated_at) VALUES `+string(q)+`
			ON CONFLICT (job_id, device_id) DO NOTHING RETURNING device_id`, args...)
		if err != nil {
			return nil, err
		}
		for rs.Next() {
			var d string
			if err := rs.Scan(&d); err != nil {
				rs.Close()
				return nil, translate(err)
			}
			mine[d] = true
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, translate(err)
		}
	}
	if len(mine) == len(found) {
		return found, nil
	}
	out := found[:0:0]
	for _, cl := range found {
		if mine[cl.DeviceID] {
			out = append(out, cl)
		}
	}
	return out, nil
}

// ReclaimDeliveries implements notifications.Store.
func (db *DB) ReclaimDeliveries(ctx context.Context, id, owner string, retriesOnly bool, after string, limit int, until time.Time) (notifications.Claims, error) {
	var c notifications.Claims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.Claims{}
		ok, err := tx.holdsLease(ctx, id, owner)
		if err != nil {
			return err
		}
		if !ok {
			c.Stop = true
			return nil
		}
		// The IN term lets SQLite use the notification_deliveries_open
		// partial index.
		which := `(d.status = 'retry' OR d.claimed_by <> ?)`
		args := []any{id, after, owner, limit}
		if retriesOnly {
			which = `d.status = 'retry'`
			args = []any{id, after, limit}
		}
		rs, err := tx.q.query(ctx, `SELECT d.device_id, v.platform, v.push_token, v.active, v.push_token_status
			FROM notification_deliveries d LEFT JOIN devices v ON v.id = d.device_id
			WHERE d.job_id = ? AND d.device_id > ? AND d.status IN ('claimed', 'retry') AND `+which+`
			ORDER BY d.device_id LIMIT ?`, args...)
		if err != nil {
			return err
		}
		var take, skip []any
		for rs.Next() {
			var deviceID string
			var platform, token, tokenStatus *string
			var active *bool
			if err := rs.Scan(&deviceID, &platform, &token, &active, &tokenStatus); err != nil {
				rs.Close()
				return translate(err)
			}
			c.Last = deviceID
			if platform == nil || token == nil || active == nil || !*active || tokenStatus == nil || *tokenStatus != "valid" {
				skip = append(skip, deviceID)
				continue
			}
			c.Claims = append(c.Claims, notifications.Claim{DeviceID: deviceID, Platform: *platform, Token: *token})
			take = append(take, deviceID)
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return translate(err)
		}
		for part := range chunks(take, 500) {
			a := append([]any{owner, tx.now, id}, part...)
			if _, err := tx.q.exec(ctx, `UPDATE notification_deliveries SET status = 'claimed', claimed_by = ?, updated_at = ? WHERE job_id = ? AND device_id IN (`+placeholders(len(part))+`)`, a...); err != nil {
				return err
			}
		}
		for part := range chunks(skip, 500) {
			a := append([]any{tx.now, id}, part...)
			if _, err := tx.q.exec(ctx, `UPDATE notification_deliveries SET status = 'skipped', updated_at = ? WHERE job_id = ? AND device_id IN (`+placeholders(len(part))+`)`, a...); err != nil {
				return err
			}
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_jobs SET lease_until = ? WHERE id = ?`, until, id)
		return err
	})
	return c, err
}

// RecordDeliveries implements notifications.Store.
func (db *DB) RecordDeliveries(ctx context.Context, id, owner string, outcomes []notifications.Outcome, until time.Time) (bool, error) {
	var kept bool
	err := db.inTx(ctx, func(tx *Tx) error {
		byStatus := map[string][]any{}
		for _, o := range outcomes {
			byStatus[o.Status] = append(byStatus[o.Status], o.DeviceID)
		}
		counted := map[string]int64{}
		for status, ids := range byStatus {
			for part := range chunks(ids, 500) {
				a := append([]any{status, tx.now, id, owner}, part...)
				n, err := tx.q.exec(ctx, `UPDATE notification_deliveries SET status = ?, updated_at = ?
					WHERE job_id = ? AND claimed_by = ? AND status = 'claimed' AND device_id IN (`+placeholders(len(part))+`)`, a...)
				if err != nil {
					return err
				}
				counted[status] += n
			}
		}
		var dead []devicePushToken
		for _, o := range outcomes {
			if o.Status == notifications.DeliveryInvalid {
				dead = append(dead, devicePushToken{o.DeviceID, o.Token})
			}
		}
		if err := invalidatePushTokens(ctx, tx.q, dead); err != nil {
			return err
		}
		sent, failed, invalid := counted[notifications.DeliverySent], counted[notifications.DeliveryFailed], counted[notifications.DeliveryInvalid]
		if sent+failed+invalid > 0 {
			if _, err := tx.q.exec(ctx, `UPDATE notification_jobs SET sent = sent + ?, failed = failed + ?, invalid_tokens = invalid_tokens + ? WHERE id = ?`,
				sent, failed, invalid, id); err != nil {
				return err
			}
		}
		n, err := tx.q.exec(ctx, `UPDATE notification_jobs SET lease_until = ? WHERE id = ? AND lease_owner = ?`, until, id, owner)
		kept = n == 1
		return err
	})
	return kept, err
}

// FinishBroadcast implements notifications.Store.
func (db *DB) FinishBroadcast(ctx context.Context, id, owner, status, errMsg string) (notifications.Job, error) {
	var j notifications.Job
	err := db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `UPDATE notification_jobs SET status = ?, last_error = ?, finished_at = ?, lease_owner = NULL, lease_until = NULL
			WHERE id = ? AND status = 'running' AND lease_owner = ?`, status, errMsg, tx.now, id, owner); err != nil {
			return err
		}
		var err error
		j, err = scanJob(tx.q.queryRow(ctx, `SELECT `+jobColumns+` FROM notification_jobs WHERE id = ?`, id))
		return err
	})
	return j, err
}

// ReleaseBroadcast implements notifications.Store.
func (db *DB) ReleaseBroadcast(ctx context.Context, id, owner string) error {
	_, err := db.conn().exec(ctx, `UPDATE notification_jobs SET lease_owner = NULL, lease_until = NULL WHERE id = ? AND lease_owner = ?`, id, owner)
	return err
}

var _ notifications.Store = (*DB)(nil)
