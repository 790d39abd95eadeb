package sqlstore

import (
	"context"
	"strings"

	"github.com/herald-vpn/herald/internal/storage"
)

// livePayload is a NOTIFY payload: the sending process, the topic and the
// event, one per line (a topic has no newline; an event may). The origin
// lets a process skip its own events, which it delivered itself.
func (db *DB) livePayload(topic string, data []byte) string {
	return encodeLivePayload(db.origin, topic, data)
}

func encodeLivePayload(origin, topic string, data []byte) string {
	return origin + "\n" + topic + "\n" + string(data)
}

// decodeLivePayload reads a payload encodeLivePayload wrote; ok is false
// for anything else.
func decodeLivePayload(payload string) (origin, topic string, data []byte, ok bool) {
	origin, rest, ok := strings.Cut(payload, "\n")
	if !ok {
		return "", "", nil, false
	}
	topic, event, ok := strings.Cut(rest, "\n")
	if !ok {
		return "", "", nil, false
	}
	return origin, topic, []byte(event), true
}

// OnLive registers f to be told, in this process, of every live event a
// transaction of this store commits (on PostgreSQL other processes learn
// of them through WatchLive).
func (db *DB) OnLive(f func(topic string, data []byte)) {
	db.onLive.add(f)
}

// Publish implements live.Bus: on PostgreSQL it sends the event (a
// broadcast's progress, the bot's subscriber changes) to the other
// processes by NOTIFY on the live channel of the store's schema (payloads
// are small: PostgreSQL's limit is 8000 bytes); SQLite is one process, so
// it does nothing.
func (db *DB) Publish(ctx context.Context, topic string, data []byte) error {
	if db.dialect != storage.Postgres {
		return nil
	}
	return notify(ctx, db.conn(), db.channels.live, db.livePayload(topic, data))
}

// notify sends payload on a PostgreSQL channel; inside a transaction,
// PostgreSQL delivers it when the transaction commits.
func notify(ctx context.Context, q querier, channel, payload string) error {
	_, err := q.exec(ctx, `SELECT pg_notify(?, ?)`, channel, payload)
	return err
}

// publish announces a live event when the transaction commits: to other
// processes by NOTIFY (PostgreSQL delivers it at commit, not before), to
// this one through OnLive.
func (tx *Tx) publish(ctx context.Context, topic string, data []byte) error {
	if tx.db.dialect == storage.Postgres {
		if err := notify(ctx, tx.q, tx.db.channels.live, tx.db.livePayload(topic, data)); err != nil {
			return err
		}
	}
	tx.afterCommit = append(tx.afterCommit, func() {
		for _, f := range tx.db.onLive.all() {
			f(topic, data)
		}
	})
	return nil
}

// WatchLive hands deliver every live event other processes publish, until
// ctx ends; after a gap in which some may have been missed it calls
// missed. On PostgreSQL it holds one connection in LISTEN (as
// WatchRevocations does); SQLite returns at once.
func (db *DB) WatchLive(ctx context.Context, deliver func(topic string, data []byte), missed func()) error {
	return db.watchChannel(ctx, db.channels.live, func(payload string) {
		if origin, topic, data, ok := decodeLivePayload(payload); ok && origin != db.origin {
			deliver(topic, data)
		}
	}, missed, func(bool) {})
}
