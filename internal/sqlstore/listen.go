package sqlstore

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
)

// watchChannel holds one PostgreSQL connection in LISTEN on channel until
// ctx ends, handing each notification's payload to deliver. Whenever
// notifications may have been missed (before LISTEN took effect, after a
// lost connection) it calls missed, and live tells whether it is
// listening. It reconnects a second after a failure. SQLite has no
// NOTIFY: it returns at once, never live.
func (db *DB) watchChannel(ctx context.Context, channel string, deliver func(payload string), missed func(), live func(bool)) error {
	if db.dialect != storage.Postgres {
		live(false)
		return nil
	}
	for ctx.Err() == nil {
		err := db.listen(ctx, channel, deliver, missed, live)
		live(false)
		missed()
		if ctx.Err() != nil {
			break
		}
		db.health.note(translate(err))
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	return nil
}

func (db *DB) listen(ctx context.Context, channel string, deliver func(string), missed func(), live func(bool)) error {
	c, err := db.acquire(ctx)
	if err != nil {
		return err
	}
	// The connection is taken out of the pool for good: it stays in LISTEN.
	conn := c.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return err
	}
	// Anything announced before LISTEN took effect was missed.
	missed()
	live(true)
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		deliver(n.Payload)
	}
}
