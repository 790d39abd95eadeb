package sqlstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
)

// jobQueue hides River's transaction type, which differs per driver.
type jobQueue interface {
	insertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (int64, error)
	insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error)
	start(ctx context.Context) error
	stop(ctx context.Context) error
}

type sqliteJobs struct{ c *river.Client[*sql.Tx] }

func (j sqliteJobs) insertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := j.c.InsertTx(ctx, tx.(*sql.Tx), args, opts)
	if err != nil {
		return 0, fmt.Errorf("insert job %s: %w", args.Kind(), translate(err))
	}
	return res.Job.ID, nil
}

func (j sqliteJobs) insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := j.c.Insert(ctx, args, opts)
	if err != nil {
		return 0, fmt.Errorf("insert job %s: %w", args.Kind(), translate(err))
	}
	return res.Job.ID, nil
}

func (j sqliteJobs) start(ctx context.Context) error { return j.c.Start(ctx) }
func (j sqliteJobs) stop(ctx context.Context) error  { return j.c.Stop(ctx) }

type pgJobs struct{ c *river.Client[pgx.Tx] }

func (j pgJobs) insertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := j.c.InsertTx(ctx, tx.(pgx.Tx), args, opts)
	if err != nil {
		return 0, fmt.Errorf("insert job %s: %w", args.Kind(), translate(err))
	}
	return res.Job.ID, nil
}

func (j pgJobs) insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	res, err := j.c.Insert(ctx, args, opts)
	if err != nil {
		return 0, fmt.Errorf("insert job %s: %w", args.Kind(), translate(err))
	}
	return res.Job.ID, nil
}

func (j pgJobs) start(ctx context.Context) error { return j.c.Start(ctx) }
func (j pgJobs) stop(ctx context.Context) error  { return j.c.Stop(ctx) }

// InsertJob inserts a job outside any transaction.
func (db *DB) InsertJob(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	return db.jobs.insert(ctx, args, opts)
}
