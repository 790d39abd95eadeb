// Package sqlstore is Herald's one storage API over two databases: SQLite
// (modernc.org/sqlite, the embedded default) and PostgreSQL (pgx). Queries are
// written once, with `?` placeholders, and rebound for PostgreSQL. Background
// jobs live in the same database through River, so a job is inserted in the
// same transaction as the rows that cause it.
package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Dialect names the database behind a DB.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// JobsConfig configures the background job runner.
type JobsConfig struct {
	Workers     *river.Workers
	Queues      map[string]river.QueueConfig
	RetryPolicy river.ClientRetryPolicy
	// FetchPoll is how often workers look for new jobs (SQLite has no
	// LISTEN/NOTIFY). Zero keeps River's default.
	FetchPoll  time.Duration
	Logger     *slog.Logger
	Middleware []rivertype.Middleware
	Periodic   []*river.PeriodicJob
}

// DB is an open database with its job queue.
type DB struct {
	dialect Dialect
	sqlDB   *sql.DB       // SQLite
	pool    *pgxpool.Pool // PostgreSQL
	jobs    jobQueue
	// Now is the store's clock; tests replace it.
	Now func() time.Time
}

// ParseURL splits a HERALD_DATABASE_URL into its dialect and the driver's
// data source.
func ParseURL(raw string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return Postgres, raw, nil
	case strings.HasPrefix(raw, "sqlite:"):
		path := strings.TrimPrefix(raw, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return "", "", errors.New("sqlite URL needs a path, for example sqlite:herald.db")
		}
		return SQLite, path, nil
	}
	return "", "", fmt.Errorf("unsupported database URL %q: use postgres://… or sqlite:PATH", redactURL(raw))
}

func redactURL(raw string) string {
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			return raw[:j+3] + "…" + raw[i:]
		}
	}
	return raw
}

// Open connects to the database named by rawURL. It does not migrate; call
// Migrate. jobs may be nil for a store that only inserts jobs (the CLI).
func Open(ctx context.Context, rawURL string, jobs JobsConfig) (*DB, error) {
	dialect, dsn, err := ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	db := &DB{dialect: dialect, Now: func() time.Time { return time.Now().UTC() }}
	if jobs.Workers == nil {
		jobs.Workers = river.NewWorkers()
	}
	riverCfg := &river.Config{
		Workers:     jobs.Workers,
		Queues:      jobs.Queues,
		RetryPolicy: jobs.RetryPolicy,
		Logger:      jobs.Logger,
		// Email and push jobs must not be given up after River's default 25
		// attempts within days; the retry policy bounds the spacing instead.
		MaxAttempts:       100,
		FetchPollInterval: jobs.FetchPoll,
		Middleware:        jobs.Middleware,
		PeriodicJobs:      jobs.Periodic,
	}
	if jobs.Logger == nil {
		riverCfg.Logger = slog.New(slog.DiscardHandler)
	}
	// River refuses a poll interval shorter than its fetch cooldown (100ms
	// by default): a faster poll (HERALD_JOB_POLL=50ms in tests) lowers the
	// cooldown with it.
	if jobs.FetchPoll > 0 && jobs.FetchPoll < river.FetchCooldownDefault {
		riverCfg.FetchCooldown = max(jobs.FetchPoll, river.FetchCooldownMin)
	}
	switch dialect {
	case SQLite:
		// WAL lets readers run beside the writer; the busy timeout makes a
		// writer wait for the lock instead of failing; IMMEDIATE
		// transactions take the write lock up front so two transactions
		// never deadlock upgrading a read lock.
		path := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(dsn)
		q := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate&_time_format=sqlite"
		sdb, err := sql.Open("sqlite", q)
		if err != nil {
			return nil, fmt.Errorf("open sqlite: %w", err)
		}
		// SQLite allows one writer; River's driver documentation asks for a
		// single connection so its concurrent internals never see SQLITE_BUSY.
		sdb.SetMaxOpenConns(1)
		if err := sdb.PingContext(ctx); err != nil {
			sdb.Close()
			return nil, fmt.Errorf("open sqlite %s: %w", dsn, err)
		}
		db.sqlDB = sdb
		client, err := river.NewClient(riversqlite.New(sdb), riverCfg)
		if err != nil {
			sdb.Close()
			return nil, fmt.Errorf("river: %w", err)
		}
		db.jobs = sqliteJobs{client}
	case Postgres:
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("postgres URL: %w", err)
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to postgres: %w", err)
		}
		db.pool = pool
		client, err := river.NewClient(riverpgxv5.New(pool), riverCfg)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("river: %w", err)
		}
		db.jobs = pgJobs{client}
	}
	return db, nil
}

// Dialect reports which database is behind db.
func (db *DB) Dialect() Dialect { return db.dialect }

// Ping reports whether the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if db.pool != nil {
		return db.pool.Ping(ctx)
	}
	return db.sqlDB.PingContext(ctx)
}

// StartJobs starts working background jobs. Workers must all be registered
// in JobsConfig.Workers before this call.
func (db *DB) StartJobs(ctx context.Context) error { return db.jobs.start(ctx) }

// StopJobs waits for running jobs to finish, up to ctx's deadline; jobs
// still running then are cancelled and retried after the next start.
func (db *DB) StopJobs(ctx context.Context) error { return db.jobs.stop(ctx) }

// Close closes the database. Stop jobs first.
func (db *DB) Close() error {
	if db.pool != nil {
		db.pool.Close()
		return nil
	}
	return db.sqlDB.Close()
}

// Tx is one database transaction with a fixed `now`, so every row it writes
// carries the same time.
type Tx struct {
	q   querier
	db  *DB
	raw any // *sql.Tx or pgx.Tx, for River
	now time.Time
}

// InsertJob inserts a River job inside the transaction.
func (tx *Tx) InsertJob(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	return tx.db.jobs.insertTx(ctx, tx.raw, args, opts)
}

// inTx runs fn in a transaction, committing when it returns nil.
func (db *DB) inTx(ctx context.Context, fn func(tx *Tx) error) error {
	now := db.Now().UTC()
	if db.pool != nil {
		ptx, err := db.pool.Begin(ctx)
		if err != nil {
			return translate(err)
		}
		defer ptx.Rollback(ctx)
		if err := fn(&Tx{q: pgQuerier{ptx}, db: db, raw: ptx, now: now}); err != nil {
			return err
		}
		return translate(ptx.Commit(ctx))
	}
	stx, err := db.sqlDB.BeginTx(ctx, nil)
	if err != nil {
		return translate(err)
	}
	defer stx.Rollback()
	if err := fn(&Tx{q: sqliteQuerier{stx}, db: db, raw: stx, now: now}); err != nil {
		return err
	}
	return translate(stx.Commit())
}

// conn returns a querier outside any transaction.
func (db *DB) conn() querier {
	if db.pool != nil {
		return pgQuerier{db.pool}
	}
	return sqliteQuerier{db.sqlDB}
}

// forUpdate is the row-locking suffix: PostgreSQL locks the row; SQLite's
// IMMEDIATE transactions already hold the database's write lock.
func (db *DB) forUpdate() string {
	if db.dialect == Postgres {
		return " FOR UPDATE"
	}
	return ""
}

// querier is what the store's queries need from either driver.
type querier interface {
	exec(ctx context.Context, q string, args ...any) (int64, error)
	queryRow(ctx context.Context, q string, args ...any) row
	query(ctx context.Context, q string, args ...any) (rows, error)
}

type row interface{ Scan(dest ...any) error }

type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// sqliteQuerier runs queries on a *sql.DB or *sql.Tx.
type sqliteQuerier struct {
	c interface {
		ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
		QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
		QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	}
}

// sqliteArgs stores every time in UTC so that SQLite's text timestamps
// compare in time order.
func sqliteArgs(args []any) []any {
	for i, a := range args {
		switch v := a.(type) {
		case time.Time:
			args[i] = v.UTC()
		case *time.Time:
			if v != nil {
				args[i] = v.UTC()
			} else {
				args[i] = nil
			}
		}
	}
	return args
}

func (s sqliteQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	res, err := s.c.ExecContext(ctx, q, sqliteArgs(args)...)
	if err != nil {
		return 0, translate(err)
	}
	n, err := res.RowsAffected()
	return n, translate(err)
}

func (s sqliteQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return translatingRow{s.c.QueryRowContext(ctx, q, sqliteArgs(args)...)}
}

func (s sqliteQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.c.QueryContext(ctx, q, sqliteArgs(args)...)
	if err != nil {
		return nil, translate(err)
	}
	return sqlRows{r}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// pgQuerier runs queries on a pool or a pgx transaction.
type pgQuerier struct {
	c interface {
		Exec(ctx context.Context, q string, args ...any) (pgconn.CommandTag, error)
		QueryRow(ctx context.Context, q string, args ...any) pgx.Row
		Query(ctx context.Context, q string, args ...any) (pgx.Rows, error)
	}
}

func (p pgQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := p.c.Exec(ctx, rebind(q), args...)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}

func (p pgQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return translatingRow{p.c.QueryRow(ctx, rebind(q), args...)}
}

func (p pgQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := p.c.Query(ctx, rebind(q), args...)
	if err != nil {
		return nil, translate(err)
	}
	return r, nil
}

type translatingRow struct{ r row }

func (t translatingRow) Scan(dest ...any) error { return translate(t.r.Scan(dest...)) }

// rebind turns `?` placeholders into PostgreSQL's `$n`. Queries in this
// package never use `?` for anything else.
func rebind(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
