package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
)

// revokedAll tells a watcher to forget everything: announcements may have
// been missed. The other kinds are sessions.RevokedSession and
// sessions.RevokedAccount.
const revokedAll = "all"

// OnRevocation registers f to be told, in this process, of every
// revocation this store commits. On PostgreSQL other processes learn of
// them through WatchRevocations.
func (db *DB) OnRevocation(f func(kind, id string)) {
	db.onRevocation.add(f)
}

// revoked announces a revocation: on PostgreSQL by NOTIFY on the
// revocation channel of the store's schema, to every replica's session
// cache, delivered when the transaction commits; on SQLite by moving the
// revocation epoch, which every server process polls; in this process
// after the commit.
func (tx *Tx) revoked(ctx context.Context, kind, id string) error {
	var err error
	if tx.db.dialect == storage.Postgres {
		err = notify(ctx, tx.q, tx.db.channels.revocations, encodeRevocation(kind, id))
	} else {
		_, err = tx.q.exec(ctx, `UPDATE revocation_epoch SET n = n + 1 WHERE id = 1`)
	}
	if err != nil {
		return err
	}
	tx.afterCommit = append(tx.afterCommit, func() {
		for _, f := range tx.db.onRevocation.all() {
			f(kind, id)
		}
	})
	return nil
}

// WatchRevocations tells evict of every revocation committed by any
// process, until ctx ends, and tells live whether it is listening (only
// then can a cache trust its entries for long). On PostgreSQL it holds one
// connection in LISTEN and reconnects after a failure, announcing
// that it forgot everything since it may have missed some. On SQLite it
// polls the revocation epoch every EpochPoll and announces "forget
// everything" when it moved (the revocation's own process was told at
// once, by OnRevocation).
func (db *DB) WatchRevocations(ctx context.Context, evict func(kind, id string), live func(bool)) error {
	if db.dialect != storage.Postgres {
		return db.pollEpoch(ctx, func() { evict(revokedAll, "") }, live)
	}
	return db.watchChannel(ctx, db.channels.revocations, func(payload string) {
		if kind, id, ok := decodeRevocation(payload); ok {
			evict(kind, id)
		}
	}, func() { evict(revokedAll, "") }, live)
}

// encodeRevocation is the NOTIFY payload of a revocation: its kind (which
// has no colon) and the ID.
func encodeRevocation(kind, id string) string { return kind + ":" + id }

// decodeRevocation reads a payload encodeRevocation wrote; ok is false
// for anything else.
func decodeRevocation(payload string) (kind, id string, ok bool) {
	return strings.Cut(payload, ":")
}

// EpochPoll is how often a server on SQLite reads the revocation epoch: a
// revocation made by another process (the CLI) is honoured within it.
const EpochPoll = 250 * time.Millisecond

// pollEpoch reads the revocation epoch every EpochPoll until ctx ends,
// calling changed when it moved, and live(true) only while reads succeed.
func (db *DB) pollEpoch(ctx context.Context, changed func(), live func(bool)) error {
	t := time.NewTicker(EpochPoll)
	defer t.Stop()
	defer live(false)
	last := int64(-1)
	for {
		var n int64
		if err := db.conn().queryRow(ctx, `SELECT n FROM revocation_epoch WHERE id = 1`).Scan(&n); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			live(false)
			changed()
			last = -1
		} else if n != last {
			// The first read, or a revocation since the last: what was
			// cached may be stale. Forget it before trusting the cache.
			changed()
			if last < 0 {
				live(true)
			}
			last = n
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
