package sqlstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/storage"
)

const subscriberColumns = `chat_id, username, first_name, start_payload, status, subscribed_since, updated_at, user_id`

func scanSubscriber(r row) (messenger.Subscriber, error) {
	var s messenger.Subscriber
	var id int64
	var status string
	var userID *string
	if err := r.Scan(&id, &s.Username, &s.FirstName, &s.StartPayload, &status, &s.SubscribedSince, &s.UpdatedAt, &userID); err != nil {
		return messenger.Subscriber{}, err
	}
	if userID != nil {
		s.UserID = *userID
	}
	s.ChatID = strconv.FormatInt(id, 10)
	s.Status = messenger.SubscriberStatus(status)
	s.SubscribedSince = s.SubscribedSince.UTC()
	s.UpdatedAt = s.UpdatedAt.UTC()
	return s, nil
}

// ApplyTelegramUpdate implements messenger.Store: the update id is recorded and
// the change applied in one transaction, so a redelivered update (even
// concurrently, on another replica) changes nothing. Prune removes ids
// older than messenger.UpdateRetention.
func (db *DB) ApplyTelegramUpdate(ctx context.Context, updateID int64, change *messenger.Change) (messenger.Outcome, error) {
	var out messenger.Outcome
	err := db.inTx(ctx, func(tx *Tx) error {
		out = messenger.Outcome{}
		n, err := tx.q.exec(ctx, `INSERT INTO telegram_updates (update_id, processed_at) VALUES (?, ?) ON CONFLICT (update_id) DO NOTHING`, updateID, tx.now)
		if err != nil {
			return err
		}
		if n == 0 {
			out.Duplicate = true
			return nil
		}
		if change == nil {
			return nil
		}
		out, err = tx.applyTelegramChange(ctx, *change)
		return err
	})
	return out, err
}

// ApplySubscriberChange implements messenger.Store.
func (db *DB) ApplySubscriberChange(ctx context.Context, change messenger.Change) (messenger.Outcome, error) {
	var out messenger.Outcome
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		out, err = tx.applyTelegramChange(ctx, change)
		return err
	})
	return out, err
}

// applyTelegramChange reads the chat's row under lock, asks the domain
// rule what it becomes and writes that.
func (tx *Tx) applyTelegramChange(ctx context.Context, c messenger.Change) (messenger.Outcome, error) {
	var out messenger.Outcome
	prev, err := scanSubscriber(tx.q.queryRow(ctx, `SELECT `+subscriberColumns+` FROM telegram_subscribers WHERE chat_id = ?`+tx.db.forUpdate(), c.ChatID))
	switch {
	case err == nil:
		out.Before = &prev
	case !errors.Is(err, storage.ErrNotFound):
		return out, err
	}
	out.After = out.Before
	if c.Kind == messenger.Subscribe && c.LinkTokenHash != "" {
		if out.Link, c.LinkUserID, err = tx.consumeLinkToken(ctx, c.LinkTokenHash); err != nil {
			return out, err
		}
	}
	next := c.Apply(out.Before, tx.now)
	if next == nil {
		return out, nil
	}
	if next.UserID != "" {
		// One chat per account: linking this chat moves the link here.
		if _, err := tx.q.exec(ctx, `UPDATE telegram_subscribers SET user_id = NULL WHERE user_id = ? AND chat_id <> ?`, next.UserID, c.ChatID); err != nil {
			return out, err
		}
	}
	_, err = tx.q.exec(ctx, `INSERT INTO telegram_subscribers (`+subscriberColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (chat_id) DO UPDATE SET username = excluded.username, first_name = excluded.first_name,
			start_payload = excluded.start_payload, status = excluded.status,
			subscribed_since = excluded.subscribed_since, updated_at = excluded.updated_at, user_id = excluded.user_id`,
		c.ChatID, next.Username, next.FirstName, next.StartPayload, string(next.Status), next.SubscribedSince, next.UpdatedAt, nullable(next.UserID))
	if err != nil {
		return out, err
	}
	if err := tx.publish(ctx, messenger.EventsTopic, messenger.EncodeEvent(c.Kind, *next)); err != nil {
		return out, err
	}
	out.After, out.Changed = next, true
	return out, nil
}

// consumeLinkToken marks the link token used, once, and returns its
// account; an expired, used or unknown token links nothing.
func (tx *Tx) consumeLinkToken(ctx context.Context, hash string) (messenger.LinkResult, string, error) {
	var userID string
	var expiresAt time.Time
	var usedAt *time.Time
	err := tx.q.queryRow(ctx, `SELECT user_id, expires_at, used_at FROM telegram_link_tokens WHERE token_hash = ?`+tx.db.forUpdate(), hash).Scan(&userID, &expiresAt, &usedAt)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return messenger.LinkNotFound, "", nil
	case err != nil:
		return "", "", err
	case usedAt != nil:
		return messenger.LinkUsed, "", nil
	case !tx.now.Before(expiresAt):
		return messenger.LinkExpired, "", nil
	}
	if _, err := tx.q.exec(ctx, `UPDATE telegram_link_tokens SET used_at = ? WHERE token_hash = ?`, tx.now, hash); err != nil {
		return "", "", err
	}
	return messenger.Linked, userID, nil
}

// CreateTelegramLinkToken implements messenger.Store.
func (db *DB) CreateTelegramLinkToken(ctx context.Context, userID, tokenHash string, expiresAt time.Time) error {
	_, err := db.conn().exec(ctx, `INSERT INTO telegram_link_tokens (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)`,
		tokenHash, userID, expiresAt, db.Now())
	return err
}

// UnlinkTelegramChat implements messenger.Store.
func (db *DB) UnlinkTelegramChat(ctx context.Context, userID string) (bool, error) {
	n, err := db.conn().exec(ctx, `UPDATE telegram_subscribers SET user_id = NULL, updated_at = ? WHERE user_id = ?`, db.Now(), userID)
	return n > 0, err
}

// LinkedTelegramChat implements messenger.Store.
func (db *DB) LinkedTelegramChat(ctx context.Context, userID string) (messenger.Subscriber, error) {
	return scanSubscriber(db.conn().queryRow(ctx, `SELECT `+subscriberColumns+` FROM telegram_subscribers WHERE user_id = ?`, userID))
}

// LinkedTelegramChats implements messenger.Store: one query for each 500
// users.
func (db *DB) LinkedTelegramChats(ctx context.Context, userIDs []string) (map[string]messenger.Subscriber, error) {
	out := make(map[string]messenger.Subscriber, len(userIDs))
	for chunk := range chunks(anys(userIDs), batchIDs) {
		rs, err := db.conn().query(ctx, `SELECT `+subscriberColumns+` FROM telegram_subscribers WHERE user_id IN (`+placeholders(len(chunk))+`)`, chunk...)
		err = each(rs, err, func(r row) error {
			s, err := scanSubscriber(r)
			if err == nil {
				out[s.UserID] = s
			}
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// LastTelegramUpdateID implements messenger.Store.
func (db *DB) LastTelegramUpdateID(ctx context.Context, since time.Time) (int64, bool, error) {
	var id *int64
	if err := db.conn().queryRow(ctx, `SELECT MAX(update_id) FROM telegram_updates WHERE processed_at >= ?`, since).Scan(&id); err != nil {
		return 0, false, err
	}
	if id == nil {
		return 0, false, nil
	}
	return *id, true, nil
}

// CountTelegramSubscribers implements messenger.Store.
func (db *DB) CountTelegramSubscribers(ctx context.Context) (int, error) {
	var n int
	err := db.conn().queryRow(ctx, `SELECT COUNT(*) FROM telegram_subscribers WHERE status = ?`, string(messenger.Subscribed)).Scan(&n)
	return n, err
}

// ListTelegramSubscribers implements messenger.Store with keyset pagination on
// (subscribed_since, chat_id), newest first.
func (db *DB) ListTelegramSubscribers(ctx context.Context, status messenger.SubscriberStatus, after *messenger.Position, limit int) ([]messenger.Subscriber, error) {
	q := `SELECT ` + subscriberColumns + ` FROM telegram_subscribers WHERE 1 = 1`
	var args []any
	if status != "" {
		q += ` AND status = ?`
		args = append(args, string(status))
	}
	if after != nil {
		q += ` AND (subscribed_since < ? OR (subscribed_since = ? AND chat_id < ?))`
		args = append(args, after.Since, after.Since, after.ChatID)
	}
	q += ` ORDER BY subscribed_since DESC, chat_id DESC LIMIT ?`
	args = append(args, limit)
	rs, err := db.conn().query(ctx, q, args...)
	return collect(rs, err, scanSubscriber)
}

// AcquireLease implements messenger.Store: one conditional upsert that
// succeeds for a new lease, a renewal by the holder or an expired lease,
// so two replicas cannot both hold it.
func (db *DB) AcquireLease(ctx context.Context, name, holder string, until time.Time) (bool, error) {
	// The lease's times are the database's clock (clock.go).
	n, err := db.conn().exec(ctx, `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, `+db.dbAt()+`)
		ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
		WHERE leases.holder = excluded.holder OR leases.expires_at < `+db.dbAt(), name, holder, db.dbUntilArg(until), db.dbAtArg(0))
	return n == 1, err
}

// ReleaseLease implements messenger.Store.
func (db *DB) ReleaseLease(ctx context.Context, name, holder string) error {
	_, err := db.conn().exec(ctx, `DELETE FROM leases WHERE name = ? AND holder = ?`, name, holder)
	return err
}

var _ messenger.Store = (*DB)(nil)

// nullable stores "" as NULL.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
