package sqlstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-vpn/herald/internal/storage"
)

// notifyChannels are the NOTIFY channels of one schema. NOTIFY reaches
// every session of the database, so deployments that share a server in
// schemas of their own (as Migrate's per-schema lock allows) would hear
// each other's revocations and live events, such as another deployment's
// progress for a job of the same ID, on channels named for Herald alone.
type notifyChannels struct {
	live, revocations string
}

// channelsOf names the channels of schema: a digest of its name keeps
// them within PostgreSQL's 63-byte identifiers whatever the name's length.
func channelsOf(schema string) notifyChannels {
	sum := sha256.Sum256([]byte(schema))
	suffix := "_" + hex.EncodeToString(sum[:8])
	return notifyChannels{live: "herald_live" + suffix, revocations: "herald_revocations" + suffix}
}

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
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
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
