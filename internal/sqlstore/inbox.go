package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
)

const inboxColumns = `account_id, id, title, body, data, category, created_at, seen_at, read_at, archived_at, expires_at`

func scanInboxItem(r row) (inbox.Item, error) {
	var it inbox.Item
	var data *string
	if err := r.Scan(&it.AccountID, &it.ID, &it.Title, &it.Body, &data, &it.Category, &it.CreatedAt, &it.SeenAt, &it.ReadAt, &it.ArchivedAt, &it.ExpiresAt); err != nil {
		return inbox.Item{}, err
	}
	if data != nil {
		m, err := notifications.DecodeData([]byte(*data))
		if err != nil {
			return inbox.Item{}, err
		}
		it.Data = m
	}
	it.CreatedAt, it.ExpiresAt = it.CreatedAt.UTC(), it.ExpiresAt.UTC()
	it.SeenAt, it.ReadAt, it.ArchivedAt = utcPtr(it.SeenAt), utcPtr(it.ReadAt), utcPtr(it.ArchivedAt)
	return it, nil
}

// KeepInboxItem implements inbox.Store.
func (db *DB) KeepInboxItem(ctx context.Context, it inbox.Item, retention time.Duration) (inbox.Item, error) {
	var data any
	if it.Data != nil {
		b, err := json.Marshal(it.Data)
		if err != nil {
			return inbox.Item{}, err
		}
		data = string(b)
	}
	err := db.inTx(ctx, func(tx *Tx) error {
		it.CreatedAt, it.ExpiresAt = tx.now, tx.now.Add(retention)
		it.SeenAt, it.ReadAt, it.ArchivedAt = nil, nil, nil
		_, err := tx.q.exec(ctx, `INSERT INTO inbox_items (account_id, id, title, body, data, category, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			it.AccountID, it.ID, it.Title, it.Body, data, it.Category, it.CreatedAt, it.ExpiresAt)
		return err
	})
	return it, err
}

// KeepBroadcastInbox implements inbox.Store: one INSERT … SELECT over
// the distinct live accounts with an active device in the job's audience
// (its own audience condition, as the walk reads it) that did not turn
// the job's category off on the inbox channel (a critical category is
// never stored off), in the transaction that marks the job's items
// written. So the items are written once whichever replica's run does it
// and however often a takeover tries again: the mark (inbox_written_at)
// skips the attempt, and the unique (account_id, source_id) would make
// it write nothing anyway.
func (db *DB) KeepBroadcastInbox(ctx context.Context, jobID, itemID string, retention time.Duration) (int64, bool, error) {
	var n int64
	var written bool
	err := db.inTx(ctx, func(tx *Tx) error {
		marked, err := tx.q.exec(ctx, `UPDATE notification_jobs SET inbox_written_at = ? WHERE id = ? AND inbox = TRUE AND inbox_written_at IS NULL`, tx.now, jobID)
		if err != nil || marked == 0 {
			return err
		}
		written = true
		// PostgreSQL types a parameter of a SELECT list as text.
		ts := `?`
		if db.dialect == storage.Postgres {
			ts = `CAST(? AS TIMESTAMPTZ)`
		}
		n, err = tx.q.exec(ctx, `INSERT INTO inbox_items (account_id, id, source_id, title, body, data, category, created_at, expires_at)
			SELECT DISTINCT devices.account_id, ?, j.id, j.subject, j.content, j.data, j.category, `+ts+`, `+ts+`
			FROM devices, notification_jobs j
			WHERE j.id = ? AND devices.active = TRUE AND `+inAudience+`
			AND EXISTS (SELECT 1 FROM accounts acct WHERE acct.id = devices.account_id AND acct.deleted_at IS NULL AND acct.disabled_at IS NULL)
			AND NOT EXISTS (SELECT 1 FROM notification_preferences np WHERE np.account_id = devices.account_id AND np.category = j.category
				AND np.channel = '`+preferences.ChannelInbox+`' AND np.enabled = FALSE)
			ON CONFLICT (account_id, source_id) DO NOTHING`, itemID, tx.now, tx.now.Add(retention), jobID)
		if err != nil {
			return err
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_jobs SET inbox_items = ? WHERE id = ?`, n, jobID)
		return err
	})
	return n, written, err
}

// InboxItems implements inbox.Store.
func (db *DB) InboxItems(ctx context.Context, accountID string, f inbox.Filter, beforeID string, limit int) ([]inbox.Item, error) {
	q := `SELECT ` + inboxColumns + ` FROM inbox_items WHERE account_id = ? AND expires_at > ?`
	args := []any{accountID, db.Now().UTC()}
	if f.Archived {
		q += ` AND archived_at IS NOT NULL`
	} else {
		q += ` AND archived_at IS NULL`
	}
	if f.UnreadOnly {
		q += ` AND read_at IS NULL`
	}
	if beforeID != "" {
		q += ` AND id < ?`
		args = append(args, beforeID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rs, err := db.txOrConn(ctx).query(ctx, q, args...)
	return collect(rs, err, scanInboxItem)
}

// InboxCounts implements inbox.Store.
func (db *DB) InboxCounts(ctx context.Context, accountID string) (inbox.Counts, error) {
	var c inbox.Counts
	err := db.txOrConn(ctx).queryRow(ctx, `SELECT COALESCE(SUM(CASE WHEN seen_at IS NULL THEN 1 ELSE 0 END), 0), COALESCE(SUM(CASE WHEN read_at IS NULL THEN 1 ELSE 0 END), 0)
		FROM inbox_items WHERE account_id = ? AND expires_at > ? AND archived_at IS NULL`, accountID, db.Now().UTC()).Scan(&c.Unseen, &c.Unread)
	return c, err
}

// markSet is the SET clause of mark m (inbox.Implied): each implied mark
// keeps its first time; and the condition of an item that lacks one.
func markSet(m inbox.Mark) (set, lacks string) {
	seen, read, archived := inbox.Implied(m)
	var sets, conds []string
	for _, c := range []struct {
		on  bool
		col string
	}{{seen, "seen_at"}, {read, "read_at"}, {archived, "archived_at"}} {
		if c.on {
			sets = append(sets, c.col+` = COALESCE(`+c.col+`, ?)`)
			conds = append(conds, c.col+` IS NULL`)
		}
	}
	set, lacks = sets[0], conds[0]
	for i := 1; i < len(sets); i++ {
		set += `, ` + sets[i]
		lacks += ` OR ` + conds[i]
	}
	return set, `(` + lacks + `)`
}

// markArgs are the times of markSet's clause.
func markArgs(m inbox.Mark, now time.Time) []any {
	seen, read, archived := inbox.Implied(m)
	var args []any
	for _, on := range []bool{seen, read, archived} {
		if on {
			args = append(args, now)
		}
	}
	return args
}

// MarkInboxItem implements inbox.Store.
func (db *DB) MarkInboxItem(ctx context.Context, accountID, id string, m inbox.Mark) (inbox.Item, error) {
	var it inbox.Item
	err := db.inTx(ctx, func(tx *Tx) error {
		set, _ := markSet(m)
		args := append(markArgs(m, tx.now), accountID, id, tx.now)
		n, err := tx.q.exec(ctx, `UPDATE inbox_items SET `+set+` WHERE account_id = ? AND id = ? AND expires_at > ?`, args...)
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		it, err = scanInboxItem(tx.q.queryRow(ctx, `SELECT `+inboxColumns+` FROM inbox_items WHERE account_id = ? AND id = ?`, accountID, id))
		return err
	})
	return it, err
}

// MarkInboxItems implements inbox.Store.
func (db *DB) MarkInboxItems(ctx context.Context, accountID string, m inbox.Mark, upTo string) (int64, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		set, lacks := markSet(m)
		q := `UPDATE inbox_items SET ` + set + ` WHERE account_id = ? AND expires_at > ? AND ` + lacks
		args := append(markArgs(m, tx.now), accountID, tx.now)
		if upTo != "" {
			q += ` AND id <= ?`
			args = append(args, upTo)
		}
		var err error
		n, err = tx.q.exec(ctx, q, args...)
		return err
	})
	return n, err
}

// PruneInbox implements inbox.Store.
func (db *DB) PruneInbox(ctx context.Context) (int64, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.exec(ctx, `DELETE FROM inbox_items WHERE expires_at <= ?`, tx.now)
		return err
	})
	return n, err
}
