// Package jobstest gives a test a fresh, migrated database with a job queue
// over it, on top of sqlstoretest's databases.
package jobstest

import (
	"testing"

	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// Open opens and migrates the database at url (sqlstoretest.Open), with a
// job queue over it (cfg's workers; nil workers: insert-only, as the
// operator commands use), and closes it when the test ends.
func Open(t testing.TB, url string, cfg jobs.Config) (*sqlstore.DB, *jobs.Runner) {
	t.Helper()
	db := sqlstoretest.Open(t, url)
	runner, err := jobs.Open(db, cfg)
	if err != nil {
		t.Fatalf("jobs: %v", err)
	}
	return db, runner
}
