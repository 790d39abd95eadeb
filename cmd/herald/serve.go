package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/gqltransport"
	"github.com/herald-vpn/herald/internal/logbuffer"
	"github.com/herald-vpn/herald/internal/overview"
	"github.com/herald-vpn/herald/internal/rest"
	"github.com/herald-vpn/herald/internal/server"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/sqlstore"
)

func cmdMigrate(ctx context.Context, env *environment, args []string) error {
	if len(args) > 0 && args[0] == "status" {
		return cmdMigrateStatus(ctx, env, args[1:])
	}
	fs := newFlags(env, "migrate", "Apply the database migrations and exit.\n`herald migrate status` lists them, applied and pending, without applying any.", configHint)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{MaxConns: cfg.DatabaseMaxConns})
	if err != nil {
		return err
	}
	defer db.Close()
	applied, err := db.Migrate(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(env.stdout, "%s: %d migrations applied %v\n", db.Dialect(), len(applied), applied)
	return nil
}

// cmdMigrateStatus is `herald migrate status`: River's migrations and
// Herald's, in the order they apply, each applied or pending.
func cmdMigrateStatus(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "migrate status", "List the database migrations, River's then Herald's, each applied or pending, without applying any.", configHint)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	list, err := db.MigrationStatus(ctx)
	if err != nil {
		return err
	}
	applied := 0
	for _, m := range list {
		state := "pending"
		if m.Applied {
			state = "applied"
			applied++
		}
		fmt.Fprintf(env.stdout, "%-8s %s\n", state, m.Name)
	}
	fmt.Fprintf(env.stdout, "%s: %d applied, %d pending\n", db.Dialect(), applied, len(list)-applied)
	return nil
}

// serverLogger is the server's logger. A server logs a line per request,
// and writes them in batches (internal/logbuffer, HERALD_LOG_FLUSH_INTERVAL);
// closeLog writes what is held, and every line after it at once.
func serverLogger(w io.Writer, cfg config.Config) (logger *slog.Logger, closeLog func()) {
	if cfg.LogFlushInterval <= 0 {
		return newLogger(w, cfg.LogFormat, cfg.LogLevel), func() {}
	}
	out := logbuffer.NewWriter(w, cfg.LogFlushInterval)
	return slog.New(logbuffer.NewHandler(newHandler(out, cfg.LogFormat, cfg.LogLevel), out)), func() { _ = out.Close() }
}

// startingMessage is logged, with the address, when the listener is open
// and the database not yet; tests find the address by it
// (testsupport.StartingMessage is the same text).
const startingMessage = "starting: the API answers 503 until the database is open and migrated"

func cmdServe(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "serve", "Run the server until SIGINT or SIGTERM. At start it logs a one-line summary of the checks of `herald check`.", configTable)
	addr := fs.String("addr", "", "listen address (overrides HERALD_ADDR)")
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	cfg, err := loadConfig(env)
	if err != nil {
		return err
	}
	if *addr != "" {
		cfg.Addr = *addr
	}
	// The listener is up before the database is opened: while serve
	// waits for it (HERALD_DATABASE_START_TIMEOUT) and migrates, /healthz
	// answers alive and the rest 503 with Retry-After (server.Starting);
	// the real handler then takes over on the same listener.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	logger, closeLog := serverLogger(env.stderr, cfg)
	defer closeLog()
	swap := newHandlerSwap(server.Starting(logger, cfg.TrustedProxies))
	srv := &http.Server{
		Addr:              ln.Addr().String(),
		Handler:           swap,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	defer srv.Close() // a start that failed; a stop has shut it down already
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	logger.Info(startingMessage, "addr", srv.Addr)
	a, err := openApp(ctx, env, cfg, logger, true)
	switch {
	case errors.Is(err, errStartInterrupted):
		logger.Info("stopped while waiting for the database")
		return nil
	case err != nil && ctx.Err() != nil:
		// A stop during the migrations or the rest of the start: what it
		// cut short is a stop's doing, not a failure to report.
		logger.Info("stopped while starting", "err", err)
		return nil
	case err != nil:
		return err
	}
	return a.serve(ctx, srv, swap, errc)
}

// serve puts the real handler on srv, which cmdServe started with
// server.Starting, and runs until ctx ends, then shuts down in order: stop accepting and
// finish requests, then stop the background work and let running jobs
// finish (within HERALD_SHUTDOWN_TIMEOUT), then close the database. An
// error on the way closes whatever was opened, the same way.
func (a *App) serve(ctx context.Context, srv *http.Server, swap *handlerSwap, errc chan error) (err error) {
	defer func() {
		if err != nil {
			a.Close(context.Background())
		}
	}()
	gate, limiter := a.newGate(ctx)
	stopping := make(chan struct{})
	a.Overview = overview.New(a.db, a.Messenger, overview.Config{Version: readBuild().version, RateLimiter: limiter, Now: a.now})
	// The API requests in flight are bounded (the streams aside): past
	// the bound and its queue a request is answered 503 at once.
	requests := shed.New("API requests", shed.Bounds{Concurrency: a.cfg.MaxRequests, Queue: a.cfg.RequestQueue, Wait: a.cfg.RequestQueueWait})
	a.registerQueueMetrics("api_requests", requests)
	handler := server.NewServer(a.Services, server.Deps{
		Logger:            a.logger,
		DB:                a.db,
		Metrics:           a.metrics,
		Gate:              gate,
		Degraded:          degradedOf(limiter),
		TrustedProxies:    a.cfg.TrustedProxies,
		CORSOrigins:       a.cfg.CORSOrigins,
		Console:           a.cfg.Console,
		MetricsPublic:     a.cfg.MetricsPublic,
		PublicURL:         a.cfg.PublicBase(),
		PublicURLFromHost: a.cfg.Env == "development",
		Stopping:          stopping,
		TracerProvider:    a.tracer,
		Version:           readBuild().version,
		RequestTimeout:    a.cfg.RequestTimeout,
		Requests:          requests,
		GraphQLLimits: gqltransport.Limits{
			MaxDepth:         a.cfg.GraphQLMaxDepth,
			MaxComplexity:    a.cfg.GraphQLMaxComplexity,
			MaxRootMutations: a.cfg.GraphQLMaxRootMutations,
			Introspection:    a.cfg.GraphQLIntrospection,
		},
		WebSocketLimits: gqltransport.WSLimits{
			MaxSubscriptions: a.cfg.WSMaxSubscriptions,
			MessageRate:      cmp.Or(a.cfg.WSMessageRate, -1), // 0: no cap
			PingInterval:     a.cfg.WSPingInterval,
			IdleTimeout:      a.cfg.WSIdleTimeout,
			InitTimeout:      a.cfg.WSInitTimeout,
			MaxConnsPerUser:  a.cfg.WSMaxConnsPerUser,
			MaxConnsPerIP:    a.cfg.WSMaxConnsPerIP,
		},
		EventStreams: rest.StreamLimits{
			Heartbeat:     a.cfg.SSEHeartbeat,
			MaxDuration:   a.cfg.SSEMaxDuration,
			MaxPerCaller:  a.cfg.WSMaxConnsPerUser,
			MaxPerAddress: a.cfg.WSMaxConnsPerIP,
		},
	})
	srv.RegisterOnShutdown(func() { close(stopping) })
	if err := a.start(ctx); err != nil {
		return err
	}
	stopChecks := a.logChecks(ctx)
	a.onClose(func(context.Context) { stopChecks() })
	if a.cfg.Env == "development" {
		a.logger.Warn("HERALD_ENV=development: the auth rate-limit tier is off, emails without SMTP go to this log, and discovery's URLs follow the Host header; never run like this in production", "rate_limit_auth", a.cfg.RateLimitAuth)
	}
	if a.cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", a.cfg.MetricsAddr)
		if err != nil {
			return fmt.Errorf("HERALD_METRICS_ADDR: %w", err)
		}
		msrv := &http.Server{Handler: server.MetricsHandler(a.metrics), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := msrv.Serve(mln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- fmt.Errorf("metrics listener: %w", err)
			}
		}()
		a.onClose(func(ctx context.Context) { msrv.Shutdown(ctx) })
		a.logger.Info("metrics listening", "addr", mln.Addr().String())
	} else if !a.cfg.MetricsPublic {
		a.logger.Info("GET /metrics is not served: set HERALD_METRICS_ADDR (a listener of its own) or HERALD_METRICS_PUBLIC=on")
	}
	if a.cfg.PublicBase() == "" && a.cfg.Env != "development" {
		a.logger.Info("/.well-known/openid-configuration answers 404: set HERALD_PUBLIC_URL (or an http(s) HERALD_JWT_ISSUER) to publish it")
	}
	swap.set(handler)
	a.logger.Info("herald listening", "addr", srv.Addr, "database", string(a.db.Dialect()), "version", readBuild().version, "revision", readBuild().revision)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	a.logger.Info("shutting down", "timeout", a.cfg.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		a.logger.Warn("requests still running at shutdown deadline", "err", err)
	}
	a.Close(sctx)
	a.logger.Info("stopped")
	return nil
}

// memoryLimit is the soft memory limit main gives the Go runtime unless the
// operator set GOMEMLIMIT: what the password hashes may hold at once
// (HERALD_HASH_CONCURRENCY × HERALD_ARGON2_MEMORY, reused from hash to
// hash) plus 64 MiB for the rest, so that garbage is collected before the
// process grows past it.
func memoryLimit(cfg config.Config) int64 {
	return int64(cfg.HashConcurrency)*int64(cfg.Argon2MemoryKiB)*1024 + 64<<20
}

// defaultGCPercent is the Go runtime's GOGC unless the operator sets it.
const defaultGCPercent = 200

func printConfig(w io.Writer) {
	fmt.Fprintln(w, "\nEnvironment:")
	for _, v := range config.Vars() {
		def := v.Default
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(w, "  %-30s %s (default %s)\n", v.Name, v.Help, def)
	}
	fmt.Fprintf(w, "\nThe %s.\n", config.OnOffSpellings)
}
