package storage

import (
	"context"
	"time"
)

// Transactor is the unit of work a store offers the services (after ory
// kratos's x/transaction.go): InTx runs fn in one database transaction,
// committed when fn returns nil and rolled back otherwise. The ctx fn is
// given carries the transaction: the store's methods called with it run
// inside it, so a service composes small row-level methods into one use
// case that holds under concurrency. An InTx inside another joins it.
type Transactor interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
	// TxTime is the fixed time of the transaction ctx carries (every row
	// it writes carries it), or the store's clock outside one.
	TxTime(ctx context.Context) time.Time
}
