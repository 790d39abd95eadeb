package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrate applies River's migrations and Herald's own, each of Herald's in
// its own transaction, recording the versions applied. On PostgreSQL an
// advisory lock keeps replicas that start together from racing.
func (db *DB) Migrate(ctx context.Context) ([]string, error) {
	var applied []string
	if err := db.migrateRiver(ctx); err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	if db.pool != nil {
		conn, err := db.pool.Acquire(ctx)
		if err != nil {
			return nil, translate(err)
		}
		defer conn.Release()
		const lockKey = 7_263_004_115 // "herald migrations"
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", lockKey); err != nil {
			return nil, translate(err)
		}
		defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", lockKey)
	}
	if _, err := db.conn().exec(ctx, `CREATE TABLE IF NOT EXISTS herald_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("create migrations table: %w", err)
	}
	dir := "migrations/" + string(db.dialect)
	entries, err := fs.ReadDir(migrationsFS, dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, name := range names {
		version, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", name)
		}
		body, err := migrationsFS.ReadFile(dir + "/" + name)
		if err != nil {
			return nil, err
		}
		did := false
		err = db.inTx(ctx, func(tx *Tx) error {
			var n int
			if err := tx.q.queryRow(ctx, `SELECT COUNT(*) FROM herald_migrations WHERE version = ?`, version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if err := execScript(ctx, tx.q, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", name, err)
			}
			_, err := tx.q.exec(ctx, `INSERT INTO herald_migrations (version, name) VALUES (?, ?)`, version, name)
			did = err == nil
			return err
		})
		if err != nil {
			return applied, err
		}
		if did {
			applied = append(applied, name)
		}
	}
	return applied, nil
}

// execScript runs a migration file statement by statement; migrations keep
// to plain statements separated by `;` at the end of a line.
func execScript(ctx context.Context, q querier, script string) error {
	for _, stmt := range strings.Split(script, ";\n") {
		if strings.TrimSpace(stripComments(stmt)) == "" {
			continue
		}
		if _, err := q.exec(ctx, stmt); err != nil {
			return err
		}
	}
	return nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func (db *DB) migrateRiver(ctx context.Context) error {
	if db.pool != nil {
		m, err := rivermigrate.New(riverpgxv5.New(db.pool), nil)
		if err != nil {
			return err
		}
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
		return err
	}
	m, err := rivermigrate.New(riversqlite.New(db.sqlDB), nil)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}
