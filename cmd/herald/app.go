package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/notices"
	"github.com/herald-vpn/herald/internal/captcha"
	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/metrics"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/notifyemail"
	"github.com/herald-vpn/herald/internal/ownernotice"
	"github.com/herald-vpn/herald/internal/passkeys"
	"github.com/herald-vpn/herald/internal/password"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/apns"
	"github.com/herald-vpn/herald/internal/push/fcm"
	"github.com/herald-vpn/herald/internal/push/hms"
	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/pwned"
	"github.com/herald-vpn/herald/internal/seal"
	"github.com/herald-vpn/herald/internal/securityalert"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/services"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/herald-vpn/herald/internal/tracing"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/herald-vpn/herald/internal/webhooks/httpsend"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/trace"
)

// App is Herald wired together: the one place that knows every concrete
// type. openApp opens everything in order; Close undoes exactly what was
// opened, in reverse, on every error path and at shutdown.
type App struct {
	cfg     config.Config
	logger  *slog.Logger
	metrics *metrics.Metrics
	// tracer is nil unless tracing is on (OTEL_* variables).
	tracer  trace.TracerProvider
	db      *sqlstore.DB
	redis   *redis.Client // nil without HERALD_REDIS_URL
	jobs    *jobs.Runner
	workers *river.Workers

	// now is the replica's one clock, handed to the store and to the
	// services that keep leases or times (replicaClock).
	now func() time.Time

	// services are what the doors open onto (and the operator commands
	// call); a server adds Overview once its rate limiter is built.
	services.Services
	live *live.Broker // live events: broadcast progress, subscriber changes

	closers []func(ctx context.Context)
}

// onClose registers what Close must undo (nil: nothing).
func (a *App) onClose(f func(ctx context.Context)) {
	if f != nil {
		a.closers = append(a.closers, f)
	}
}

// Close undoes what was opened, last first, within ctx's deadline.
func (a *App) Close(ctx context.Context) {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i](ctx)
	}
	a.closers = nil
}

// openAppFromEnv is loadConfig then openApp, for the operator commands.
func openAppFromEnv(ctx context.Context, env *environment) (*App, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return nil, err
	}
	return openApp(ctx, env, cfg, newLogger(env.stderr, cfg.LogFormat, cfg.LogLevel), false)
}

// openApp opens the database, migrates it and builds the services. Workers
// are registered but not started (see App.start). Unless serving (an
// operator command), the push providers are not built and the warnings
// that only concern a server (no SMTP, no push provider) are not logged:
// a command that only touches the database neither needs nor mentions them.
// Each constructor below returns what it opened and, when there is
// something to undo, its closer; they run in this order, and Close undoes
// them in reverse.
func openApp(ctx context.Context, env *environment, cfg config.Config, logger *slog.Logger, serving bool) (a *App, err error) {
	a = &App{cfg: cfg, logger: logger, metrics: metrics.New(), workers: river.NewWorkers(), now: replicaClock(cfg)}
	defer func() {
		if err != nil {
			a.Close(context.Background())
		}
	}()
	var undo closer
	if a.tracer, undo, err = openTracer(ctx, env, logger); err != nil {
		return a, err
	}
	a.onClose(undo)
	// The email templates are configuration: a broken override stops the
	// start (exit 2) before anything is opened.
	emails, err := loadEmailTemplates(cfg)
	if err != nil {
		return a, err
	}
	// What only a server must not start with (no SMTP in production)
	// stops it here, before the database is touched.
	if serving {
		if err := cfg.ServeRefusal(); err != nil {
			return a, configError{err.Error()}
		}
	}
	if cfg.TestClockOffset != 0 {
		logger.Warn("HERALD_TEST_CLOCK_OFFSET is set: this replica's clock is shifted; a test-only setting, never for production", "offset", cfg.TestClockOffset.String())
	}
	if a.db, undo, err = openDatabase(ctx, cfg, a.now, logger, a.tracer, serving); err != nil {
		return a, err
	}
	a.onClose(undo)
	if a.redis, undo, err = openRedis(cfg, logger); err != nil {
		return a, err
	}
	a.onClose(undo)
	if a.jobs, err = a.openJobs(); err != nil {
		return a, err
	}
	if err := a.openServices(ctx, emails, serving); err != nil {
		return a, err
	}
	return a, nil
}

// openServices builds the services over the open store and registers
// their workers.
func (a *App) openServices(ctx context.Context, emails *mail.Templates, serving bool) (err error) {
	cfg, logger := a.cfg, a.logger
	sender, err := a.newMailer(serving)
	if err != nil {
		return err
	}
	if a.Accounts, err = a.newAccounts(ctx, sender, emails); err != nil {
		return err
	}
	river.AddWorker(a.workers, &accounts.CodeEmailWorker{Service: a.Accounts})
	river.AddWorker(a.workers, &accounts.AccountNoticeWorker{Service: a.Accounts})
	a.SecurityLog = securitylog.New(a.db)
	categories, err := preferences.NewCatalogue(cfg.NotificationCategories)
	if err != nil {
		return err
	}
	a.Preferences = preferences.NewService(a.db, categories)
	a.Preferences.SetUnsubscribeLinks(preferences.UnsubscribeLinks{Key: a.Accounts.LinkKey(preferences.UnsubscribePurpose)})
	housekeeping := &jobs.HousekeepingWorker{DB: a.db, DeliveryRetention: cfg.DeliveryRetention, SecurityLog: a.SecurityLog, SecurityLogRetention: cfg.SecurityLogRetention,
		Guests: a.Accounts, GuestRetention: cfg.GuestRetention,
		Logger: logger.With("component", "housekeeping")}
	river.AddWorker(a.workers, housekeeping)
	if a.Sessions, err = a.newSessions(ctx); err != nil {
		return err
	}
	if a.APIKeys, err = apikeys.NewService(ctx, a.db, apikeys.Config{DefaultRateLimit: cfg.RateLimitAPIKey, Logger: logger.With("component", "apikeys"), Now: a.now}); err != nil {
		return err
	}
	if a.MFA, err = mfa.NewService(ctx, a.db, a.Accounts, a.Sessions, mfa.Config{
		Issuer:  cfg.ProductName,
		Lockout: mfa.Lockout{Attempts: cfg.MFALockoutAttempts, Duration: cfg.MFALockoutDuration},
		Log:     logger.With("component", "mfa"),
	}); err != nil {
		return err
	}
	if a.Passkeys, err = passkeys.NewService(a.db, a.Accounts, a.Sessions, a.MFA, passkeys.Config{
		RPID: cfg.WebAuthnRPID, RPName: cmp.Or(cfg.WebAuthnRPName, cfg.ProductName), Origins: cfg.WebAuthnOrigins,
		Log: logger.With("component", "passkeys"),
	}); err != nil {
		return configError{err.Error()}
	}
	a.Accounts.SetStepUp(a.MFA)
	a.Accounts.SetSecurityLog(a.SecurityLog)
	a.APIKeys.SetSecurityLog(a.SecurityLog)
	if cfg.PwnedPasswordsURL != "" {
		a.Accounts.SetBreachChecker(pwned.New(pwned.Config{URL: cfg.PwnedPasswordsURL, Timeout: cfg.PwnedPasswordsTimeout}))
	}
	if cfg.CaptchaProvider != "" {
		guard, err := captcha.New(captcha.Config{
			Provider: cfg.CaptchaProvider, Secret: cfg.CaptchaSecret, VerifyURL: cfg.CaptchaVerifyURL, Timeout: cfg.CaptchaTimeout,
			LoginFailures: cfg.CaptchaLoginFailures, FailureWindow: cfg.CaptchaFailureWindow, Log: logger.With("component", "captcha"),
			Shared: sharedLoginFailures(a.redis),
		})
		if err != nil {
			return configError{err.Error()}
		}
		a.Captcha = guard
		a.Accounts.SetCaptcha(guard)
	}
	a.APIKeys.SetStepUp(a.MFA)
	if a.Identities, err = a.newIdentities(ctx, cfg); err != nil {
		return err
	}
	a.Identities.SetSecondFactor(a.MFA)
	a.Identities.SetStepUp(a.MFA)
	river.AddWorker(a.workers, &mfa.NoticeWorker{Accounts: a.db, Templates: emails, Mail: sender, SendTimeout: 15 * time.Second, Log: logger.With("component", "mfa")})
	a.Authenticator = auth.NewAuthenticator(a.Sessions, a.APIKeys)
	a.Authenticator.RequireAdminMFA(cfg.AdminMFA == "required")
	a.Bans = limits.NewBans(a.db, nil)
	// Live events go to the other replicas by NOTIFY on PostgreSQL; a
	// store's own transactions announce theirs to this process.
	a.live = live.New(a.db, logger.With("component", "live"))
	a.db.OnLive(a.live.Deliver)
	a.Inbox = inbox.NewService(a.db, inbox.Config{Retention: cfg.InboxRetention, Live: a.live, Wire: view.InboxEventWire(), Logger: logger.With("component", "inbox")})
	housekeeping.Inbox = a.Inbox
	if a.Messenger, err = a.newMessenger(ctx); err != nil {
		return fmt.Errorf("messenger: %w", err)
	}
	a.MessengerBroadcasts = messenger.NewBroadcaster(a.Messenger, a.db, messenger.BroadcastConfig{Wire: view.MessengerBroadcastWire()})
	river.AddWorker(a.workers, &messenger.BroadcastWorker{Broadcaster: a.MessengerBroadcasts})
	var provider push.Provider = push.NewRouter(nil, nil, nil, nil, push.NewDev(logger.With("component", "push-dev")))
	if cfg.VAPIDKeyFile != "" {
		key, err := readVAPIDKey(cfg)
		if err != nil {
			return err
		}
		a.VAPIDPublicKey = key.Public()
	}
	if serving {
		if provider, err = newPushProvider(ctx, cfg, a.redis, a.instrumentProvider, logger); err != nil {
			return err
		}
	}
	a.Plans = newPlans(a.db, cfg)
	billingSetup, err := openBilling(ctx, cfg, a.Plans.Plans(), nil)
	if err != nil {
		return configError{"billing: " + err.Error()}
	}
	a.Billing = billing.NewService(a.db, a.Plans, billing.Config{Products: billingSetup.products, Channels: billingSetup.channels, Logger: logger.With("component", "billing"), Now: a.now})
	river.AddWorker(a.workers, &billing.IngestWorker{Service: a.Billing})
	river.AddWorker(a.workers, &billing.SweepWorker{Service: a.Billing})
	river.AddWorker(a.workers, &billing.ReconcileWorker{Service: a.Billing})
	river.AddWorker(a.workers, &billing.SettleWorker{Service: a.Billing})
	a.Devices = devices.NewService(a.db, a.Plans, devices.Config{Tokens: tokenRules(cfg), Now: a.now})
	a.Notifications = a.newNotifications(provider)
	river.AddWorker(a.workers, &notifications.HeldSendWorker{Service: a.Notifications})
	river.AddWorker(a.workers, &notifications.DigestWorker{Service: a.Notifications})
	river.AddWorker(a.workers, &notifications.BroadcastWorker{Service: a.Notifications})
	a.Idempotency = idempotency.New(a.db, logger.With("component", "idempotency"))
	// What tells an account's owner on every channel: the subscription
	// notices and the new-device alerts.
	owner := ownernotice.Deps{Accounts: a.db, Push: a.Notifications, Templates: emails, Mail: sender, Chats: a.Messenger, Idempotency: a.Idempotency}
	owner.Log = logger.With("component", "notices")
	noticeWorker, err := notices.New(notices.Deps{Deps: owner, Entitlements: a.db},
		notices.Config{Product: cfg.ProductName, RenewURL: a.Plans.RenewURL})
	if err != nil {
		return err
	}
	river.AddWorker(a.workers, noticeWorker)
	owner.Log = logger.With("component", "securityalert")
	alertWorker, err := securityalert.New(securityalert.Deps{Deps: owner, EndURL: endSessionURL(cfg.PublicBase(), a.Sessions)},
		securityalert.Config{Product: cfg.ProductName})
	if err != nil {
		return err
	}
	river.AddWorker(a.workers, alertWorker)
	// The email channel of sends to a user.
	owner.Log = logger.With("component", "notifyemail")
	emailWorker, err := notifyemail.New(notifyemail.Deps{Deps: owner, Settings: a.db, Broadcasts: a.db, Categories: a.Preferences.Catalogue(),
		UnsubscribeURL: unsubscribeURL(cfg.PublicBase(), a.Preferences.UnsubscribeLinks())}, 0)
	if err != nil {
		return err
	}
	river.AddWorker(a.workers, emailWorker)
	a.Webhooks = a.newWebhooks()
	river.AddWorker(a.workers, &webhooks.DeliveryWorker{Service: a.Webhooks})
	slots := a.Webhooks.Slots()
	housekeeping.WebhookSlots = &slots
	return nil
}

// closer undoes what a constructor opened; nil when there is nothing to
// undo.
type closer func(ctx context.Context)

// openTracer is the tracer provider (nil unless tracing is on: the
// environment's, or OTEL_* variables) and the closer that flushes its
// spans.
func openTracer(ctx context.Context, env *environment, logger *slog.Logger) (trace.TracerProvider, closer, error) {
	if env.tracerProvider != nil {
		return env.tracerProvider, nil, nil
	}
	tp, shutdown, err := tracing.FromEnv(ctx, env.getenv, readBuild().version)
	if err != nil || tp == nil {
		return nil, nil, err
	}
	logger.Info("tracing on: spans are exported over OTLP")
	return tp, func(ctx context.Context) {
		if err := shutdown(ctx); err != nil {
			logger.Warn("flushing traces", "err", err)
		}
	}, nil
}

// openDatabase opens and migrates the database and, for a server, seals
// its stored secrets; the closer closes it.
func openDatabase(ctx context.Context, cfg config.Config, now func() time.Time, logger *slog.Logger, tp trace.TracerProvider, serving bool) (*sqlstore.DB, closer, error) {
	// A server waits for a database that refuses connections at start
	// (HERALD_DATABASE_START_TIMEOUT); an operator command fails at once.
	var wait time.Duration
	if serving {
		wait = cfg.DatabaseStartTimeout
	}
	db, err := openMigrated(ctx, cfg, now, logger, tp, wait)
	if err != nil {
		return nil, nil, err
	}
	if serving {
		if err := sealSecrets(ctx, db, cfg, logger); err != nil {
			db.Close()
			return nil, nil, err
		}
	}
	return db, func(context.Context) { db.Close() }, nil
}

// openRedis is the client of HERALD_REDIS_URL (nil when it is not set)
// and its closer.
func openRedis(cfg config.Config, logger *slog.Logger) (*redis.Client, closer, error) {
	rdb, err := newRedis(cfg, logger)
	if err != nil || rdb == nil {
		return nil, nil, err
	}
	return rdb, func(context.Context) { rdb.Close() }, nil
}

// openJobs is the job runner over the store, its queues and their
// workers; App.start starts it and registers its stop.
func (a *App) openJobs() (*jobs.Runner, error) {
	cfg := a.cfg
	return jobs.Open(a.db, jobs.Config{
		Workers: a.workers,
		Queues: map[string]river.QueueConfig{
			river.QueueDefault:  {MaxWorkers: 10},
			accounts.QueueEmail: {MaxWorkers: 5},
			// Notification emails (sends to a user on channel email): a
			// queue of their own, so that a burst of them never delays
			// a signup's code email.
			notifications.QueueEmail: {MaxWorkers: 5},
			// Each broadcast sends with its own bounded concurrency; two at
			// once keep providers and the database within bounds.
			notifications.QueuePush: {MaxWorkers: 2},
			// Deliveries mostly wait on receivers; a slow one holds a
			// worker for at most webhooks.Timeout, and one endpoint at
			// most HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY of them.
			webhooks.Queue: {MaxWorkers: 20},
			// One bot, one pacer: two broadcasts at once share its 30/s.
			messenger.QueueMessenger: {MaxWorkers: 2},
		},
		RetryPolicy: jobs.Backoff{Base: cfg.JobRetryBase, Max: cfg.JobRetryMax},
		FetchPoll:   cfg.JobPoll,
		Logger:      a.logger.With("component", "jobs"),
		Middleware:  a.jobMiddleware(),
		Periodic:    append([]*river.PeriodicJob{jobs.HousekeepingSchedule()}, billing.Periodic(cfg.BillingReconcileInterval)...),
	})
}

// newMailer is the mail sender: SMTP, or the development mailer that
// writes to the log (a server warns of it), counted and, when tracing,
// with a span per send.
func (a *App) newMailer(serving bool) (mail.Sender, error) {
	cfg, logger := a.cfg, a.logger
	var sender mail.Sender
	if cfg.SMTPURL != "" {
		var err error
		if sender, err = mail.NewSMTP(cfg.SMTPURL, cfg.MailFrom); err != nil {
			return nil, err
		}
	} else {
		sender = mail.NewDev(logger)
		switch {
		case serving && cfg.Env != "development":
			logger.Warn("HERALD_MAIL_TO_LOG=on and HERALD_SMTP_URL is not set: emails, with their one-time codes, are written to this log, not sent")
		case serving:
			logger.Warn("HERALD_SMTP_URL is not set: emails are written to this log, not sent")
		}
	}
	// Counted first: the counter tells the development mailer (logged)
	// from a real one (sent) by its type, which a wrapper would hide.
	sender = a.metrics.CountingMailer(sender)
	if a.tracer != nil {
		sender = tracing.Mailer(a.tracer, sender)
	}
	return sender, nil
}

// newAccounts is the accounts service, hashing passwords as configured.
func (a *App) newAccounts(ctx context.Context, sender mail.Sender, emails *mail.Templates) (*accounts.Service, error) {
	cfg := a.cfg
	hasher := password.NewHasherWithin(password.Params{
		MemoryKiB:   uint32(cfg.Argon2MemoryKiB),
		Iterations:  uint32(cfg.Argon2Iterations),
		Parallelism: uint8(cfg.Argon2Parallelism),
		SaltLen:     16,
		KeyLen:      32,
	}, shed.Bounds{Concurrency: cfg.HashConcurrency, Queue: cfg.HashQueue, Wait: cfg.HashWait})
	a.registerQueueMetrics("password_hashes", hasher.Slots())
	return accounts.NewService(ctx, a.db, hasher, sender, accounts.Config{
		CodeTTL:           cfg.VerificationCodeTTL,
		CodeAttempts:      5,
		ResendCooldown:    cfg.ResendCooldown,
		ResendHourlyLimit: cfg.ResendHourlyLimit,
		TrialPeriod:       cfg.TrialPeriod,
		ReferralBonus:     cfg.ReferralBonus,
		SendTimeout:       15 * time.Second,
		RecentSignIn:      cfg.RecentSignIn,
		CodeKey:           cfg.SecretKey,
		Emails:            emails,
		DeviceLimit:       newPlans(a.db, cfg).DeviceLimit,
		// The old address's notice links here; without a public URL it
		// has no link (docs/accounts.md).
		CancelEmailChangeURL: cancelEmailChangeURL(cfg.PublicBase()),
		Now:                  a.now,
	}, a.logger)
}

// registerQueueMetrics publishes a class of work's queue (package shed):
// what runs, what waits, and what was refused since the start.
func (a *App) registerQueueMetrics(name string, q *shed.Queue) {
	reg := a.metrics.Registry()
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_" + name + "_running", Help: q.Class() + ": running now."},
		func() float64 { return float64(q.Running()) }))
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "herald_" + name + "_waiting", Help: q.Class() + ": waiting for a place now."},
		func() float64 { return float64(q.Waiting()) }))
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "herald_" + name + "_refused_total", Help: q.Class() + ": refused (queue full or waited too long), answered 503."},
		func() float64 { return float64(q.Refusals()) }))
}

// newSessions is the sessions service, signing with HERALD_JWT_KEYS_FILE's
// keys when it is set.
func (a *App) newSessions(ctx context.Context) (*sessions.Service, error) {
	cfg := a.cfg
	sessCfg := sessions.Config{AccessTTL: cfg.AccessTokenTTL, RefreshTTL: cfg.RefreshTokenTTL, Grace: cfg.RefreshGrace, Issuer: cfg.JWTIssuer, Audience: cfg.JWTAudience, Now: a.now}
	if cfg.JWTKeysFile != "" {
		var err error
		if sessCfg.Keys, err = sessions.LoadKeySetFile(cfg.JWTKeysFile); err != nil {
			return nil, fmt.Errorf("HERALD_JWT_KEYS_FILE: %w", err)
		}
	}
	return sessions.NewService(ctx, a.db, a.Accounts, sessCfg)
}

// newMessenger is the Telegram bot's service, paced as configured.
func (a *App) newMessenger(ctx context.Context) (*messenger.Service, error) {
	cfg, logger := a.cfg, a.logger
	telegramGap := time.Second / time.Duration(cmp.Or(cfg.TelegramRate, 30))
	return messenger.NewService(ctx, a.db, messenger.Config{
		Token:         cfg.TelegramBotToken,
		Replies:       texts.TelegramReply,
		APIURL:        cfg.TelegramAPIURL,
		WebhookURL:    cfg.TelegramWebhookURL,
		WebhookSecret: cfg.TelegramWebhookSecret,
		PollLeaseTTL:  cfg.TelegramPollLeaseTTL,
		Pacer:         limits.ChatPaceConfig{Global: telegramGap},
		SharedPacer:   a.sharedChatPacer(telegramGap, logger),
		Live:          a.live,
		Now:           a.now,
	}, a.telegramHTTPClient(), logger.With("component", "messenger"))
}

// newNotifications is the push service over provider.
func (a *App) newNotifications(provider push.Provider) *notifications.Service {
	cfg := a.cfg
	return notifications.NewService(a.db, provider, notifications.Config{
		BatchSize:   cfg.PushBatchSize,
		Concurrency: cfg.PushConcurrency,
		LeaseTTL:    cfg.PushLeaseTTL,
		Live:        a.live,
		Delivered:   a.metrics.BroadcastDelivered,
		Chats:       a.Messenger,
		Inbox:       a.Inbox,
		Categories:  a.Preferences.Catalogue(),
		Digests:     cfg.NotificationDigests,
		Logger:      a.logger.With("component", "push"),
		Wire:        view.NotificationJobWire(),
		Tokens:      tokenRules(cfg),
		Now:         a.now,
	})
}

// newWebhooks is the webhooks service, delivering under the address
// policy.
func (a *App) newWebhooks() *webhooks.Service {
	cfg := a.cfg
	webhookPolicy := webhooks.AddressPolicy{AllowPrivate: cfg.WebhooksAllowPrivate, AllowInsecure: cfg.WebhooksAllowInsecure, Ports: cfg.WebhooksAllowedPorts}
	return webhooks.NewService(a.db, httpsend.New(httpsend.Options{Policy: webhookPolicy}), webhooks.Config{
		AllowInsecure: cfg.WebhooksAllowInsecure,
		AllowPrivate:  cfg.WebhooksAllowPrivate,
		AllowedPorts:  cfg.WebhooksAllowedPorts,
		Concurrency:   cfg.WebhooksConcurrency,
		Schedule:      cfg.WebhooksRetrySchedule,
		DisableAfter:  cfg.WebhooksDisableAfter,
		Logger:        a.logger.With("component", "webhooks"),
		Outcome:       a.metrics.WebhookDelivery,
		Now:           a.now,
	})
}

// start starts the background work: jobs, the broadcast sweep and the
// bot. Close stops each, in reverse.
func (a *App) start(ctx context.Context) error {
	if err := a.jobs.Start(ctx); err != nil {
		return fmt.Errorf("start jobs: %w", err)
	}
	a.onClose(func(ctx context.Context) {
		if err := a.jobs.Stop(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			a.logger.Warn("stopping jobs", "err", err)
		}
	})
	// A broadcast whose worker died (kill -9, here or on another replica)
	// is taken over once its lease expires, without waiting for a restart:
	// one loop sweeps both channels.
	sweepCtx, stopSweep := context.WithCancel(context.WithoutCancel(ctx))
	sweepDone := fanout.SweepLoop(sweepCtx, a.logger,
		fanout.Sweep{Name: "broadcast", Sweeper: a.Notifications},
		fanout.Sweep{Name: "messenger broadcast", Sweeper: a.MessengerBroadcasts})
	a.onClose(func(context.Context) { stopSweep(); <-sweepDone })
	// Revocations made on any replica evict this one's cached sessions.
	watchCtx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		a.Sessions.WatchRevocations(watchCtx)
	}()
	a.onClose(func(context.Context) { stopWatch(); <-watchDone })
	// Live events (broadcast progress, subscriber changes) published on
	// the other replicas reach this one's subscribers.
	liveCtx, stopLive := context.WithCancel(context.WithoutCancel(ctx))
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		a.db.WatchLive(liveCtx, a.live.Deliver, a.live.Resync)
	}()
	a.onClose(func(context.Context) { stopLive(); <-liveDone })
	if err := a.Messenger.Start(ctx); err != nil {
		return fmt.Errorf("start messenger: %w", err)
	}
	a.onClose(func(ctx context.Context) {
		if err := a.Messenger.Stop(ctx); err != nil {
			a.logger.Warn("stopping messenger", "err", err)
		}
	})
	return nil
}

// openMigrated opens the database, trying again for up to wait while it
// cannot be reached (openWhenReachable), and applies its migrations.
func openMigrated(ctx context.Context, cfg config.Config, now func() time.Time, logger *slog.Logger, tp trace.TracerProvider, wait time.Duration) (*sqlstore.DB, error) {
	keys, err := encryptionKeys(cfg)
	if err != nil {
		return nil, err
	}
	opts := sqlstore.Options{Logger: logger.With("component", "database"), MaxConns: cfg.DatabaseMaxConns, Keys: keys, QueryTimeout: cfg.DatabaseQueryTimeout}
	if tp != nil {
		opts.Tracer = tracing.Tracer(tp)
	}
	db, err := openWhenReachable(ctx, wait, logger, func(ctx context.Context) (*sqlstore.DB, error) {
		return sqlstore.Open(ctx, cfg.DatabaseURL, opts)
	})
	if err != nil {
		return nil, err
	}
	db.Now = now
	applied, err := db.Migrate(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate: %w", err)
	}
	if len(applied) > 0 {
		logger.Info("migrations applied", "migrations", applied)
	}
	return db, nil
}

// encryptionKeys is the keyring of HERALD_ENCRYPTION_KEY and
// HERALD_ENCRYPTION_KEY_PREVIOUS; nil without a key.
func encryptionKeys(cfg config.Config) (*seal.Keyring, error) {
	if cfg.EncryptionKey == nil {
		return nil, nil
	}
	k, err := seal.NewKeyring(cfg.EncryptionKey, cfg.EncryptionKeysPrevious...)
	if err != nil {
		return nil, configError{"HERALD_ENCRYPTION_KEY: " + err.Error()}
	}
	return k, nil
}

// sealSecrets seals, at a server's start, the secrets the database keeps
// in plain text or under a previous key. Secrets the keys given cannot
// open stop the start: a server must not run on secrets it cannot read.
func sealSecrets(ctx context.Context, db *sqlstore.DB, cfg config.Config, logger *slog.Logger) error {
	n, err := db.SealSecrets(ctx)
	if errors.Is(err, sqlstore.ErrSecretsUnreadable) {
		return configError{unreadableSecrets(cfg, err)}
	}
	if err != nil {
		return fmt.Errorf("seal the stored secrets: %w", err)
	}
	keys, _ := encryptionKeys(cfg)
	switch {
	case n > 0:
		logger.Info("stored secrets sealed with HERALD_ENCRYPTION_KEY", "sealed", n, "key", keys.ID())
	case keys == nil && cfg.Env != "development":
		logger.Warn("HERALD_ENCRYPTION_KEY is not set: the secrets kept in the database (webhook signing secrets, the JWT seed, HMAC keys) are stored in plain text")
	}
	return nil
}

// unreadableSecrets is the line that says which key to set when stored
// secrets do not open.
func unreadableSecrets(cfg config.Config, err error) string {
	given := "HERALD_ENCRYPTION_KEY is not set"
	if keys, _ := encryptionKeys(cfg); keys != nil {
		given = "HERALD_ENCRYPTION_KEY is key " + keys.ID()
	}
	return "HERALD_ENCRYPTION_KEY: " + oneLine(err.Error()) + " (" + given + "): set HERALD_ENCRYPTION_KEY to the key that sealed them (its id is shown), and while rotating keep the old key in HERALD_ENCRYPTION_KEY_PREVIOUS"
}

// openStore is what the operator commands that only touch the database
// need: the configuration and the migrated store, without the mailer, the
// keys or the push providers (a broken APNs key must not stop an import).
func openStore(ctx context.Context, env *environment) (config.Config, *sqlstore.DB, error) {
	cfg, err := loadConfig(env)
	if err != nil {
		return cfg, nil, err
	}
	db, err := openMigrated(ctx, cfg, replicaClock(cfg), newLogger(env.stderr, cfg.LogFormat, cfg.LogLevel), nil, 0)
	return cfg, db, err
}

// loadConfig reads and validates the configuration.
func loadConfig(env *environment) (config.Config, error) {
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return cfg, configError{err.Error()}
	}
	return cfg, nil
}

// loadEmailTemplates parses the email templates (the embedded ones and
// HERALD_EMAIL_TEMPLATES_DIR's overrides) for the configured brand; a
// template that does not parse or render is a configuration error naming
// its file (and line).
func loadEmailTemplates(cfg config.Config) (*mail.Templates, error) {
	t, err := mail.LoadTemplates(cfg.EmailTemplatesDir, mail.Brand{Product: cfg.ProductName, LogoURL: cfg.EmailLogoURL, SupportEmail: cfg.SupportEmail})
	if err != nil {
		return nil, configError{"HERALD_EMAIL_TEMPLATES_DIR: " + err.Error()}
	}
	return t, nil
}

// sharedLoginFailures counts the CAPTCHA's login failures in Redis, for
// every replica, when there is one; nil counts them in each replica.
func sharedLoginFailures(rdb *redis.Client) captcha.Failures {
	if rdb == nil {
		return nil
	}
	return captcha.RedisFailures{Client: rdb, Prefix: "herald:captcha:"}
}

// newPlans is the subscriptions service as configured.
func newPlans(db *sqlstore.DB, cfg config.Config) *subscriptions.Service {
	return subscriptions.NewService(db, subscriptions.Config{DeviceLimits: cfg.PlanDeviceLimits, UpgradeURL: cfg.UpgradeURL, RenewURL: cfg.RenewURL, RenewURLs: renewURLs(cfg), Now: db.Now})
}

// newGate builds the rate limiter: in memory, or Redis with an in-memory
// fallback when Redis cannot be reached; state reports which (and whether
// it has fallen back). Close stops its memory backend.
func (a *App) newGate(ctx context.Context) (gate *limits.Gate, state func() limits.State) {
	cfg := a.cfg
	policy := limits.AbusePolicy{
		RefusalsBeforeBlock: cfg.BlockAfterRefusals,
		RefusalWindow:       cfg.BlockRefusalWindow,
		BlockFor:            cfg.BlockDuration,
		BanAfterBlocks:      cfg.BanAfterBlocks,
		BanWindow:           cfg.BanWindow,
	}
	tiers := limits.PerWindow(cfg.RateLimitWindow, cfg.RateLimitGlobal, cfg.RateLimitAuth, cfg.RateLimitProtected, cfg.RateLimitAdmin, cfg.RateLimitAPIKey)
	mem := limits.NewMemory(policy, nil)
	a.onClose(func(context.Context) { mem.Close() })
	if a.redis == nil {
		return limits.NewGate(mem, tiers, a.db, a.logger, 0), func() limits.State { return limits.State{Backend: limits.BackendMemory} }
	}
	fb := limits.NewFallback(limits.NewRedis(a.redis, policy, "herald:rl:", nil), mem, a.logger.With("component", "ratelimit"), nil)
	a.metrics.Registry().MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "herald_rate_limiter_degraded", Help: "1 while the rate limiter counts in memory because Redis is unreachable.",
	}, func() float64 {
		if fb.Degraded() {
			return 1
		}
		return 0
	}))
	state = func() limits.State {
		if fb.Degraded() {
			return limits.State{Backend: limits.BackendRedis, Degraded: true, Reason: "redis unreachable; counting in memory on this replica"}
		}
		return limits.State{Backend: limits.BackendRedis}
	}
	if err := a.redis.Ping(ctx).Err(); err != nil {
		a.logger.Warn("Redis unreachable at start; rate limits counted in memory until it answers", "err", err)
	}
	return limits.NewGate(fb, tiers, a.db, a.logger, 0), state
}

// degradedOf is what /readyz reports of the rate limiter: the reason,
// while it has fallen back to counting in memory.
func degradedOf(state func() limits.State) func() map[string]string {
	return func() map[string]string {
		if s := state(); s.Degraded {
			return map[string]string{"rateLimiter": s.Reason}
		}
		return nil
	}
}

// newRedis is the client of HERALD_REDIS_URL, nil when it is not set.
func newRedis(cfg config.Config, logger *slog.Logger) (*redis.Client, error) {
	if cfg.RedisURL == "" {
		return nil, nil
	}
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("HERALD_REDIS_URL: %w", err)
	}
	// Short timeouts and one dial attempt: a request or a send must not
	// wait long on a Redis that is gone; the callers fall back.
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 500*time.Millisecond, 500*time.Millisecond, 500*time.Millisecond
	// A free connection within a second, too, however many callers wait.
	opts.PoolTimeout = time.Second
	opts.DialerRetries = 1
	// One retry, for a pooled connection Redis closed (a restart); more
	// only multiply the wait on a silent network (go-redis's default of 3
	// made it 2.5 s).
	opts.MaxRetries = 1
	// go-redis prints every failed dial straight to stderr; the fallbacks
	// already log an outage once a minute, so keep its lines at debug
	// level in our own log.
	redis.SetLogger(redisLog{logger.With("component", "redis")})
	return redis.NewClient(opts), nil
}

// redisLog sends go-redis's internal messages to the debug log.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, fmt.Sprintf(format, v...))
}

// newPushProvider routes android to FCM, ios to APNs (or FCM without
// APNs), web to Web Push and huawei to Huawei Push Kit, each under its
// send-rate cap (shared by the replicas through Redis when it is
// configured); with none configured, the development provider, under the
// same cap, logs every push and reports it sent.
func newPushProvider(ctx context.Context, cfg config.Config, rdb *redis.Client, instrument func(name string, p push.Provider) push.Provider, logger *slog.Logger) (push.Provider, error) {
	pace := func(provider string) notifications.Pacer {
		switch {
		case cfg.PushRate <= 0:
			return nil
		case rdb != nil:
			return limits.NewSharedPace(rdb, "herald:pushrate:"+provider, float64(cfg.PushRate), logger.With("component", "push"))
		}
		return limits.NewPace(float64(cfg.PushRate))
	}
	var fcmP, apnsP, webP, hmsP push.Provider
	if cfg.FCMCredentialsFile != "" {
		creds, err := os.ReadFile(cfg.FCMCredentialsFile)
		if err != nil {
			return nil, fmt.Errorf("HERALD_FCM_CREDENTIALS_FILE: %w", err)
		}
		c, err := fcm.New(ctx, creds, cfg.FCMProjectID, cfg.FCMEndpoint, nil)
		if err != nil {
			return nil, fmt.Errorf("FCM: %w", err)
		}
		fcmP = notifications.RateLimit(instrument("fcm", c), pace("fcm"))
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
		apnsP = notifications.RateLimit(instrument("apns", c), pace("apns"))
	}
	if cfg.VAPIDKeyFile != "" {
		key, err := os.ReadFile(cfg.VAPIDKeyFile)
		if err != nil {
			return nil, fmt.Errorf("HERALD_VAPID_PRIVATE_KEY_FILE: %w", err)
		}
		c, err := webpush.New(key, cfg.VAPIDSubject, webpush.Options{AllowPrivate: cfg.WebPushAllowPrivate})
		if err != nil {
			return nil, fmt.Errorf("web push: %w", err)
		}
		webP = notifications.RateLimit(instrument("webpush", c), pace("webpush"))
	}
	if cfg.HMSAppID != "" {
		c, err := hms.New(hms.Config{AppID: cfg.HMSAppID, ClientID: cfg.HMSClientID, ClientSecret: cfg.HMSClientSecret,
			TokenURL: cfg.HMSTokenURL, SendURL: cfg.HMSSendURL})
		if err != nil {
			return nil, fmt.Errorf("HMS: %w", err)
		}
		hmsP = notifications.RateLimit(instrument("hms", c), pace("hms"))
	}
	if fcmP == nil && apnsP == nil && webP == nil && hmsP == nil {
		logger.Warn("no push provider configured: pushes are written to this log and reported sent")
	}
	// The development provider is paced too, so that a broadcast on a
	// development server lasts as it would (its progress can be watched).
	dev := notifications.RateLimit(instrument("dev", push.NewDev(logger.With("component", "push-dev"))), pace("dev"))
	return push.NewRouter(fcmP, apnsP, webP, hmsP, dev), nil
}

// readVAPIDKey reads and parses HERALD_VAPID_PRIVATE_KEY_FILE.
func readVAPIDKey(cfg config.Config) (*webpush.VAPIDKey, error) {
	b, err := os.ReadFile(cfg.VAPIDKeyFile)
	if err != nil {
		return nil, configError{"HERALD_VAPID_PRIVATE_KEY_FILE: " + err.Error()}
	}
	key, err := webpush.ParseVAPIDKey(b)
	if err != nil {
		return nil, configError{"HERALD_VAPID_PRIVATE_KEY_FILE: " + err.Error()}
	}
	return key, nil
}

// tokenRules are the push-token rules the configuration asks for.
func tokenRules(cfg config.Config) devices.TokenRules {
	return devices.TokenRules{AllowLoopbackWebPush: cfg.WebPushAllowPrivate}
}

// jobMiddleware counts every job attempt and, when tracing, carries the
// inserting request's trace into the job.
func (a *App) jobMiddleware() []rivertype.Middleware {
	mw := []rivertype.Middleware{a.metrics.JobMiddleware()}
	if a.tracer != nil {
		mw = append(mw, tracing.JobMiddleware(a.tracer))
	}
	return mw
}

// instrumentProvider counts a push provider's calls and, when tracing,
// gives each a span.
func (a *App) instrumentProvider(name string, p push.Provider) push.Provider {
	if a.tracer != nil {
		p = tracing.Provider(a.tracer, name, p)
	}
	return a.metrics.CountingProvider(name, p)
}

// telegramHTTPClient is the Telegram client's (nil: its default), with a
// span per call when tracing.
func (a *App) telegramHTTPClient() *http.Client {
	if a.tracer == nil {
		return nil
	}
	return &http.Client{Transport: tracing.Transport(a.tracer, "telegram", nil)}
}

// sharedChatPacer shares the bot's pace (limits.ChatGap per chat, gap
// between any two) with every replica through Redis, when it is
// configured; nil: each process paces alone.
func (a *App) sharedChatPacer(gap time.Duration, logger *slog.Logger) func(limits.ChatPacer) limits.ChatPacer {
	if a.redis == nil {
		return nil
	}
	return func(local limits.ChatPacer) limits.ChatPacer {
		return limits.NewSharedChatPace(a.redis, "herald:telegram:", limits.ChatGap, gap, local, logger.With("component", "messenger"))
	}
}

// endSessionURL makes a new-device alert's link that ends its session
// (nil without a public base URL: the alerts carry no link).
func endSessionURL(base string, sess *sessions.Service) func(accountID, sessionID string) string {
	if base == "" {
		return nil
	}
	return func(accountID, sessionID string) string {
		return base + "/api/v1/auth/sessions/end?token=" + url.QueryEscape(sess.EndLinkToken(accountID, sessionID))
	}
}

// unsubscribeURL is the one-click unsubscribe link of a notification
// email (nil without a public base URL: the emails carry none).
func unsubscribeURL(base string, links preferences.UnsubscribeLinks) func(accountID, category string) string {
	if base == "" {
		return nil
	}
	return func(accountID, category string) string {
		return base + "/api/v1/notifications/unsubscribe?token=" + url.QueryEscape(links.Sign(accountID, category, preferences.ChannelEmail))
	}
}

// cancelEmailChangeURL is the page an email change's cancel link opens
// ("" without a public base URL).
func cancelEmailChangeURL(base string) string {
	if base == "" {
		return ""
	}
	return base + "/api/v1/auth/email-change/cancel"
}
