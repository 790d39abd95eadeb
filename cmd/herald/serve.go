package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/metrics"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/password"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/apns"
	"github.com/herald-vpn/herald/internal/push/fcm"
	"github.com/herald-vpn/herald/internal/server"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// app is Herald wired together: the one place that knows every concrete
// type.
type app struct {
	cfg           config.Config
	logger        *slog.Logger
	metrics       *metrics.Metrics
	db            *sqlstore.DB
	accounts      *accounts.Service
	sessions      *sessions.Service
	messenger     *messenger.Service
	devices       *devices.Service
	notifications *notifications.Service
}

// newGate builds the rate limiter: in memory, or Redis with an in-memory
// fallback when Redis cannot be reached.
func (a *app) newGate(ctx context.Context) (*limits.Gate, func() map[string]string, func(), error) {
	cfg := a.cfg
	policy := limits.AbusePolicy{
		RefusalsBeforeBlock: cfg.BlockAfterRefusals,
		RefusalWindow:       cfg.BlockRefusalWindow,
		BlockFor:            cfg.BlockDuration,
		BanAfterBlocks:      cfg.BanAfterBlocks,
		BanWindow:           cfg.BanWindow,
	}
	tiers := limits.PerMinute(cfg.RateLimitGlobal, cfg.RateLimitAuth, cfg.RateLimitProtected, cfg.RateLimitAdmin, cfg.RateLimitAPIKey)
	mem := limits.NewMemory(policy, nil)
	if cfg.RedisURL == "" {
		return limits.NewGate(mem, tiers, a.db, a.logger, 0), nil, func() { mem.Close() }, nil
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("HERALD_REDIS_URL: %w", err)
	}
	// Short timeouts: a request must not wait long on a Redis that is gone.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	// go-redis prints every failed dial straight to stderr; the fallback
	// below already logs an outage once a minute, so keep its lines at
	// debug level in our own log.
	redis.SetLogger(redisLog{a.logger.With("component", "redis")})
	client := redis.NewClient(opts)
	fb := limits.NewFallback(limits.NewRedis(client, policy, "herald:rl:", nil), mem, a.logger.With("component", "ratelimit"), nil)
	a.metrics.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_rate_limiter_degraded", Help: "1 while the rate limiter counts in memory because Redis is unreachable.",
	}, func() float64 {
		if fb.Degraded() {
			return 1
		}
		return 0
	}))
	degraded := func() map[string]string {
		if fb.Degraded() {
			return map[string]string{"rateLimiter": "redis unreachable; counting in memory on this replica"}
		}
		return nil
	}
	if err := client.Ping(ctx).Err(); err != nil {
		a.logger.Warn("Redis unreachable at start; rate limits counted in memory until it answers", "err", err)
	}
	return limits.NewGate(fb, tiers, a.db, a.logger, 0), degraded, func() { client.Close(); mem.Close() }, nil
}

// redisLog sends go-redis's internal messages to the debug log.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, fmt.Sprintf(format, v...))
}

// loadConfig reads and validates the configuration.
func loadConfig(env *environment) (config.Config, error) {
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return cfg, configError{err.Error()}
	}
	return cfg, nil
}

// newDevices is the devices service as configured.
func newDevices(db *sqlstore.DB, cfg config.Config) *devices.Service {
	return devices.NewService(db, devices.Config{PlanLimits: cfg.PlanDeviceLimits, UpgradeURL: cfg.UpgradeURL, RenewURL: cfg.RenewURL})
}

// openAppFromEnv is loadConfig then openApp, for the operator commands.
func openAppFromEnv(ctx context.Context, env *environment) (*app, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	return openApp(ctx, env, cfg)
}

// openApp opens the database, migrates it and builds the services. Workers
// are registered but not started.
func openApp(ctx context.Context, env *environment, cfg config.Config) (*app, error) {
	logger := newLogger(env.stderr, cfg.LogFormat, cfg.LogLevel)
	m := metrics.New()
	workers := river.NewWorkers()
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.JobsConfig{
		Workers: workers,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault:  {MaxWorkers: 10},
			accounts.QueueEmail: {MaxWorkers: 5},
			// Each broadcast sends with its own bounded concurrency; two at
			// once keep providers and the database within bounds.
			notifications.QueuePush: {MaxWorkers: 2},
		},
		RetryPolicy: sqlstore.Backoff{Base: cfg.JobRetryBase, Max: cfg.JobRetryMax},
		FetchPoll:   cfg.JobPoll,
		Logger:      logger.With("component", "jobs"),
		Middleware:  []rivertype.Middleware{m.JobMiddleware()},
		Periodic:    []*river.PeriodicJob{sqlstore.HousekeepingSchedule()},
	})
	if err != nil {
		return nil, err
	}
	if applied, err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	} else if len(applied) > 0 {
		logger.Info("migrations applied", "migrations", applied)
	}
	var sender mail.Sender
	if cfg.SMTPURL != "" {
		s, err := mail.NewSMTP(cfg.SMTPURL, cfg.MailFrom)
		if err != nil {
			db.Close()
			return nil, err
		}
		sender = s
	} else {
		sender = mail.NewDev(logger)
		logger.Warn("HERALD_SMTP_URL is not set: emails are written to this log, not sent")
	}
	hasher := password.NewHasher(password.Params{
		MemoryKiB:   uint32(cfg.Argon2MemoryKiB),
		Iterations:  uint32(cfg.Argon2Iterations),
		Parallelism: uint8(cfg.Argon2Parallelism),
		SaltLen:     16,
		KeyLen:      32,
	}, cfg.HashConcurrency)
	acctCfg := accounts.Config{
		CodeTTL:           cfg.VerificationCodeTTL,
		CodeAttempts:      5,
		ResendCooldown:    cfg.ResendCooldown,
		ResendHourlyLimit: cfg.ResendHourlyLimit,
		TrialPeriod:       cfg.TrialPeriod,
		ReferralBonus:     cfg.ReferralBonus,
		SendTimeout:       15 * time.Second,
		CodeKey:           cfg.SecretKey,
	}
	accts, err := accounts.NewService(ctx, db, hasher, m.CountingMailer(sender), acctCfg, logger, nil)
	if err != nil {
		db.Close()
		return nil, err
	}
	river.AddWorker(workers, &accounts.CodeEmailWorker{Service: accts})
	river.AddWorker(workers, &sqlstore.HousekeepingWorker{DB: db, DeliveryRetention: cfg.DeliveryRetention, Logger: logger.With("component", "housekeeping")})
	sessCfg := sessions.Config{AccessTTL: cfg.AccessTokenTTL, RefreshTTL: cfg.RefreshTokenTTL, Grace: cfg.RefreshGrace, Issuer: cfg.JWTIssuer}
	if cfg.JWTKeysFile != "" {
		if sessCfg.Keys, err = sessions.LoadKeySetFile(cfg.JWTKeysFile); err != nil {
			db.Close()
			return nil, fmt.Errorf("HERALD_JWT_KEYS_FILE: %w", err)
		}
	}
	sess, err := sessions.NewService(ctx, db, accts, sessCfg, nil)
	if err != nil {
		db.Close()
		return nil, err
	}
	bot, err := messenger.NewService(ctx, db, messenger.Config{
		Token:         cfg.TelegramBotToken,
		APIURL:        cfg.TelegramAPIURL,
		WebhookURL:    cfg.TelegramWebhookURL,
		WebhookSecret: cfg.TelegramWebhookSecret,
	}, nil, logger.With("component", "messenger"), nil)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("messenger: %w", err)
	}
	provider, err := newPushProvider(ctx, cfg, logger)
	if err != nil {
		db.Close()
		return nil, err
	}
	devs := newDevices(db, cfg)
	notes := notifications.NewService(db, provider, notifications.Config{
		BatchSize:   cfg.PushBatchSize,
		Concurrency: cfg.PushConcurrency,
		LeaseTTL:    cfg.PushLeaseTTL,
		Logger:      logger.With("component", "push"),
	})
	river.AddWorker(workers, &notifications.BroadcastWorker{Service: notes})
	return &app{cfg: cfg, logger: logger, metrics: m, db: db, accounts: accts, sessions: sess, messenger: bot, devices: devs, notifications: notes}, nil
}

// newPushProvider routes android to FCM, ios to APNs (or FCM without
// APNs), each under the send-rate cap; with neither configured, the
// development provider logs every push and reports it sent.
func newPushProvider(ctx context.Context, cfg config.Config, logger *slog.Logger) (push.Provider, error) {
	var fcmP, apnsP push.Provider
	if cfg.FCMCredentialsFile != "" {
		creds, err := os.ReadFile(cfg.FCMCredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("HERALD_FCM_CREDENTIALS_FILE: %w", err)
		}
		c, err := fcm.New(ctx, creds, cfg.FCMProjectID, cfg.FCMEndpoint, nil)
		if err != nil {
			return nil, fmt.Errorf("FCM: %w", err)
		}
		fcmP = notifications.RateLimit(c, float64(cfg.PushRate))
	}
	if cfg.APNsKeyFile != "" {
		key, err := os.ReadFile(cfg.APNsKeyFile)
		if err != nil {
			return nil, fmt.Errorf("HERALD_APNS_KEY_FILE: %w", err)
		}
		c, err := apns.New(key, cfg.APNsKeyID, cfg.APNsTeamID, cfg.APNsTopic, cfg.APNsEndpoint)
		if err != nil {
			return nil, fmt.Errorf("APNs: %w", err)
		}
		apnsP = notifications.RateLimit(c, float64(cfg.PushRate))
	}
	if fcmP == nil && apnsP == nil {
		logger.Warn("no push provider configured: pushes are written to this log and reported sent")
	}
	return push.NewRouter(fcmP, apnsP, push.NewDev(logger.With("component", "push-dev"))), nil
}

func cmdMigrate(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "migrate", "Apply the database migrations and exit.", true)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	_, db, applied, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Fprintf(env.stdout, "%s: %d migrations applied %v\n", db.Dialect(), len(applied), applied)
	return nil
}

// openStore is what the operator commands that only touch the database
// need: the configuration and the migrated store, without the mailer, the
// keys or the push providers (a broken APNs key must not stop an import).
func openStore(ctx context.Context, env *environment) (config.Config, *sqlstore.DB, []string, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return cfg, nil, nil, err
	}
	db, err := sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.JobsConfig{})
	if err != nil {
		return cfg, nil, nil, err
	}
	applied, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return cfg, nil, nil, err
	}
	return cfg, db, applied, nil
}

func cmdServe(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "serve", "Run the server until SIGINT or SIGTERM.", true)
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
	a, err := openApp(ctx, env, cfg)
	if err != nil {
		return err
	}
	defer a.db.Close()
	return a.serve(ctx)
}

// serve runs until ctx ends, then shuts down in order: stop accepting and
// finish requests, then let running jobs finish, then close the database.
func (a *app) serve(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.cfg.Addr)
	if err != nil {
		return err
	}
	gate, degraded, closeGate, err := a.newGate(ctx)
	if err != nil {
		return err
	}
	defer closeGate()
	handler := server.NewServer(server.Deps{
		Logger:         a.logger,
		DB:             a.db,
		Metrics:        a.metrics,
		Accounts:       a.accounts,
		Sessions:       a.sessions,
		Messenger:      a.messenger,
		Devices:        a.devices,
		Notifications:  a.notifications,
		Gate:           gate,
		Degraded:       degraded,
		TrustedProxies: a.cfg.TrustedProxies,
		Version:        version,
		GraphQLLimits: graph.Limits{
			MaxDepth:         a.cfg.GraphQLMaxDepth,
			MaxComplexity:    a.cfg.GraphQLMaxComplexity,
			MaxRootMutations: a.cfg.GraphQLMaxRootMutations,
		},
	})
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.logger.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if err := a.db.StartJobs(ctx); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	// A broadcast whose worker died (kill -9) is resumed now rather than
	// after River's stuck-job rescue an hour later.
	if n, err := a.notifications.Recover(ctx); err != nil {
		a.logger.Error("resuming broadcasts", "err", err)
	} else if n > 0 {
		a.logger.Info("broadcasts resumed", "jobs", n)
	}
	if err := a.messenger.Start(ctx); err != nil {
		return fmt.Errorf("start messenger: %w", err)
	}
	a.logger.Info("herald listening", "addr", ln.Addr().String(), "database", string(a.db.Dialect()), "version", version)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
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
	if err := a.messenger.Stop(sctx); err != nil {
		a.logger.Warn("stopping messenger", "err", err)
	}
	if err := a.db.StopJobs(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		a.logger.Warn("stopping jobs", "err", err)
	}
	a.logger.Info("stopped")
	return nil
}

func printConfig(w io.Writer) {
	fmt.Fprintln(w, "\nEnvironment:")
	for _, v := range config.Vars() {
		def := v.Default
		if def == "" {
			def = "(empty)"
		}
		fmt.Fprintf(w, "  %-30s %s (default %s)\n", v.Name, v.Help, def)
	}
}
