package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// emitEvent is the outbox: it writes an event of type typ in the
// transaction of the change that causes it, and a delivery job for each
// enabled endpoint subscribed to typ, so an event is delivered if and only
// if its change commits. data holds ids and changed fields, never a
// password, code or token. Call it in the transaction of the change, only
// when the change changed something (an idempotent repeat writes no
// event), for example:
//
//	tx.emitEvent(ctx, webhooks.UserDisabled, map[string]any{"userId": id, "disabled": true, "reason": reason})
//	tx.emitEvent(ctx, webhooks.UserDeleted, map[string]any{"userId": id})
//	tx.emitEvent(ctx, webhooks.UserSubscriptionChanged, map[string]any{"userId": id, "plan": plan, "expiresAt": expires.UTC()})
func (tx *Tx) emitEvent(ctx context.Context, typ string, data map[string]any) error {
	ev, err := webhooks.NewEvent(typ, tx.now, data)
	if err != nil {
		return err
	}
	if err := tx.insertEvent(ctx, ev); err != nil {
		return err
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

// DeleteWebhookEndpoint implements webhooks.Store; its attempts go with
// it, and its pending jobs find it gone.
func (db *DB) DeleteWebhookEndpoint(ctx context.Context, id string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `DELETE FROM webhook_attempts WHERE endpoint_id = ?`, id); err != nil {
			return err
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

// SetWebhookEndpointDisabled implements webhooks.Store.
func (db *DB) SetWebhookEndpointDisabled(ctx context.Context, id string, disabled bool, reason string) (webhooks.Endpoint, error) {
	var e webhooks.Endpoint
	err := db.inTx(ctx, func(tx *Tx) error {
		var n int64
		var err error
		if disabled {
			n, err = tx.q.exec(ctx, `UPDATE webhook_endpoints SET disabled_at = COALESCE(disabled_at, ?), disabled_reason = CASE WHEN disabled_at IS NULL THEN ? ELSE disabled_reason END, updated_at = ? WHERE id = ?`,
				tx.now, reason, tx.now, id)
		} else {
			n, err = tx.q.exec(ctx, `UPDATE webhook_endpoints SET disabled_at = NULL, disabled_reason = '', failing_since = NULL, updated_at = ? WHERE id = ?`, tx.now, id)
		}
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
func (db *DB) RecordWebhookAttempt(ctx context.Context, a webhooks.Attempt) (*time.Time, error) {
	var since *time.Time
	err := db.inTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.exec(ctx, `INSERT INTO webhook_attempts (`+webhookAttemptColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			a.ID, a.EndpointID, a.EventID, a.EventType, a.Attempt, a.StatusCode, a.Duration.Milliseconds(), a.Error, a.CreatedAt); err != nil {
			return err
		}
		var err error
		if a.Succeeded() {
			_, err = tx.q.exec(ctx, `UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL`, a.EndpointID)
			return err
		}
		if _, err = tx.q.exec(ctx, `UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL`, a.CreatedAt, a.EndpointID); err != nil {
			return err
		}
		err = tx.q.queryRow(ctx, `SELECT failing_since FROM webhook_endpoints WHERE id = ?`, a.EndpointID).Scan(&since)
		since = utcPtr(since)
		return err
	})
	return since, err
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
