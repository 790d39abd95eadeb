package sqlstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// Emit implements the services' event emission: it writes the event of
// the payload's type in the transaction ctx carries (InTx), the
// transaction of the change that causes it (see emitEvent).
func (db *DB) Emit(ctx context.Context, p webhooks.Payload) error {
	return db.inCallersTx(ctx, func(tx *Tx) error { return tx.emitEvent(ctx, p.EventType(), p) })
}

// emit writes the event of the payload's type (emitEvent).
func (tx *Tx) emit(ctx context.Context, p webhooks.Payload) error {
	return tx.emitEvent(ctx, p.EventType(), p)
}

// emitEvent is the outbox: it writes an event of type typ in the
// transaction of the change that causes it, and a delivery job for each
// enabled endpoint subscribed to typ, so an event is delivered if and only
// if its change commits. data holds ids and changed fields, never a
// password, code or token. Call it in the transaction of the change, only
// when the change changed something (an idempotent repeat writes no
// event).
func (tx *Tx) emitEvent(ctx context.Context, typ string, data any) error {
	ev, err := webhooks.NewEvent(typ, tx.now, data)
	if err != nil {
		return err
	}
	if err := tx.insertEvent(ctx, ev); err != nil {
		return err
	}
	for _, account := range webhooks.NamedAccounts(ev) {
		if _, err := tx.q.exec(ctx, `INSERT INTO webhook_event_accounts (account_id, event_id) VALUES (?, ?)`, account, ev.ID); err != nil {
			return err
		}
	}
	if tx.webhookEndpoints == nil {
		rs, err := tx.q.query(ctx, `SELECT id, event_types FROM webhook_endpoints WHERE disabled_at IS NULL`)
		tx.webhookEndpoints, err = collect(rs, err, func(r row) (webhookTarget, error) {
			var t webhookTarget
			var types string
			err := r.Scan(&t.id, &types)
			t.types = strings.Fields(types)
			return t, err
		})
		if err != nil {
			return err
		}
		if tx.webhookEndpoints == nil {
			tx.webhookEndpoints = []webhookTarget{}
		}
	}
	for _, e := range tx.webhookEndpoints {
		if !slices.Contains(e.types, typ) {
			continue
		}
		if _, err := tx.InsertJob(ctx, webhooks.DeliveryArgs{EventID: ev.ID, EndpointID: e.id}, nil); err != nil {
			return err
		}
	}
	return nil
}

// webhookTarget is an enabled endpoint and the event types it wants.
type webhookTarget struct {
	id    string
	types []string
}

func (tx *Tx) insertEvent(ctx context.Context, ev webhooks.Event) error {
	_, err := tx.q.exec(ctx, `INSERT INTO webhook_events (id, type, payload, created_at) VALUES (?, ?, ?, ?)`, ev.ID, ev.Type, string(ev.Payload), ev.CreatedAt)
	return err
}

const webhookEndpointColumns = `id, url, description, event_types, secret, previous_secret, previous_secret_until, disabled_at, disabled_reason, failing_since, created_at, updated_at`

// scanWebhookEndpoint reads an endpoint, its signing secrets opened (they
// are sealed at rest: seal.go).
func (db *DB) scanWebhookEndpoint(r row) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	var types string
	var prev *string
	if err := r.Scan(&e.ID, &e.URL, &e.Description, &types, &e.Secret, &prev, &e.PreviousSecretUntil, &e.DisabledAt, &e.DisabledReason, &e.FailingSince, &e.CreatedAt, &e.UpdatedAt); err != nil {
		return webhooks.Endpoint{}, err
	}
	e.EventTypes = strings.Fields(types)
	if prev != nil {
		e.PreviousSecret = *prev
	}
	var err error
	if e.Secret, e.PreviousSecret, err = db.openWebhookSecrets(e.ID, e.Secret, e.PreviousSecret); err != nil {
		return webhooks.Endpoint{}, err
	}
	e.PreviousSecretUntil, e.DisabledAt, e.FailingSince = utcPtr(e.PreviousSecretUntil), utcPtr(e.DisabledAt), utcPtr(e.FailingSince)
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return e, nil
}

// CreateWebhookEndpoint implements webhooks.Store.
func (db *DB) CreateWebhookEndpoint(ctx context.Context, e webhooks.Endpoint) error {
	_, err := db.conn().exec(ctx, `INSERT INTO webhook_endpoints (`+webhookEndpointColumns+`) VALUES (?, ?, ?, ?, ?, NULL, NULL, NULL, '', NULL, ?, ?)`,
		e.ID, e.URL, e.Description, strings.Join(e.EventTypes, " "), db.sealWebhookSecret(e.ID, e.Secret), e.CreatedAt, e.UpdatedAt)
	return err
}

// WebhookEndpoint implements webhooks.Store.
func (db *DB) WebhookEndpoint(ctx context.Context, id string) (webhooks.Endpoint, error) {
	return db.scanWebhookEndpoint(db.conn().queryRow(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE id = ?`, id))
}

// ListWebhookEndpoints implements webhooks.Store.
func (db *DB) ListWebhookEndpoints(ctx context.Context) ([]webhooks.Endpoint, error) {
	rs, err := db.conn().query(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints ORDER BY created_at, id`)
	return collect(rs, err, db.scanWebhookEndpoint)
}

// DeleteWebhookEndpoint implements webhooks.Store; its attempts, slots
// and parked deliveries go with it, and its pending jobs find it gone.
func (db *DB) DeleteWebhookEndpoint(ctx context.Context, id string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		for _, del := range []string{
			`DELETE FROM webhook_attempts WHERE endpoint_id = ?`,
			`DELETE FROM webhook_slots WHERE endpoint_id = ?`,
			`DELETE FROM webhook_parked WHERE endpoint_id = ?`,
		} {
			if _, err := tx.q.exec(ctx, del, id); err != nil {
				return err
			}
		}
		n, err := tx.q.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = ?`, id)
		if err == nil && n == 0 {
			return storage.ErrNotFound
		}
		return err
	})
}

// RotateWebhookSecret implements webhooks.Store.
func (db *DB) RotateWebhookSecret(ctx context.Context, id, secret string, previousUntil time.Time) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	err := db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE webhook_endpoints SET previous_secret = secret, previous_secret_until = ?, secret = ?, updated_at = ? WHERE id = ?`,
			previousUntil, db.sealWebhookSecret(id, secret), tx.now, id)
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		e, err = db.scanWebhookEndpoint(tx.q.queryRow(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE id = ?`, id))
		return err
	})
	return e, err
}

// SetWebhookEndpointDisabled implements webhooks.Store. Disabling drops
// the endpoint's parked deliveries and slots (its pending jobs find it
// disabled and end); enabling also closes its breaker.
func (db *DB) SetWebhookEndpointDisabled(ctx context.Context, id string, disabled bool, reason string) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	err := db.inTx(ctx, func(tx *Tx) error {
		var n int64
		var err error
		if disabled {
			n, err = tx.q.exec(ctx, `UPDATE webhook_endpoints SET disabled_at = COALESCE(disabled_at, ?), disabled_reason = CASE WHEN disabled_at IS NULL THEN ? ELSE disabled_reason END, updated_at = ? WHERE id = ?`,
				tx.now, reason, tx.now, id)
		} else {
			n, err = tx.q.exec(ctx, `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = '', failing_since = NULL,
				breaker_failures = 0, breaker_opens = 0, breaker_until = NULL, updated_at = ? WHERE id = ?`, tx.now, id)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		if disabled {
			for _, del := range []string{`DELETE FROM webhook_slots WHERE endpoint_id = ?`, `DELETE FROM webhook_parked WHERE endpoint_id = ?`} {
				if _, err := tx.q.exec(ctx, del, id); err != nil {
					return err
				}
			}
		}
		e, err = db.scanWebhookEndpoint(tx.q.queryRow(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE id = ?`, id))
		return err
	})
	return e, err
}

// WebhookEvent implements webhooks.Store.
func (db *DB) WebhookEvent(ctx context.Context, id string) (webhooks.Event, error) {
	var ev webhooks.Event
	var payload string
	err := db.conn().queryRow(ctx, `SELECT id, type, payload, created_at FROM webhook_events WHERE id = ?`, id).Scan(&ev.ID, &ev.Type, &payload, &ev.CreatedAt)
	ev.Payload, ev.CreatedAt = []byte(payload), ev.CreatedAt.UTC()
	return ev, err
}

// WebhookEvents lists the events of one type, oldest first (tests and
// operators).
func (db *DB) WebhookEvents(ctx context.Context, typ string) ([]webhooks.Event, error) {
	rs, err := db.conn().query(ctx, `SELECT id, type, payload, created_at FROM webhook_events WHERE type = ? ORDER BY id`, typ)
	return collect(rs, err, func(r row) (webhooks.Event, error) {
		var ev webhooks.Event
		var payload string
		err := r.Scan(&ev.ID, &ev.Type, &payload, &ev.CreatedAt)
		ev.Payload, ev.CreatedAt = []byte(payload), ev.CreatedAt.UTC()
		return ev, err
	})
}

const webhookAttemptColumns = `id, endpoint_id, event_id, event_type, attempt, status_code, duration_ms, error, created_at`

// WebhookAttempts implements webhooks.Store: attempt ids are UUIDv7, so id
// order is time order.
func (db *DB) WebhookAttempts(ctx context.Context, endpointID, beforeID string, limit int) ([]webhooks.Attempt, error) {
	q := `SELECT ` + webhookAttemptColumns + ` FROM webhook_attempts WHERE endpoint_id = ?`
	args := []any{endpointID}
	if beforeID != "" {
		q += ` AND id < ?`
		args = append(args, beforeID)
	}
	rs, err := db.conn().query(ctx, q+` ORDER BY id DESC LIMIT ?`, append(args, limit)...)
	return collect(rs, err, func(r row) (webhooks.Attempt, error) {
		var a webhooks.Attempt
		var ms int64
		err := r.Scan(&a.ID, &a.EndpointID, &a.EventID, &a.EventType, &a.Attempt, &a.StatusCode, &ms, &a.Error, &a.CreatedAt)
		a.Duration, a.CreatedAt = time.Duration(ms)*time.Millisecond, a.CreatedAt.UTC()
		return a, err
	})
}

// RecordWebhookAttempt implements webhooks.Store.
func (db *DB) RecordWebhookAttempt(ctx context.Context, a webhooks.Attempt, jobID int64, rules webhooks.Slots) (*time.Time, error) {
	var since *time.Time
	err := db.inTx(ctx, func(tx *Tx) error {
		b, enabled, err := tx.lockWebhookEndpoint(ctx, a.EndpointID)
		if err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO webhook_attempts (`+webhookAttemptColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.EndpointID, a.EventID, a.EventType, a.Attempt, a.StatusCode, a.Duration.Milliseconds(), a.Error, a.CreatedAt); err != nil {
			return err
		}
		b = rules.After(b, a.Succeeded(), tx.now)
		// FailingSince: cleared by a success, set by a first failure.
		if err := tx.q.queryRow(ctx, `UPDATE webhook_endpoints SET breaker_failures = ?, breaker_opens = ?, breaker_until = ?,
			failing_since = CASE WHEN ? THEN NULL ELSE COALESCE(failing_since, ?) END WHERE id = ? RETURNING failing_since`,
			b.Failures, b.Opens, b.Until, a.Succeeded(), a.CreatedAt, a.EndpointID).Scan(&since); err != nil {
			return err
		}
		since = utcPtr(since)
		if !enabled {
			return nil // disabled meanwhile: its slots went with it
		}
		return tx.releaseWebhookSlot(ctx, a.EndpointID, jobID, b, rules)
	})
	return since, err
}

// lockWebhookEndpoint locks an endpoint's row (on PostgreSQL; SQLite has
// one writer) and returns its breaker and whether it is enabled: every
// change to its slots and parked deliveries is made under this lock, so
// that replicas count the same slots and a parked delivery is never left
// without a holder to hand it a slot.
//
// The lock is held until the commit, so the transactions that take it do
// not wait for their WAL flush (commitWithoutFlush): the delivery job's
// own completion, a later commit, flushes them; should the database
// crash before that, the job runs again (a repeat delivery, which
// receivers dedupe), and a hand-over that was lost left its parked row.
func (tx *Tx) lockWebhookEndpoint(ctx context.Context, id string) (b webhooks.Breaker, enabled bool, err error) {
	if err := tx.commitWithoutFlush(ctx); err != nil {
		return b, false, err
	}
	var disabledAt *time.Time
	err = tx.q.queryRow(ctx, `SELECT breaker_failures, breaker_opens, breaker_until, disabled_at FROM webhook_endpoints WHERE id = ?`+tx.db.forUpdate(), id).
		Scan(&b.Failures, &b.Opens, &b.Until, &disabledAt)
	b.Until = utcPtr(b.Until)
	return b, disabledAt == nil, err
}

// lockEnabledWebhookEndpoint is lockWebhookEndpoint, ErrNotFound for a
// disabled endpoint.
func (tx *Tx) lockEnabledWebhookEndpoint(ctx context.Context, id string) (webhooks.Breaker, error) {
	b, enabled, err := tx.lockWebhookEndpoint(ctx, id)
	if err == nil && !enabled {
		err = storage.ErrNotFound
	}
	return b, err
}

// AcquireWebhookSlot implements webhooks.Store.
func (db *DB) AcquireWebhookSlot(ctx context.Context, r webhooks.SlotRequest, rules webhooks.Slots) (bool, error) {
	var held bool
	err := db.inTx(ctx, func(tx *Tx) error {
		b, err := tx.lockEnabledWebhookEndpoint(ctx, r.EndpointID)
		if err != nil {
			return err
		}
		var mine, others int
		if err := tx.q.queryRow(ctx, `SELECT COUNT(CASE WHEN job_id = ? THEN 1 END), COUNT(CASE WHEN job_id <> ? AND expires_at > `+db.dbAt()+` THEN 1 END)
			FROM webhook_slots WHERE endpoint_id = ?`, r.JobID, r.JobID, db.dbAtArg(0), r.EndpointID).Scan(&mine, &others); err != nil {
			return err
		}
		limit := rules.Limit(b, tx.now)
		if mine > 0 && limit == 0 {
			limit = 1 // the probe, handed its slot for when the breaker half-opens, is early by a moment
		}
		if others < limit {
			held = true
			_, err = tx.q.exec(ctx, `INSERT INTO webhook_slots (endpoint_id, job_id, expires_at) VALUES (?, ?, `+db.dbAt()+`)
				ON CONFLICT (endpoint_id, job_id) DO UPDATE SET expires_at = excluded.expires_at`, r.EndpointID, r.JobID, db.dbAtArg(rules.LeaseTTL))
			return err
		}
		var event string
		err = tx.q.queryRow(ctx, `SELECT id FROM webhook_events WHERE id = ?`, r.EventID).Scan(&event)
		if errors.Is(err, storage.ErrNotFound) {
			// Pruned, or its account deleted: nothing to wait for, and a
			// slot handed to this job goes on to the next.
			return tx.releaseWebhookSlot(ctx, r.EndpointID, r.JobID, b, rules)
		}
		if err != nil {
			return err
		}
		if mine > 0 {
			// A slot handed over that lapsed and was taken: wait again.
			if _, err := tx.q.exec(ctx, `DELETE FROM webhook_slots WHERE endpoint_id = ? AND job_id = ?`, r.EndpointID, r.JobID); err != nil {
				return err
			}
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO webhook_parked (endpoint_id, event_id, attempts, parked_at) VALUES (?, ?, ?, ?)`,
			r.EndpointID, r.EventID, r.Attempts, tx.now); err != nil {
			return err
		}
		// An open breaker with nothing holding a slot: no release will
		// come to hand one over, so the probe is scheduled now.
		return tx.handOffWebhookSlots(ctx, r.EndpointID, b, rules)
	})
	return held, err
}

// ReleaseWebhookSlot implements webhooks.Store.
func (db *DB) ReleaseWebhookSlot(ctx context.Context, endpointID string, jobID int64, rules webhooks.Slots) error {
	return db.inTx(ctx, func(tx *Tx) error {
		b, err := tx.lockEnabledWebhookEndpoint(ctx, endpointID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil // deleted or disabled: its slots went with it
		}
		if err != nil {
			return err
		}
		return tx.releaseWebhookSlot(ctx, endpointID, jobID, b, rules)
	})
}

// releaseWebhookSlot frees the job's slot and hands the free ones on;
// the endpoint's row is locked.
func (tx *Tx) releaseWebhookSlot(ctx context.Context, endpointID string, jobID int64, b webhooks.Breaker, rules webhooks.Slots) error {
	if _, err := tx.q.exec(ctx, `DELETE FROM webhook_slots WHERE endpoint_id = ? AND (job_id = ? OR expires_at <= `+tx.db.dbAt()+`)`, endpointID, jobID, tx.db.dbAtArg(0)); err != nil {
		return err
	}
	return tx.handOffWebhookSlots(ctx, endpointID, b, rules)
}

// handOffWebhookSlots gives each slot free under rules to the oldest
// parked delivery, as a new job holding it; with the breaker open and no
// slot held, the oldest parked delivery becomes the probe, a job
// scheduled for when the breaker half-opens. The endpoint's row is
// locked.
func (tx *Tx) handOffWebhookSlots(ctx context.Context, endpointID string, b webhooks.Breaker, rules webhooks.Slots) error {
	var held, parked int
	if err := tx.q.queryRow(ctx, `SELECT (SELECT COUNT(*) FROM webhook_slots WHERE endpoint_id = ? AND expires_at > `+tx.db.dbAt()+`),
		CASE WHEN EXISTS (SELECT 1 FROM webhook_parked WHERE endpoint_id = ?) THEN 1 ELSE 0 END`, endpointID, tx.db.dbAtArg(0), endpointID).Scan(&held, &parked); err != nil {
		return err
	}
	if parked == 0 {
		return nil
	}
	free, at := rules.Limit(b, tx.now)-held, tx.now
	if rules.Open(b, tx.now) && held == 0 {
		free, at = 1, *b.Until
	}
	for range max(free, 0) {
		args := webhooks.DeliveryArgs{EndpointID: endpointID}
		err := tx.q.queryRow(ctx, `DELETE FROM webhook_parked WHERE id = (SELECT id FROM webhook_parked WHERE endpoint_id = ? ORDER BY id LIMIT 1)
			RETURNING event_id, attempts`, endpointID).Scan(&args.EventID, &args.Attempts)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		opts := &river.InsertOpts{Queue: webhooks.Queue}
		if at.After(tx.now) {
			opts.ScheduledAt = at // the probe; any ScheduledAt makes the job wait for River's scheduler
		}
		job, err := tx.InsertJob(ctx, args, opts)
		if err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO webhook_slots (endpoint_id, job_id, expires_at) VALUES (?, ?, `+tx.db.dbAt()+`)`, endpointID, job, tx.db.dbAtArg(at.Sub(tx.now)+rules.ReserveTTL)); err != nil {
			return err
		}
	}
	return nil
}

// SweepWebhookSlots hands free slots to parked deliveries on every
// endpoint that has some: the safety net, should a slot lapse with no
// release to hand it on (housekeeping runs it).
func (db *DB) SweepWebhookSlots(ctx context.Context, rules webhooks.Slots) (int, error) {
	rs, err := db.conn().query(ctx, `SELECT DISTINCT endpoint_id FROM webhook_parked`)
	ids, err := collect(rs, err, func(r row) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		err := db.inTx(ctx, func(tx *Tx) error {
			b, err := tx.lockEnabledWebhookEndpoint(ctx, id)
			if err != nil {
				return err
			}
			return tx.handOffWebhookSlots(ctx, id, b, rules)
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return 0, err
		}
	}
	return len(ids), nil
}

// WebhookSlots counts an endpoint's live slots and parked deliveries
// (tests).
func (db *DB) WebhookSlots(ctx context.Context, endpointID string) (held, parked int, err error) {
	err = db.conn().queryRow(ctx, `SELECT (SELECT COUNT(*) FROM webhook_slots WHERE endpoint_id = ? AND expires_at > `+db.dbAt()+`), (SELECT COUNT(*) FROM webhook_parked WHERE endpoint_id = ?)`,
		endpointID, db.dbAtArg(0), endpointID).Scan(&held, &parked)
	return held, parked, err
}

// EnqueueWebhookDelivery implements webhooks.Store.
func (db *DB) EnqueueWebhookDelivery(ctx context.Context, endpointID, eventID string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		var id string
		if err := tx.q.queryRow(ctx, `SELECT id FROM webhook_events WHERE id = ?`, eventID).Scan(&id); err != nil {
			return err
		}
		_, err := tx.InsertJob(ctx, webhooks.DeliveryArgs{EventID: eventID, EndpointID: endpointID}, nil)
		return err
	})
}

// SendWebhookEvent implements webhooks.Store.
func (db *DB) SendWebhookEvent(ctx context.Context, endpointID string, ev webhooks.Event) error {
	return db.inTx(ctx, func(tx *Tx) error {
		var id string
		if err := tx.q.queryRow(ctx, `SELECT id FROM webhook_endpoints WHERE id = ?`, endpointID).Scan(&id); err != nil {
			return err
		}
		if err := tx.insertEvent(ctx, ev); err != nil {
			return err
		}
		_, err := tx.InsertJob(ctx, webhooks.DeliveryArgs{EventID: ev.ID, EndpointID: endpointID}, nil)
		return err
	})
}

var _ webhooks.Store = (*DB)(nil)

// scrubAccountEvents is what deleting an account does to the outbox, in
// the deletion's transaction: every event about the account (its userId:
// user.created with its email, devices, sessions…) is deleted, with its
// parked deliveries (its pending jobs find it gone); another account's
// event that names it (referrerId) loses that field. The user.deleted
// event written after it is all that remains. Run it after the deletion
// has deleted the account's rows: on PostgreSQL a change writing an event
// about the account holds a row those deletions wait for, so its event
// has committed, and is seen here, by then.
func (tx *Tx) scrubAccountEvents(ctx context.Context, accountID string) error {
	type named struct {
		id      string
		payload string
	}
	rs, err := tx.q.query(ctx, `SELECT e.id, e.payload FROM webhook_events e JOIN webhook_event_accounts n ON n.event_id = e.id WHERE n.account_id = ?`, accountID)
	events, err := collect(rs, err, func(r row) (named, error) {
		var e named
		return e, r.Scan(&e.id, &e.payload)
	})
	if err != nil {
		return err
	}
	for _, e := range events {
		out, drop, err := webhooks.Scrub([]byte(e.payload), accountID)
		if err != nil {
			return err
		}
		if drop {
			for _, del := range []string{
				`DELETE FROM webhook_parked WHERE event_id = ?`,
				`DELETE FROM webhook_event_accounts WHERE event_id = ?`,
				`DELETE FROM webhook_events WHERE id = ?`,
			} {
				if _, err := tx.q.exec(ctx, del, e.id); err != nil {
					return err
				}
			}
			continue
		}
		if _, err := tx.q.exec(ctx, `UPDATE webhook_events SET payload = ? WHERE id = ?`, string(out), e.id); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `DELETE FROM webhook_event_accounts WHERE account_id = ? AND event_id = ?`, accountID, e.id); err != nil {
			return err
		}
	}
	return nil
}
