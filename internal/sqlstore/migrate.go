package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivermigrate"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrate applies River's migrations and Herald's own, each of Herald's in
// its own transaction, recording the versions applied.
func (db *DB) Migrate(ctx context.Context) ([]string, error) {
	return db.migrate(ctx, math.MaxInt)
}

// migrate applies the migrations up to version upTo (tests start from an
// older schema).
func (db *DB) migrate(ctx context.Context, upTo int) ([]string, error) {
	// A migration may rewrite a large table: bounded by the caller alone.
	ctx = withOwnBound(ctx)
	var applied []string
	// On PostgreSQL every migration, River's and Herald's, runs under one
	// advisory lock: replicas that start together on a fresh database
	// wait for each other instead of racing to create the same types.
	if db.pool != nil {
		conn, err := db.pool.Acquire(ctx)
		if err != nil {
			return nil, translate(err)
		}
		defer conn.Release()
		// The lock is per schema, so that databases sharing a server
		// (tests, several deployments) do not wait for each other.
		const lockKey = 72_630_041 // "herald migrations"
		if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1, hashtext(current_schema()))", lockKey); err != nil {
			return nil, translate(err)
		}
		defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1, hashtext(current_schema()))", lockKey)
	}
	if err := db.migrateRiver(ctx); err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	if _, err := db.conn().exec(ctx, `CREATE TABLE IF NOT EXISTS herald_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL)`); err != nil {
		return nil, fmt.Errorf("create migrations table: %w", err)
	}
	files, err := db.migrationFiles()
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		version, name := f.version, f.name
		if version > upTo {
			break
		}
		body, err := migrationsFS.ReadFile(f.path)
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

// migrationFile is one of Herald's embedded migrations.
type migrationFile struct {
	version    int
	name, path string
}

// migrationFiles lists the dialect's migrations in the order they apply.
func (db *DB) migrationFiles() ([]migrationFile, error) {
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
	files := make([]migrationFile, 0, len(names))
	for _, name := range names {
		version, err := strconv.Atoi(strings.SplitN(name, "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: name must start with a number", name)
		}
		files = append(files, migrationFile{version: version, name: name, path: dir + "/" + name})
	}
	return files, nil
}

// Migration is one migration and whether the database has it.
type Migration struct {
	// Name is "river NNN name" for River's own migrations and the file
	// name (NNNN_name.sql) for Herald's.
	Name    string
	Applied bool
}

// MigrationStatus lists River's migrations, then Herald's, in the order
// Migrate applies them, each marked applied or pending. It changes
// nothing, so it works on a database that was never migrated.
func (db *DB) MigrationStatus(ctx context.Context) ([]Migration, error) {
	var list []Migration
	river, err := db.riverMigrationStatus(ctx)
	if err != nil {
		return nil, fmt.Errorf("river migrations: %w", err)
	}
	list = append(list, river...)
	files, err := db.migrationFiles()
	if err != nil {
		return nil, err
	}
	applied := map[int]bool{}
	exists := `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'herald_migrations'`
	if db.dialect == storage.Postgres {
		exists = `SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = 'herald_migrations'`
	}
	var n int
	if err := db.conn().queryRow(ctx, exists).Scan(&n); err != nil {
		return nil, translate(err)
	}
	if n > 0 {
		rs, err := db.conn().query(ctx, `SELECT version FROM herald_migrations`)
		versions, err := collect(rs, err, func(r row) (int, error) {
			var v int
			return v, r.Scan(&v)
		})
		if err != nil {
			return nil, err
		}
		for _, v := range versions {
			applied[v] = true
		}
	}
	for _, f := range files {
		list = append(list, Migration{Name: f.name, Applied: applied[f.version]})
	}
	return list, nil
}

func (db *DB) riverMigrationStatus(ctx context.Context) ([]Migration, error) {
	var all, existing []rivermigrate.Migration
	if db.pool != nil {
		m, err := rivermigrate.New(riverpgxv5.New(db.pool), nil)
		if err != nil {
			return nil, err
		}
		all = m.AllVersions()
		if existing, err = m.ExistingVersions(ctx); err != nil {
			return nil, err
		}
	} else {
		m, err := rivermigrate.New(riversqlite.New(db.sqlDB), nil)
		if err != nil {
			return nil, err
		}
		all = m.AllVersions()
		if existing, err = m.ExistingVersions(ctx); err != nil {
			return nil, err
		}
	}
	have := map[int]bool{}
	for _, m := range existing {
		have[m.Version] = true
	}
	list := make([]Migration, 0, len(all))
	for _, m := range all {
		list = append(list, Migration{Name: fmt.Sprintf("river %03d %s", m.Version, m.Name), Applied: have[m.Version]})
	}
	return list, nil
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
