// Package jobs runs Herald's background jobs on River, in the same
// database as everything else: Open builds the River client over the
// store's connections and gives the store the queue it inserts into, so a
// job is inserted in the same transaction as the rows that cause it.
package jobs

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
)

// Timeout is the timeout of jobs whose kind sets none.
const Timeout = 30 * time.Second

// Config configures the job runner.
type Config struct {
	// Workers holds every worker; register them all before Start. Nil: an
	// insert-only runner (the operator commands).
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

// Runner works and inserts jobs.
type Runner struct {
	queue
}

// queue is what the runner does with River's client, whose type depends on
// the database's transaction type.
type queue interface {
	sqlstore.JobQueue
	start(ctx context.Context) error
	stop(ctx context.Context) error
}

// Open builds the River client over db and makes it db's job queue.
func Open(db *sqlstore.DB, cfg Config) (*Runner, error) {
	// An insert-only runner (the operator commands) inserts jobs that the
	// servers work, so it knows none of their kinds.
	insertOnly := cfg.Workers == nil
	if insertOnly {
		cfg.Workers = river.NewWorkers()
	}
	riverCfg := &river.Config{
		Workers:     cfg.Workers,
		Queues:      cfg.Queues,
		RetryPolicy: cfg.RetryPolicy,
		Logger:      cfg.Logger,
		// Email and push jobs must not be given up after River's default 25
		// attempts within days; the retry policy bounds the spacing instead.
		MaxAttempts: 100,
		// A job whose process died is rescued (retried elsewhere) once it
		// has run longer than its kind's timeout and this: jobs without a
		// timeout of their own get Timeout, and the rescuer looks every
		// 30 s, so such a job is taken over within about a minute.
		JobTimeout:           Timeout,
		RescueStuckJobsAfter: Timeout,
		FetchPollInterval:    cfg.FetchPoll,
		Middleware:           cfg.Middleware,
		PeriodicJobs:         cfg.Periodic,
		SkipUnknownJobCheck:  insertOnly,
	}
	if cfg.Logger == nil {
		riverCfg.Logger = slog.New(slog.DiscardHandler)
	}
	// River refuses a poll interval shorter than its fetch cooldown (100ms
	// by default): a faster poll (HERALD_JOB_POLL=50ms in tests) lowers the
	// cooldown with it.
	if cfg.FetchPoll > 0 && cfg.FetchPoll < river.FetchCooldownDefault {
		riverCfg.FetchCooldown = max(cfg.FetchPoll, river.FetchCooldownMin)
	}
	var q queue
	var err error
	switch db.Dialect() {
	case storage.SQLite:
		q, err = newClient(riversqlite.New(db.SQL()), riverCfg)
	case storage.Postgres:
		q, err = newClient(riverpgxv5.New(db.Pool()), riverCfg)
	default:
		err = fmt.Errorf("no job runner for %s", db.Dialect())
	}
	if err != nil {
		return nil, fmt.Errorf("river: %w", err)
	}
	db.UseJobQueue(q)
	return &Runner{q}, nil
}

// Start starts working jobs.
func (r *Runner) Start(ctx context.Context) error { return r.start(ctx) }

// Stop waits for running jobs to finish, up to ctx's deadline; jobs still
// running then are cancelled and retried after the next start.
func (r *Runner) Stop(ctx context.Context) error { return r.stop(ctx) }

// client is River's client over a driver whose transactions are TTx.
type client[TTx any] struct{ c *river.Client[TTx] }

func newClient[TTx any](driver riverdriver.Driver[TTx], cfg *river.Config) (client[TTx], error) {
	c, err := river.NewClient(driver, cfg)
	return client[TTx]{c}, err
}

func (j client[TTx]) InsertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	t, ok := tx.(TTx)
	if !ok {
		return 0, fmt.Errorf("insert job %s: a %T is not this database's transaction", args.Kind(), tx)
	}
	res, err := j.c.InsertTx(ctx, t, args, opts)
	if err != nil {
		return 0, fmt.Errorf("insert job %s: %w", args.Kind(), err)
	}
	return res.Job.ID, nil
}

func (j client[TTx]) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := j.c.Insert(ctx, args, opts)
	if err != nil {
		return 0, fmt.Errorf("insert job %s: %w", args.Kind(), err)
	}
	return res.Job.ID, nil
}

func (j client[TTx]) start(ctx context.Context) error { return j.c.Start(ctx) }
func (j client[TTx]) stop(ctx context.Context) error  { return j.c.Stop(ctx) }

// The transaction types of the two drivers.
var (
	_ queue = client[*sql.Tx]{}
	_ queue = client[pgx.Tx]{}
)
