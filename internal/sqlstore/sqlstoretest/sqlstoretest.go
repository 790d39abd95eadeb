// Package sqlstoretest gives each test a fresh, real database: a SQLite file
// in the test's temporary directory, and, when HERALD_TEST_POSTGRES_URL is
// set, a PostgreSQL schema of its own that is dropped afterwards.
package sqlstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Dialect is "sqlite" or "postgres".
type Dialect string

// Dialects returns the databases this test run covers.
func Dialects() []Dialect {
	ds := []Dialect{"sqlite"}
	if os.Getenv("HERALD_TEST_POSTGRES_URL") != "" {
		ds = append(ds, "postgres")
	}
	return ds
}

// Each runs fn as a subtest once per covered dialect, with a fresh
// database URL.
func Each(t *testing.T, fn func(t *testing.T, databaseURL string)) {
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			fn(t, NewURL(t, d))
		})
	}
}

// NewURL returns the HERALD_DATABASE_URL of a fresh, empty database.
func NewURL(t testing.TB, d Dialect) string {
	t.Helper()
	switch d {
	case "sqlite":
		return "sqlite:" + filepath.Join(t.TempDir(), "herald.db")
	case "postgres":
		base := os.Getenv("HERALD_TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("HERALD_TEST_POSTGRES_URL is not set")
		}
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
