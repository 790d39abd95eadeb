package sqlstore

import (
	"time"

	"github.com/herald-vpn/herald/internal/storage"
)

// Leases (broadcasts, messenger broadcasts, the Telegram poller, code
// sends, webhook slots) are written and compared with the database's
// clock, never a replica's: replicas whose clocks disagree still agree on
// whether a lease has lapsed, so a replica whose clock runs ahead cannot
// take over a live lease, and one whose clock runs behind does not hold a
// dead one longer (docs/operations.md, "Clocks").
//
// dbAt is SQL for "the database's clock plus the duration given by its one
// argument" (see dbAtArg): on PostgreSQL clock_timestamp() (the server's
// clock, the same for every replica; not now(), which stands still for
// the whole transaction); on SQLite, whose one process is the only writer,
// the argument itself, the process's clock (db.Now) plus the duration.
// Every dialect takes exactly one argument, so a statement's argument list
// is the same on both.
func (db *DB) dbAt() string {
	if db.dialect == storage.Postgres {
		return `(clock_timestamp() + CAST(? AS bigint) * INTERVAL '1 microsecond')`
	}
	return `?`
}

// dbAtArg is dbAt's argument for the database's clock plus d.
func (db *DB) dbAtArg(d time.Duration) any {
	if db.dialect == storage.Postgres {
		if db.dbShift != nil {
			d += db.dbShift()
		}
		return d.Microseconds()
	}
	return db.Now().UTC().Add(d)
}

// UseTestClock is for tests that fake time: the store's clock becomes now,
// and on PostgreSQL the database's clock, as leases read it, moves with
// it from this call on (clock_timestamp() plus however far now has moved
// past the real time elapsed since), so a test that advances now past a
// lease sees it lapse on both databases, through the same statements.
func (db *DB) UseTestClock(now func() time.Time) {
	start, real := now(), time.Now()
	db.Now = now
	db.dbShift = func() time.Duration { return now().Sub(start) - time.Since(real) }
}

// dbUntilArg is dbAt's argument for a lease end that the caller computed
// on its own clock (db.Now, the clock the services share): the remaining
// duration is kept, and the database's clock is where it starts.
func (db *DB) dbUntilArg(until time.Time) any {
	return db.dbAtArg(until.Sub(db.Now()))
}

// pgDBAt is dbAt inside PostgreSQL-only statements written with $n
// placeholders: the database's clock plus the microseconds of $n.
func pgDBAt(n string) string {
	return `(clock_timestamp() + CAST(` + n + ` AS bigint) * INTERVAL '1 microsecond')`
}
