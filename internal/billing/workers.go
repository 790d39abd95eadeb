package billing

import (
	"context"
	"time"

	"github.com/riverqueue/river"
)

// IngestWorker works kept notifications.
type IngestWorker struct {
	river.WorkerDefaults[IngestArgs]
	Service *Service
}

func (w *IngestWorker) Work(ctx context.Context, job *river.Job[IngestArgs]) error {
	return w.Service.Ingest(ctx, job.Args.Source, job.Args.ID)
}

// SettleWorker runs Settle.
type SettleWorker struct {
	river.WorkerDefaults[SettleArgs]
	Service *Service
}

func (w *SettleWorker) Work(ctx context.Context, job *river.Job[SettleArgs]) error {
	return w.Service.Settle(ctx, job.Args.Source, job.Args.ExternalID)
}

// SweepArgs is the periodic job that ends lapsed entitlements and reminds
// trials ending (every minute).
type SweepArgs struct{}

func (SweepArgs) Kind() string { return "billing_sweep" }

// SweepWorker runs Sweep.
type SweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	Service *Service
}

func (w *SweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	return w.Service.Sweep(ctx)
}

// ReconcileArgs reads purchases from their stores: one account's (the
// admin's reconcile-now), or with AccountID "" every live one (the daily
// job).
type ReconcileArgs struct {
	AccountID string `json:"accountId,omitempty"`
}

func (ReconcileArgs) Kind() string { return "billing_reconcile" }

// ReconcileWorker runs Reconcile or ReconcileAll.
type ReconcileWorker struct {
	river.WorkerDefaults[ReconcileArgs]
	Service *Service
}

func (w *ReconcileWorker) Work(ctx context.Context, job *river.Job[ReconcileArgs]) error {
	if job.Args.AccountID != "" {
		_, err := w.Service.Reconcile(ctx, job.Args.AccountID)
		return err
	}
	_, err := w.Service.ReconcileAll(ctx)
	return err
}

// Timeout bounds the daily reconciliation, which reads every live purchase.
func (w *ReconcileWorker) Timeout(*river.Job[ReconcileArgs]) time.Duration { return time.Hour }

// Periodic are billing's periodic jobs: the sweep each minute and the
// reconciliation each day.
func Periodic(reconcileEvery time.Duration) []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(river.PeriodicInterval(time.Minute), func() (river.JobArgs, *river.InsertOpts) {
			return SweepArgs{}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: time.Minute}}
		}, nil),
		river.NewPeriodicJob(river.PeriodicInterval(reconcileEvery), func() (river.JobArgs, *river.InsertOpts) {
			return ReconcileArgs{}, &river.InsertOpts{UniqueOpts: river.UniqueOpts{ByPeriod: reconcileEvery}}
		}, nil),
	}
}
