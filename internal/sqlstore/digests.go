package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

const digestColumns = `id, account_id, category, opened_at, due_at, count, entries`

func scanDigest(r row) (notifications.Digest, error) {
	var d notifications.Digest
	var entries string
	if err := r.Scan(&d.ID, &d.AccountID, &d.Category, &d.OpenedAt, &d.DueAt, &d.Count, &entries); err != nil {
		return notifications.Digest{}, err
	}
	if err := json.Unmarshal([]byte(entries), &d.Entries); err != nil {
		return notifications.Digest{}, fmt.Errorf("digest %s: entries: %w", d.ID, err)
	}
	d.OpenedAt, d.DueAt = d.OpenedAt.UTC(), d.DueAt.UTC()
	return d, nil
}

// AddToDigest implements notifications.Store. Opening is an insert that
// the open digest's unique index turns into nothing when another send
// opened it first; then the open one is locked and folded into. A digest
// closed between the two (its job started) is tried again: the next
// insert opens a new one.
func (db *DB) AddToDigest(ctx context.Context, accountID, category string, e notifications.DigestEntry, due time.Time, job func(id string) river.JobArgs) (notifications.Digest, error) {
	var d notifications.Digest
	err := db.inTx(ctx, func(tx *Tx) error {
		for range 3 {
			id, err := uuid.NewV7()
			if err != nil {
				return err
			}
			// To the microsecond, as PostgreSQL keeps it: every send of
			// the digest is told the same time.
			fresh := notifications.Digest{ID: id.String(), AccountID: accountID, Category: category,
				OpenedAt: tx.now.Truncate(time.Microsecond), DueAt: due.UTC().Truncate(time.Microsecond)}.Add(e)
			entries, err := json.Marshal(fresh.Entries)
			if err != nil {
				return err
			}
			n, err := tx.q.exec(ctx, `INSERT INTO notification_digests (`+digestColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
				fresh.ID, accountID, category, fresh.OpenedAt, fresh.DueAt, fresh.Count, string(entries))
			if err != nil {
				return err
			}
			if n == 1 {
				d = fresh
				_, err := tx.InsertJob(ctx, job(fresh.ID), &river.InsertOpts{ScheduledAt: fresh.DueAt})
				return err
			}
			open, err := scanDigest(tx.q.queryRow(ctx, `SELECT `+digestColumns+` FROM notification_digests
				WHERE account_id = ? AND category = ? AND NOT sending`+db.forUpdate(), accountID, category))
			if errors.Is(err, storage.ErrNotFound) {
				continue // closed meanwhile: open the next
			} else if err != nil {
				return err
			}
			d = open.Add(e)
			if entries, err = json.Marshal(d.Entries); err != nil {
				return err
			}
			_, err = tx.q.exec(ctx, `UPDATE notification_digests SET count = ?, entries = ? WHERE id = ?`, d.Count, string(entries), d.ID)
			return err
		}
		return errors.New("the open digest kept closing while a send joined it")
	})
	return d, err
}

// StartDigest implements notifications.Store.
func (db *DB) StartDigest(ctx context.Context, id string) (notifications.Digest, error) {
	var d notifications.Digest
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		if d, err = scanDigest(tx.q.queryRow(ctx, `SELECT `+digestColumns+` FROM notification_digests WHERE id = ?`+db.forUpdate(), id)); err != nil {
			return err
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_digests SET sending = TRUE WHERE id = ?`, id)
		return err
	})
	return d, err
}

// DeleteDigest implements notifications.Store.
func (db *DB) DeleteDigest(ctx context.Context, id string) error {
	_, err := db.conn().exec(ctx, `DELETE FROM notification_digests WHERE id = ?`, id)
	return err
}
