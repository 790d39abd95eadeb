// Package sqlstoretest gives each test a fresh, real database: a SQLite file
// in the test's temporary directory, and a PostgreSQL schema of its own
// (dropped afterwards) on the server of HERALD_TEST_POSTGRES_URL. Without
// that variable the PostgreSQL tests are skipped, saying so, rather than
// left out: a run shows what it did not test.
package sqlstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/jackc/pgx/v5"
)

// Dialect is "sqlite" or "postgres".
type Dialect string

// Dialects returns every database Herald runs on. A test of one this run
// cannot reach skips (Require, NewURL, Each).
func Dialects() []Dialect { return []Dialect{"sqlite", "postgres"} }

// Require skips the test, with the reason, when this run has no database
// of dialect d.
func Require(t testing.TB, d Dialect) {
	t.Helper()
	if d == "postgres" && os.Getenv("HERALD_TEST_POSTGRES_URL") == "" {
		t.Skip("PostgreSQL not tested: HERALD_TEST_POSTGRES_URL is not set")
	}
}

// Each runs fn as a subtest once per dialect, with a fresh database URL;
// the subtest of a dialect this run cannot reach is skipped.
func Each(t *testing.T, fn func(t *testing.T, databaseURL string)) {
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			Require(t, d)
			fn(t, NewURL(t, d))
		})
	}
}

// NewURL returns the HERALD_DATABASE_URL of a fresh, empty database, or
// skips the test (Require).
func NewURL(t testing.TB, d Dialect) string {
	t.Helper()
	Require(t, d)
	switch d {
	case "sqlite":
		return "sqlite:" + filepath.Join(t.TempDir(), "herald.db")
	case "postgres":
		base := os.Getenv("HERALD_TEST_POSTGRES_URL")
		b := make([]byte, 6)
		rand.Read(b)
		schema := "t_" + hex.EncodeToString(b)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatalf("connect to %s: %v", base, err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatalf("create schema: %v", err)
		}
		t.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), base)
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		})
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	t.Fatalf("unknown dialect %q", d)
	return ""
}

// Open opens and migrates the database at url, and closes it when the test
// ends. It has no job queue: jobstest.Open adds one, which the services
// that insert jobs need.
func Open(t testing.TB, url string) *sqlstore.DB {
	t.Helper()
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, url, sqlstore.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return db
}
