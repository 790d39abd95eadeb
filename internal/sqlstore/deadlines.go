package sqlstore

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// A connection gone silent (a middlebox that drops its packets without a
// reset) would hold whatever waits on it for good. Three things bound
// that wait: every query's deadline (bound), the pool's ping of an idle
// connection before use, and TCP keepalive with TCP_USER_TIMEOUT for the
// connections nothing waits on in a query (LISTEN, idle ones).
const (
	// connectTimeout bounds making a connection, TLS and start-up
	// included, unless the URL's connect_timeout says otherwise.
	connectTimeout = 5 * time.Second
	// pingTimeout bounds the pool's ping of a connection idle for a
	// second or more before it is handed out; one that does not answer
	// is closed, and the next tried.
	pingTimeout = 2 * time.Second
	// healthCheckPeriod is how often the pool drops connections past
	// their lifetime and refills its minimum.
	healthCheckPeriod = 15 * time.Second
)

// keepAlive probes a connection idle for 5 s every 2 s; three probes
// unanswered (11 s in all) and the kernel closes it.
var keepAlive = net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 2 * time.Second, Count: 3}

// userTimeout is TCP_USER_TIMEOUT (Linux): data unacknowledged for this
// long closes the connection, which keepalive alone does not do while a
// write is outstanding.
const userTimeout = 15 * time.Second

// detectDeadConns sets the pool's dialer and checks so that a dead
// connection is dropped within seconds. Settings the URL names itself
// (connect_timeout, pool_health_check_period) are left as it says.
func detectDeadConns(cfg *pgxpool.Config, dsn string) {
	timeout := cfg.ConnConfig.ConnectTimeout
	if !strings.Contains(dsn, "connect_timeout") {
		timeout = connectTimeout
		cfg.ConnConfig.ConnectTimeout = timeout
	}
	d := &net.Dialer{Timeout: timeout, KeepAliveConfig: keepAlive, Control: controlUserTimeout(userTimeout)}
	cfg.ConnConfig.DialFunc = d.DialContext
	cfg.PingTimeout = pingTimeout
	if !strings.Contains(dsn, "pool_health_check_period") {
		cfg.HealthCheckPeriod = healthCheckPeriod
	}
}

// ownBoundKey marks a context whose queries are bounded by its own
// deadline alone (withOwnBound).
type ownBoundKey struct{}

// withOwnBound lets the queries made with ctx run past the query
// timeout, up to ctx's own deadline if any: for work legitimately long
// (migrations, housekeeping's pruning), which says its own bound.
func withOwnBound(ctx context.Context) context.Context {
	return context.WithValue(ctx, ownBoundKey{}, true)
}

// bound is ctx under the query deadline: the sooner of its own and
// queryTimeout from now. A request's deadline (HERALD_REQUEST_TIMEOUT)
// is sooner, so on that hot path bound makes no timer and returns a nil
// cancel; callers call a non-nil one once the query is done.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if own, ok := ctx.Deadline(); ok && time.Until(own) <= db.queryTimeout {
		return ctx, nil
	}
	if ctx.Value(ownBoundKey{}) != nil {
		return ctx, nil
	}
	return context.WithTimeout(ctx, db.queryTimeout)
}

// boundedQuerier runs each query under bound's deadline; past it the
// driver gives up on the query and closes its connection (pgx), so a
// query never waits forever on a connection gone silent.
type boundedQuerier struct {
	next querier
	db   *DB
}

func (b boundedQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	ctx, cancel := b.db.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	return b.next.exec(ctx, q, args...)
}

func (b boundedQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	ctx, cancel := b.db.bound(ctx)
	r := b.next.queryRow(ctx, q, args...)
	if cancel == nil {
		return r
	}
	return cancelingRow{row: r, cancel: cancel}
}

func (b boundedQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	ctx, cancel := b.db.bound(ctx)
	rs, err := b.next.query(ctx, q, args...)
	if cancel == nil {
		return rs, err
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &cancelingRows{rows: rs, cancel: cancel}, nil
}

// cancelingRow ends its query's deadline once scanned.
type cancelingRow struct {
	row
	cancel context.CancelFunc
}

func (r cancelingRow) Scan(dest ...any) error {
	defer r.cancel()
	return r.row.Scan(dest...)
}

// cancelingRows ends its query's deadline once closed.
type cancelingRows struct {
	rows
	cancel context.CancelFunc
}

func (r *cancelingRows) Close() {
	r.rows.Close()
	r.cancel()
}
