package sqlstore

import (
	"context"
	"strings"

	"github.com/herald-vpn/herald/internal/storage"
)

// revocationChannel is the PostgreSQL channel on which every revocation of
// a session is announced, from the transaction that makes it, to every
// replica's session cache.
const revocationChannel = "herald_revocations"

// revokedAll tells a watcher to forget everything: announcements may have
// been missed. The other kinds are sessions.RevokedSession and
// sessions.RevokedAccount.
const revokedAll = "all"

// OnRevocation registers f to be told, in this process, of every
// revocation this store commits. On PostgreSQL other processes learn of
// them through WatchRevocations.
func (db *DB) OnRevocation(f func(kind, id string)) {
	db.revocationMu.Lock()
	defer db.revocationMu.Unlock()
	db.onRevocation = append(db.onRevocation, f)
}

// revoked announces a revocation: on PostgreSQL by NOTIFY, delivered when
// the transaction commits; in this process after the commit.
func (tx *Tx) revoked(ctx context.Context, kind, id string) error {
	if tx.db.dialect == storage.Postgres {
		if _, err := tx.q.exec(ctx, `SELECT pg_notify('`+revocationChannel+`', ?)`, kind+":"+id); err != nil {
			return err
		}
	}
	tx.afterCommit = append(tx.afterCommit, func() {
		tx.db.revocationMu.Lock()
		hooks := tx.db.onRevocation
		tx.db.revocationMu.Unlock()
		for _, f := range hooks {
			f(kind, id)
		}
	})
	return nil
}

// WatchRevocations tells evict of every revocation committed by any
// process, until ctx ends, and tells live whether it is listening (only
// then can a cache trust its entries for long). On PostgreSQL it holds one
// connection in LISTEN and reconnects after a failure, announcing
// that it forgot everything since it may have missed some. SQLite is one process's
// database: it returns at once, never live (OnRevocation covers the
// process itself).
func (db *DB) WatchRevocations(ctx context.Context, evict func(kind, id string), live func(bool)) error {
	return db.watchChannel(ctx, revocationChannel, func(payload string) {
		if kind, id, ok := strings.Cut(payload, ":"); ok {
			evict(kind, id)
		}
	}, func() { evict(revokedAll, "") }, live)
}
