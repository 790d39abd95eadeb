// Package faults runs the real herald binary against a PostgreSQL cluster
// and a redis-server the suite starts itself (test/harness's Postgres and
// Redis: their own ports, their own temporary directories), and breaks
// them under load: PostgreSQL restarted and its backends terminated in
// the middle of a broadcast, webhook deliveries, code emails and a
// messenger broadcast; Redis restarted and flushed; PostgreSQL refusing
// connections when a replica starts. Only the suite's own servers are
// ever stopped, so it disturbs neither the machine's servers nor other
// tests.
//
// Every wait is bounded, by a generous deadline for an eventual
// condition; no figure here is a measurement of speed.
package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"github.com/herald-vpn/herald/test/harness"
)

func TestMain(m *testing.M) { harness.Main(m) }

// The suite's own servers do what the tests ask of them: PostgreSQL
// restarts, stops and starts on the same port and terminates the sessions
// of one application; Redis restarts on its port empty, and flushes.
func TestOwnServers(t *testing.T) {
	pg := harness.StartPostgres(t)
	url := pg.CreateDatabase(t, "probe", "probe-app")
	ctx := context.Background()
	query := func(conn *pgx.Conn) error {
		var one int
		return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
	}
	connect := func() *pgx.Conn {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect to %s: %v", url, err)
		}
		t.Cleanup(func() { conn.Close(ctx) })
		return conn
	}

	conn := connect()
	if n := pg.TerminateBackends(t, "probe-app"); n != 1 {
		t.Fatalf("pg_terminate_backend ended %d sessions of probe-app, want 1", n)
	}
	var pgErr *pgconn.PgError
	if err := query(conn); err == nil {
		t.Fatal("a terminated session still answers")
	} else if errors.As(err, &pgErr) && pgErr.Code != "57P01" {
		t.Fatalf("a terminated session: %v, want SQLSTATE 57P01 or a closed connection", err)
	}

	conn = connect()
	pg.Restart(t)
	if err := query(conn); err == nil {
		t.Fatal("a session survived a restart")
	}
	if err := query(connect()); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	pg.Stop(t)
	if c, err := pgx.Connect(ctx, url); err == nil {
		c.Close(ctx)
		t.Fatal("the stopped server accepts connections")
	}
	pg.Start(t)
	if err := query(connect()); err != nil {
		t.Fatalf("after stop and start: %v", err)
	}

	rd := harness.StartRedis(t)
	if err := rd.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	rd.FlushAll(t)
	if err := rd.Do(ctx, "GET", "k"); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after FLUSHALL: %v, want nil reply", err)
	}
	// Set again, so that the empty GET after the restart means nothing
	// was saved, not nothing was set.
	if err := rd.Do(ctx, "SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	rd.Stop(t)
	if err := rd.Do(ctx, "PING"); err == nil {
		t.Fatal("the stopped Redis answers")
	}
	start := time.Now()
	rd.Start(t)
	if err := rd.Do(ctx, "GET", "k"); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET after a restart: %v, want nil reply (nothing is saved)", err)
	}
	t.Logf("Redis back in %s", time.Since(start).Round(time.Millisecond))
}
