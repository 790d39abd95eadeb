// Package sqlstore is Herald's one storage API over two databases: SQLite
// (modernc.org/sqlite, the embedded default) and PostgreSQL (pgx). Queries are
// written once, with `?` placeholders, and rebound for PostgreSQL. Background
// jobs live in the same database (internal/jobs runs River), and the store
// inserts a job in the same transaction as the rows that cause it.
package sqlstore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/herald-vpn/herald/internal/seal"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.opentelemetry.io/otel/trace"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Options configures a store.
type Options struct {
	// Logger receives the outage lines (one when the database becomes
	// unreachable, one when it answers again).
	Logger *slog.Logger
	// MaxConns sizes the PostgreSQL pool (unless the URL's pool_max_conns
	// does) and, capped at 8, SQLite's pool of readers. Zero: DefaultMaxConns.
	MaxConns int
	// Tracer, when set, gives every query a span (see tracedQuerier).
	Tracer trace.Tracer
	// Keys seal the secrets the store keeps (see seal.go); nil: they are
	// kept plain, and a sealed one cannot be read.
	Keys *seal.Keyring
	// QueryTimeout bounds every query (see bound). Zero:
	// DefaultQueryTimeout.
	QueryTimeout time.Duration
}

// DefaultQueryTimeout is Options.QueryTimeout's default: longer than any
// request's deadline (HERALD_REQUEST_TIMEOUT, 15 s by default), which
// then bounds a request's queries first, and than any query Herald makes
// but housekeeping's and migrations' (withOwnBound).
const DefaultQueryTimeout = 30 * time.Second

// DefaultMaxConns is Options.MaxConns's default: enough for a server's
// concurrent requests and jobs, and three replicas under PostgreSQL's
// default max_connections of 100.
const DefaultMaxConns = 25

// JobQueue inserts background jobs (jobs.Runner). The store uses it to
// insert a job in the same transaction as the rows that cause it; tx is
// the driver's transaction (*sql.Tx or pgx.Tx).
type JobQueue interface {
	InsertTx(ctx context.Context, tx any, args river.JobArgs, opts *river.InsertOpts) (int64, error)
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error)
}

// DB is an open database.
type DB struct {
	dialect storage.Dialect
	sqlDB   *sql.DB       // SQLite: the one writer (and River's)
	readers *sql.DB       // SQLite: read-only connections beside the writer
	stmts   *stmtCache    // SQLite: the readers' prepared statements
	rebinds rebindCache   // PostgreSQL: queries with their $n placeholders
	pool    *pgxpool.Pool // PostgreSQL
	jobs    JobQueue
	health  *health
	// deadlines bound the wait for a pooled PostgreSQL connection (by
	// DefaultAcquireTimeout); past it the database counts as unavailable
	// (503), not as slow.
	deadlines acquireDeadlines
	// queryTimeout bounds each query whose caller has no sooner deadline.
	queryTimeout time.Duration
	// connQ is the querier outside transactions (conn).
	connQ  querier
	tracer trace.Tracer // nil: no spans
	// keys seal the secrets the store keeps (nil: kept plain).
	keys *seal.Keyring
	// Now is the store's clock, the replica's (cmd/herald passes the one
	// clock its services share); tests replace it (see UseTestClock).
	// Leases do not read it on PostgreSQL: see clock.go.
	Now func() time.Time
	// dbShift moves the database's clock as the store's leases read it
	// (clock.go); nil but in tests (UseTestClock).
	dbShift func() time.Duration

	onRevocation hooks[func(kind, id string)]

	// origin names this process in its live events (see live.go).
	origin string
	// channels are the PostgreSQL NOTIFY channels of this store's schema.
	channels notifyChannels
	onLive   hooks[func(topic string, data []byte)]
}

// hooks are the functions registered to be told of something this store
// commits (revocations, live events); registration may race with commits.
type hooks[F any] struct {
	mu sync.Mutex
	fs []F
}

func (h *hooks[F]) add(f F) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fs = append(h.fs, f)
}

// all is the functions registered so far.
func (h *hooks[F]) all() []F {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fs
}

// Open connects to the database named by rawURL. It does not migrate; call
// Migrate. A store inserts jobs once a JobQueue is attached (jobs.Open).
func Open(ctx context.Context, rawURL string, opts Options) (*DB, error) {
	dialect, dsn, err := storage.ParseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if opts.QueryTimeout <= 0 {
		opts.QueryTimeout = DefaultQueryTimeout
	}
	db := &DB{dialect: dialect, Now: func() time.Time { return time.Now().UTC() }, deadlines: acquireDeadlines{timeout: DefaultAcquireTimeout}, queryTimeout: opts.QueryTimeout, tracer: opts.Tracer, keys: opts.Keys, origin: rand.Text()}
	db.health = newHealth(opts.Logger, db.Ping)
	if opts.MaxConns <= 0 {
		opts.MaxConns = DefaultMaxConns
	}
	switch dialect {
	case storage.SQLite:
		// WAL lets readers run beside the writer; the busy timeout makes a
		// writer wait for the lock instead of failing; IMMEDIATE
		// transactions take the write lock up front so two transactions
		// never deadlock upgrading a read lock.
		path := strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(dsn)
		common := "file:" + path + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_time_format=sqlite"
		sdb, err := sql.Open("sqlite", common+"&_txlock=immediate")
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
		// Reads outside transactions go to connections of their own: WAL
		// lets them run beside the writer instead of queueing behind it.
		readers, err := sql.Open("sqlite", common+"&_pragma=query_only(1)")
		if err != nil {
			sdb.Close()
			return nil, fmt.Errorf("open sqlite readers: %w", err)
		}
		readers.SetMaxOpenConns(min(opts.MaxConns, 8))
		readers.SetMaxIdleConns(min(opts.MaxConns, 8))
		db.sqlDB, db.readers, db.stmts = sdb, readers, &stmtCache{db: readers}
	case storage.Postgres:
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("postgres URL: %w", err)
		}
		if !namesPoolSize(dsn) {
			cfg.MaxConns = int32(opts.MaxConns)
		}
		detectDeadConns(cfg, dsn)
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("open postgres: %w", err)
		}
		if err := pool.Ping(ctx); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to postgres: %w", err)
		}
		db.pool = pool
		// NULL when no schema of the search path exists; Migrate says so.
		var schema sql.NullString
		if err := pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to postgres: %w", err)
		}
		db.channels = channelsOf(schema.String)
	}
	db.connQ = db.newConnQuerier()
	return db, nil
}

// namesPoolSize reports whether a PostgreSQL URL sizes its pool itself
// (pool_max_conns), which wins over Options.MaxConns.
func namesPoolSize(dsn string) bool { return strings.Contains(dsn, "pool_max_conns") }

// PoolSize is the PostgreSQL pool Open makes for rawURL with maxConns
// (Options.MaxConns): the URL's pool_max_conns, else maxConns, else
// DefaultMaxConns.
func PoolSize(rawURL string, maxConns int) int {
	if maxConns <= 0 {
		maxConns = DefaultMaxConns
	}
	_, dsn, err := storage.ParseURL(rawURL)
	if err != nil || !namesPoolSize(dsn) {
		return maxConns
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return maxConns
	}
	return int(cfg.MaxConns)
}

// SQL is the SQLite database (nil on PostgreSQL), for River's driver.
func (db *DB) SQL() *sql.DB { return db.sqlDB }

// Pool is the PostgreSQL pool (nil on SQLite), for River's driver.
func (db *DB) Pool() *pgxpool.Pool { return db.pool }

// UseJobQueue attaches the queue the store inserts jobs into.
func (db *DB) UseJobQueue(q JobQueue) { db.jobs = q }

// DefaultAcquireTimeout is how long a query waits for a pooled PostgreSQL
// connection (connecting included) before the database counts as
// unavailable.
const DefaultAcquireTimeout = 5 * time.Second

// Dialect reports which database is behind db.
func (db *DB) Dialect() storage.Dialect { return db.dialect }

// Ping reports whether the database answers.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := db.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	if db.pool != nil {
		return db.pool.Ping(ctx)
	}
	return db.sqlDB.PingContext(ctx)
}

// Unavailable reports whether the store is in an outage: its last query
// could not reach the database and no ping has answered since.
func (db *DB) Unavailable() bool { return db.health.Down() }

// Close closes the database. Stop jobs first.
func (db *DB) Close() error {
	db.health.close()
	if db.pool != nil {
		db.pool.Close()
		db.deadlines.close()
		return nil
	}
	db.stmts.close()
	db.readers.Close()
	return db.sqlDB.Close()
}

// Tx is one database transaction with a fixed `now`, so every row it writes
// carries the same time.
type Tx struct {
	q   querier
	db  *DB
	raw any // *sql.Tx or pgx.Tx, for River
	now time.Time
	// afterCommit runs once the transaction has committed.
	afterCommit []func()
	// webhookEndpoints caches the enabled endpoints for emitEvent, read
	// once per transaction (nil: not read yet).
	webhookEndpoints []webhookTarget
}

// commitWithoutFlush lets the transaction's commit return before its WAL
// is flushed to disk (PostgreSQL). For writes that a database crash may
// lose without harm — a broadcast's claims and outcomes, which are then
// made or sent again — and that must not hold the job row's lock through
// a disk flush while outcomes wait behind it.
func (tx *Tx) commitWithoutFlush(ctx context.Context) error {
	if tx.db.dialect != storage.Postgres {
		return nil
	}
	_, err := tx.q.exec(ctx, `SET LOCAL synchronous_commit TO OFF`)
	return err
}

// errNoJobQueue: a job was inserted into a store without a job queue.
var errNoJobQueue = errors.New("sqlstore: no job queue attached (jobs.Open)")

// InsertJob inserts a River job inside the transaction.
func (tx *Tx) InsertJob(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	if tx.db.jobs == nil {
		return 0, errNoJobQueue
	}
	id, err := tx.db.jobs.InsertTx(ctx, tx.raw, args, opts)
	return id, translate(err)
}

// InsertJob inserts a job outside any transaction.
func (db *DB) InsertJob(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (int64, error) {
	if db.jobs == nil {
		return 0, errNoJobQueue
	}
	id, err := db.jobs.Insert(ctx, args, opts)
	return id, db.health.note(translate(err))
}

// inTx runs fn in a transaction, committing when it returns nil. Inside a
// unit of work (ctx from InTx) it joins that transaction instead, so every
// store method a service composes commits or rolls back with it (on SQLite
// a second transaction would wait for the one writer the first holds).
func (db *DB) inTx(ctx context.Context, fn func(tx *Tx) error) error {
	if tx, ok := db.txOf(ctx); ok {
		return fn(tx)
	}
	now := db.Now().UTC()
	// Begin, commit and rollback under the query deadline as every query
	// (boundedQuerier): each may wait on a connection gone silent.
	bctx, cancel := db.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	if db.pool != nil {
		c, err := db.acquire(bctx)
		if err != nil {
			return err
		}
		defer c.Release()
		ptx, err := c.Begin(bctx)
		if err != nil {
			return db.health.note(translate(err))
		}
		defer ptx.Rollback(bctx)
		tx := &Tx{q: db.traced(boundedQuerier{next: pgQuerier{c: ptx, h: db.health, rb: &db.rebinds}, db: db}), db: db, raw: ptx, now: now}
		if err := fn(tx); err != nil {
			return err
		}
		if err := db.health.note(translate(ptx.Commit(bctx))); err != nil {
			return err
		}
		tx.committed()
		return nil
	}
	stx, err := db.sqlDB.BeginTx(bctx, nil)
	if err != nil {
		return db.health.note(translate(err))
	}
	defer stx.Rollback()
	tx := &Tx{q: db.traced(boundedQuerier{next: sqliteQuerier{c: stx, h: db.health}, db: db}), db: db, raw: stx, now: now}
	if err := fn(tx); err != nil {
		return err
	}
	if err := db.health.note(translate(stx.Commit())); err != nil {
		return err
	}
	tx.committed()
	return nil
}

// txKey is the context key of the transaction InTx runs.
type txKey struct{}

// InTx implements storage.Transactor: fn's ctx carries the transaction,
// and the store's methods called with it run inside it (inTx joins it).
// An InTx inside another joins it.
func (db *DB) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if _, ok := db.txOf(ctx); ok {
		return fn(ctx)
	}
	return db.inTx(ctx, func(tx *Tx) error { return fn(context.WithValue(ctx, txKey{}, tx)) })
}

// TxTime implements storage.Transactor.
func (db *DB) TxTime(ctx context.Context) time.Time {
	if tx, ok := db.txOf(ctx); ok {
		return tx.now
	}
	return db.Now().UTC()
}

// txOf is the transaction of this store that ctx carries.
func (db *DB) txOf(ctx context.Context) (*Tx, bool) {
	tx, ok := ctx.Value(txKey{}).(*Tx)
	return tx, ok && tx.db == db
}

// errNoTx: a method that needs a unit of work's transaction (its row
// lock would be released at once) was called outside InTx.
var errNoTx = errors.New("sqlstore: called outside InTx")

// inCallersTx runs fn in the transaction ctx carries; errNoTx without one.
func (db *DB) inCallersTx(ctx context.Context, fn func(tx *Tx) error) error {
	tx, ok := db.txOf(ctx)
	if !ok {
		return errNoTx
	}
	return fn(tx)
}

func (tx *Tx) committed() {
	for _, f := range tx.afterCommit {
		f()
	}
}

// acquire takes a pooled PostgreSQL connection within acquireTimeout.
// The wait ends at a deadline shared by the acquires of the same tick
// (acquireDeadlines), not at a timer of its own: a timer per query was a
// fiftieth of an authenticated read. A request whose client goes away
// while it waits for a connection therefore waits out that deadline, and
// is then told of its own end.
func (db *DB) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var wait context.Context = acquireCtx{Context: db.deadlines.get(time.Now()), values: ctx}
	if own, ok := ctx.Deadline(); ok {
		if shared, _ := wait.Deadline(); own.Before(shared) {
			wait = ctx // the caller's deadline comes first: it bounds the wait
		}
	}
	c, err := db.pool.Acquire(wait)
	if err == nil {
		return c, nil
	}
	if ctx.Err() != nil {
		// The caller went away while it waited (its wait then ends at the
		// shared deadline): its own end, never the deadline's, so that a
		// client that left is a 499, not an error of ours.
		return nil, ctx.Err()
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: no database connection within %s: %v", storage.ErrUnavailable, db.deadlines.timeout, err)
	}
	return nil, db.health.note(translate(err))
}

// acquireCtx is the context a connection is taken with: the shared
// deadline's end, the request's values (trace spans).
type acquireCtx struct {
	context.Context
	values context.Context
}

func (c acquireCtx) Value(key any) any { return c.values.Value(key) }

// acquireDeadlines hands out contexts that end timeout after their making,
// made afresh every eighth of timeout and shared until then: a wait for a
// connection ends between 7/8 of timeout and timeout after it began.
type acquireDeadlines struct {
	timeout time.Duration
	cur     atomic.Pointer[sharedDeadline]
}

type sharedDeadline struct {
	ctx     context.Context
	cancel  context.CancelFunc // it ends by itself at its deadline; Close calls it earlier
	renewAt time.Time
}

func (a *acquireDeadlines) get(now time.Time) context.Context {
	for {
		d := a.cur.Load()
		if d != nil && now.Before(d.renewAt) {
			return d.ctx
		}
		ctx, cancel := context.WithDeadline(context.Background(), now.Add(a.timeout))
		if a.cur.CompareAndSwap(d, &sharedDeadline{ctx: ctx, cancel: cancel, renewAt: now.Add(a.timeout / 8)}) {
			return ctx
		}
		cancel() // another acquire renewed it first: look again
	}
}

func (a *acquireDeadlines) close() {
	if d := a.cur.Load(); d != nil {
		d.cancel()
	}
}

// conn returns a querier outside any transaction.
func (db *DB) conn() querier {
	return db.traced(db.connQ)
}

// newConnQuerier is conn's querier, made once (a querier made per query
// was an allocation per query).
func (db *DB) newConnQuerier() querier {
	if db.pool != nil {
		return &boundedQuerier{next: poolQuerier{db}, db: db}
	}
	return &boundedQuerier{next: sqliteConnQuerier{writer: sqliteQuerier{c: db.sqlDB, h: db.health}, readers: sqliteQuerier{c: db.readers, h: db.health}, stmts: db.stmts}, db: db}
}

// sqliteConnQuerier sends writes to the one writer and reads to the
// readers.
type sqliteConnQuerier struct {
	writer, readers sqliteQuerier
	stmts           *stmtCache
}

func (s sqliteConnQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	return s.writer.exec(ctx, q, args...)
}

func (s sqliteConnQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	if st := s.stmts.get(ctx, q); st != nil {
		return translatingRow{r: st.QueryRowContext(ctx, sqliteArgs(args)...), h: s.readers.h}
	}
	return s.readers.queryRow(ctx, q, args...)
}

func (s sqliteConnQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	if st := s.stmts.get(ctx, q); st != nil {
		r, err := st.QueryContext(ctx, sqliteArgs(args)...)
		if err != nil {
			return nil, s.readers.h.note(translate(err))
		}
		return sqlRows{r}, nil
	}
	return s.readers.query(ctx, q, args...)
}

// maxCachedStmts bounds stmtCache: queries built at run time (IN lists of
// any length) would otherwise grow it without end.
const maxCachedStmts = 256

// stmtCache keeps the SQLite readers' prepared statements by query text,
// so that a read is parsed once per connection rather than at every call
// (parsing was a tenth of the CPU of GET /api/v1/users/me). Once full it
// prepares nothing more, and a query that fails to prepare is run
// unprepared, where its error is reported as usual.
type stmtCache struct {
	db *sql.DB
	mu sync.RWMutex
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, q string) *sql.Stmt {
	c.mu.RLock()
	st, ok := c.m[q]
	c.mu.RUnlock()
	if ok {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[q]; ok {
		return st
	}
	if len(c.m) >= maxCachedStmts {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, q)
	if err != nil {
		return nil
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[q] = st
	return st
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = nil
}

// forUpdate is the row-locking suffix: PostgreSQL locks the row; SQLite's
// IMMEDIATE transactions already hold the database's write lock.
func (db *DB) forUpdate() string {
	if db.dialect == storage.Postgres {
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
	h *health
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
		return 0, s.h.note(translate(err))
	}
	n, err := res.RowsAffected()
	return n, translate(err)
}

func (s sqliteQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return translatingRow{r: s.c.QueryRowContext(ctx, q, sqliteArgs(args)...), h: s.h}
}

func (s sqliteQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := s.c.QueryContext(ctx, q, sqliteArgs(args)...)
	if err != nil {
		return nil, s.h.note(translate(err))
	}
	return sqlRows{r}, nil
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { r.Rows.Close() }

// pgQuerier runs queries in a pgx transaction.
type pgQuerier struct {
	c  pgx.Tx
	h  *health
	rb *rebindCache
}

func (p pgQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	tag, err := p.c.Exec(ctx, p.rb.get(q), args...)
	if err != nil {
		return 0, p.h.note(translate(err))
	}
	return tag.RowsAffected(), nil
}

func (p pgQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	return translatingRow{r: p.c.QueryRow(ctx, p.rb.get(q), args...), h: p.h}
}

func (p pgQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	r, err := p.c.Query(ctx, p.rb.get(q), args...)
	if err != nil {
		return nil, p.h.note(translate(err))
	}
	return r, nil
}

// poolQuerier runs each query on a connection taken from the pool within
// the acquire timeout.
type poolQuerier struct{ db *DB }

func (p poolQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	c, err := p.db.acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer c.Release()
	tag, err := c.Exec(ctx, p.db.rebinds.get(q), args...)
	if err != nil {
		return 0, p.db.health.note(translate(err))
	}
	p.db.health.note(nil)
	return tag.RowsAffected(), nil
}

func (p poolQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	c, err := p.db.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return translatingRow{r: c.QueryRow(ctx, p.db.rebinds.get(q), args...), h: p.db.health, release: c.Release}
}

func (p poolQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	c, err := p.db.acquire(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.Query(ctx, p.db.rebinds.get(q), args...)
	if err != nil {
		c.Release()
		return nil, p.db.health.note(translate(err))
	}
	p.db.health.note(nil)
	return &releasingRows{Rows: r, conn: c}, nil
}

// releasingRows gives the connection back to the pool when first closed.
type releasingRows struct {
	pgx.Rows
	conn *pgxpool.Conn
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	if r.conn != nil {
		r.conn.Release()
		r.conn = nil
	}
}

type errRow struct{ err error }

func (e errRow) Scan(...any) error { return e.err }

// translatingRow translates a row's error, notes an outage, and gives a
// pooled connection back once scanned.
type translatingRow struct {
	r       row
	h       *health
	release func()
}

func (t translatingRow) Scan(dest ...any) error {
	err := t.r.Scan(dest...)
	if t.release != nil {
		t.release()
	}
	return t.h.note(translate(err))
}

// rebind turns `?` placeholders into PostgreSQL's `$n`. Queries in this
// package never use `?` for anything else.
// rebindCache remembers rebind's answers, so that a hot query is not
// rewritten at every call; past maxRebinds queries (IN lists of any
// length are built at run time) it only computes.
type rebindCache struct {
	m sync.Map // query → rebound query
	n atomic.Int64
}

const maxRebinds = 1024

func (c *rebindCache) get(q string) string {
	if r, ok := c.m.Load(q); ok {
		return r.(string)
	}
	r := rebind(q)
	if c.n.Load() < maxRebinds {
		if _, loaded := c.m.LoadOrStore(q, r); !loaded {
			c.n.Add(1)
		}
	}
	return r
}

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
