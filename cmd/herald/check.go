package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/herald-vpn/herald/internal/captcha"
	"github.com/herald-vpn/herald/internal/pwned"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/apns"
	"github.com/herald-vpn/herald/internal/push/fcm"
	"github.com/herald-vpn/herald/internal/push/hms"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/redis/go-redis/v9"
)

// checkStatus is the verdict of one check.
type checkStatus int

const (
	checkOK checkStatus = iota
	checkWarning
	checkError
)

func (s checkStatus) String() string {
	return [...]string{"ok", "warning", "error"}[s]
}

// checkResult is one line of `herald check`: what was tried, what came of
// it and, unless it is ok, what to do about it.
type checkResult struct {
	name   string
	status checkStatus
	detail string
	fix    string
}

func passed(name, detail string) checkResult { return checkResult{name: name, detail: detail} }

func warned(name, detail, fix string) checkResult {
	return checkResult{name: name, status: checkWarning, detail: detail, fix: fix}
}

func failed(name string, err error, fix string) checkResult {
	return checkResult{name: name, status: checkError, detail: oneLine(err.Error()), fix: fix}
}

// oneLine folds a multi-line error (the OAuth2 library's, pgx's) onto one
// line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// dependencyChecks are the checks of everything outside the process that
// cfg names, in the order they are printed. db is the open database (nil:
// the check opens one), rdb the Redis client (nil: made from cfg).
func dependencyChecks(cfg config.Config, db *sqlstore.DB, rdb *redis.Client) []func(ctx context.Context) checkResult {
	return []func(ctx context.Context) checkResult{
		func(ctx context.Context) checkResult { return checkDatabase(ctx, cfg, db) },
		func(ctx context.Context) checkResult { return checkConnections(ctx, cfg, db) },
		func(ctx context.Context) checkResult { return checkRedis(ctx, cfg, rdb) },
		func(ctx context.Context) checkResult { return checkSMTP(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkFCM(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkAPNs(cfg) },
		func(ctx context.Context) checkResult { return checkWebPush(cfg) },
		func(ctx context.Context) checkResult { return checkHMS(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkTelegram(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkBilling(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkPwnedPasswords(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkCaptcha(ctx, cfg) },
		func(ctx context.Context) checkResult { return checkJWTKeys(cfg) },
		func(ctx context.Context) checkResult { return checkDiscovery(cfg) },
		func(ctx context.Context) checkResult { return checkSecrets(ctx, cfg, db) },
	}
}

// runChecks runs the checks at once, each within timeout, and returns
// their results in order.
func runChecks(ctx context.Context, checks []func(context.Context) checkResult, timeout time.Duration) []checkResult {
	results := make([]checkResult, len(checks))
	var wg sync.WaitGroup
	for i, c := range checks {
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			results[i] = c(cctx)
		})
	}
	wg.Wait()
	return results
}

func checkDatabase(ctx context.Context, cfg config.Config, db *sqlstore.DB) checkResult {
	const name = "database"
	if db == nil {
		// A SQLite file that is not there yet is not created by a check.
		if dialect, path, err := storage.ParseURL(cfg.DatabaseURL); err == nil && dialect == storage.SQLite {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				return warned(name, "sqlite: "+path+" does not exist yet", "`herald migrate` (or serve) creates it; if it should exist, fix HERALD_DATABASE_URL (a relative path is from the working directory)")
			}
		}
		var err error
		db, err = sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{MaxConns: 2})
		if err != nil {
			return failed(name, err, "check HERALD_DATABASE_URL and that the database is up and accepts this user")
		}
		defer db.Close()
	}
	list, err := db.MigrationStatus(ctx)
	if err != nil {
		return failed(name, err, "check that HERALD_DATABASE_URL's user may read the database")
	}
	applied, pending := 0, 0
	for _, m := range list {
		if m.Applied {
			applied++
		} else {
			pending++
		}
	}
	detail := fmt.Sprintf("%s: %d migrations applied, %d pending", db.Dialect(), applied, pending)
	if pending > 0 {
		return warned(name, detail, "run `herald migrate` (serve applies them at start); `herald migrate status` lists them")
	}
	return passed(name, detail)
}

// connectionsNear is the share of PostgreSQL's usable connections past
// which the replicas' pools are a warning: what is left is the margin for
// operator commands, migrations, backups and other clients.
const connectionsNear = 0.8

// checkConnections sizes the replicas' connections against PostgreSQL's
// limit: HERALD_REPLICAS × (the pool, HERALD_DATABASE_MAX_CONNS or the
// URL's pool_max_conns, + the one that listens for revocations) against
// max_connections less the slots reserved for superusers
// (superuser_reserved_connections and, from PostgreSQL 16,
// reserved_connections). Past the limit replicas meet "too many clients"
// (53300) under load, or at start.
func checkConnections(ctx context.Context, cfg config.Config, db *sqlstore.DB) checkResult {
	const name = "connections"
	dialect, _, err := storage.ParseURL(cfg.DatabaseURL)
	if err != nil {
		return failed(name, err, "fix HERALD_DATABASE_URL")
	}
	if dialect == storage.SQLite {
		return passed(name, "sqlite: one process, no connection limit to share")
	}
	if db == nil {
		if db, err = sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{MaxConns: 1}); err != nil {
			return warned(name, "not checked: the database did not answer", "see the database line (HERALD_DATABASE_URL)")
		}
		defer db.Close()
	}
	setting := func(param string) (int, error) {
		var v string
		if err := db.Pool().QueryRow(ctx, "SHOW "+param).Scan(&v); err != nil {
			return 0, err
		}
		return strconv.Atoi(v)
	}
	maxConns, err := setting("max_connections")
	if err != nil {
		return warned(name, "not checked: "+oneLine(err.Error()), "see the database line (HERALD_DATABASE_URL)")
	}
	reserved, err := setting("superuser_reserved_connections")
	if err != nil {
		return warned(name, "not checked: "+oneLine(err.Error()), "see the database line (HERALD_DATABASE_URL)")
	}
	if more, err := setting("reserved_connections"); err == nil { // PostgreSQL 16 and later
		reserved += more
	}
	var open int
	if err := db.Pool().QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").Scan(&open); err != nil {
		return warned(name, "not checked: "+oneLine(err.Error()), "see the database line (HERALD_DATABASE_URL)")
	}
	pool := sqlstore.PoolSize(cfg.DatabaseURL, cfg.DatabaseMaxConns)
	usable := maxConns - reserved
	need := cfg.Replicas * (pool + 1)
	detail := fmt.Sprintf("postgres: %d replicas × (%d pooled + 1 listener) = %d connections of the %d usable (max_connections %d less %d reserved); %d open now, this check's included",
		cfg.Replicas, pool, need, usable, maxConns, reserved, open)
	fit := max(int(connectionsNear*float64(usable))/cfg.Replicas-1, 1)
	switch {
	case need > usable:
		return checkResult{name: name, status: checkError, detail: detail,
			fix: fmt.Sprintf("under load the replicas meet \"too many clients\": set HERALD_DATABASE_MAX_CONNS to at most %d for %d replicas, raise max_connections (a restart of PostgreSQL), or put a pooler such as PgBouncer in front (docs/operations.md, Sizing)", fit, cfg.Replicas)}
	case float64(need) > connectionsNear*float64(usable):
		return warned(name, detail, fmt.Sprintf("above %.0f %%, little is left for operator commands, migrations, backups and other clients: HERALD_DATABASE_MAX_CONNS %d or less keeps %d replicas within it (docs/operations.md, Sizing)", connectionsNear*100, fit, cfg.Replicas))
	}
	return passed(name, detail)
}

func checkRedis(ctx context.Context, cfg config.Config, rdb *redis.Client) checkResult {
	const name = "redis"
	if cfg.RedisURL == "" {
		return passed(name, "not configured: rate limits and push rates are counted in memory, per process")
	}
	if rdb == nil {
		var err error
		if rdb, err = newRedis(cfg, slog.New(slog.DiscardHandler)); err != nil {
			return failed(name, err, "fix HERALD_REDIS_URL (redis://[:password@]host:6379/0)")
		}
		defer rdb.Close()
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		return failed(name, fmt.Errorf("PING: %w", err), "check that Redis runs at HERALD_REDIS_URL and accepts its password (serve falls back to counting in memory meanwhile)")
	}
	return passed(name, "PING answered")
}

func checkSMTP(ctx context.Context, cfg config.Config) checkResult {
	const name = "smtp"
	switch {
	case cfg.SMTPURL == "" && cfg.Env == "development":
		return passed(name, "HERALD_SMTP_URL is not set: emails are written to the log, not sent (development profile)")
	case cfg.SMTPURL == "" && cfg.MailToLog:
		return warned(name, "HERALD_SMTP_URL is not set and HERALD_MAIL_TO_LOG=on: every email, its one-time code included, is written to the log, not sent", "set HERALD_SMTP_URL=smtp://user:pass@mail.example.com:587 (and drop HERALD_MAIL_TO_LOG) so that codes stay out of the log")
	case cfg.SMTPURL == "":
		return checkResult{name: name, status: checkError, detail: "HERALD_SMTP_URL is not set: a production server refuses to start without it", fix: "set HERALD_SMTP_URL=smtp://user:pass@mail.example.com:587, or HERALD_MAIL_TO_LOG=on to write emails (with their codes) to the log deliberately"}
	}
	s, err := mail.NewSMTP(cfg.SMTPURL, cfg.MailFrom)
	if err != nil {
		return failed(name, err, "check that HERALD_SMTP_URL is smtp://[user:pass@]host:port or smtps://… with no path, and HERALD_MAIL_FROM an address such as Herald <no-reply@example.com>")
	}
	res, err := s.Check(ctx)
	if err != nil {
		fix := "check the host and port of HERALD_SMTP_URL and that the relay accepts connections from here"
		var se *mail.SendError
		switch {
		case errors.As(err, &se) && (se.Code == 535 || se.Code == 534 || se.Code == 530):
			fix = "the relay refused the credentials: fix the user and password in HERALD_SMTP_URL (percent-encode special characters)"
		case errors.As(err, new(*tls.CertificateVerificationError)):
			fix = "the relay's TLS certificate is not trusted for this host: use the relay's real name in HERALD_SMTP_URL, or add its CA to the system roots (SSL_CERT_FILE)"
		case errors.As(err, &se) && se.Code == 0 && strings.Contains(err.Error(), "AUTH"):
			// go-mail refuses PLAIN and LOGIN over a connection that is
			// not encrypted, before asking the relay.
			fix = "AUTH was not possible: check that the relay of HERALD_SMTP_URL offers STARTTLS (or write smtps:// there) and an AUTH mechanism Herald knows (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN, LOGIN)"
		}
		return failed(name, err, fix)
	}
	detail := "connected, TLS: " + res.TLS
	if res.Authenticated {
		detail += ", AUTH accepted"
	}
	detail += "; no mail sent"
	if res.TLS == "none" && !loopbackURL(cfg.SMTPURL) {
		return warned(name, detail, "the relay offers no STARTTLS, so mail (and any password) travels in clear: write smtps:// in HERALD_SMTP_URL, or point it at a relay that offers STARTTLS")
	}
	return passed(name, detail)
}

// loopbackURL says whether the URL's host is this machine.
func loopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}

func checkFCM(ctx context.Context, cfg config.Config) checkResult {
	const name = "fcm"
	if cfg.FCMCredentialsFile == "" {
		if cfg.APNsKeyFile == "" && cfg.VAPIDKeyFile == "" && cfg.HMSAppID == "" {
			return warned(name, "no push provider configured: pushes are written to the log and reported sent", "set HERALD_FCM_CREDENTIALS_FILE (and HERALD_APNS_* for ios, HERALD_VAPID_* for web, HERALD_HMS_* for huawei)")
		}
		return passed(name, "not configured: android devices get no pushes")
	}
	creds, err := os.ReadFile(cfg.FCMCredentialsFile)
	if err != nil {
		return failed(name, err, "check that HERALD_FCM_CREDENTIALS_FILE names a file that exists and that herald's user may read")
	}
	c, err := fcm.New(ctx, creds, cfg.FCMProjectID, cfg.FCMEndpoint, nil)
	if err != nil {
		if strings.Contains(err.Error(), "project ID") {
			return failed(name, err, "set HERALD_FCM_PROJECT_ID to the Firebase project's id: the key in HERALD_FCM_CREDENTIALS_FILE names none")
		}
		return failed(name, err, "HERALD_FCM_CREDENTIALS_FILE must be a Firebase service-account key (JSON, from the Firebase console: Project settings, Service accounts, Generate new private key)")
	}
	if err := c.Check(ctx); err != nil {
		return failed(name, err, fcmTokenFix(err))
	}
	return passed(name, "project "+c.ProjectID()+": OAuth access token granted")
}

// fcmTokenFix says what to check when the OAuth token endpoint did not
// grant the service account of HERALD_FCM_CREDENTIALS_FILE a token.
func fcmTokenFix(err error) string {
	var pe *push.Error
	status := 0
	if errors.As(err, &pe) {
		status = pe.Status
	}
	switch {
	case status == 400 || status == 401 || status == 403:
		return "the token endpoint refused the key of HERALD_FCM_CREDENTIALS_FILE: check in Google Cloud (IAM & Admin, Service accounts) that its service account (client_email) and key (private_key_id) still exist and are enabled, and that this machine's clock is right; else create a new key and point HERALD_FCM_CREDENTIALS_FILE at it"
	case status == 0 && errors.Is(err, context.DeadlineExceeded):
		return "the token endpoint (token_uri of HERALD_FCM_CREDENTIALS_FILE) did not answer in time: check outbound HTTPS from here to it (a proxy goes in HTTPS_PROXY), or try with a longer --timeout"
	case status == 0:
		return "the token endpoint (token_uri of HERALD_FCM_CREDENTIALS_FILE) could not be reached: check outbound HTTPS from here to it (a proxy goes in HTTPS_PROXY) and that token_uri is Google's (https://oauth2.googleapis.com/token)"
	}
	return fmt.Sprintf("the token endpoint (token_uri of HERALD_FCM_CREDENTIALS_FILE) failed with status %d: try again later; if it persists, check Google Cloud's status and that token_uri is Google's", status)
}

func checkAPNs(cfg config.Config) checkResult {
	const name = "apns"
	if cfg.APNsKeyFile == "" {
		return passed(name, "not configured: ios devices get their pushes through FCM, if configured")
	}
	key, err := os.ReadFile(cfg.APNsKeyFile)
	if err != nil {
		return failed(name, err, "check that HERALD_APNS_KEY_FILE names a file that exists and that herald's user may read")
	}
	if err := apns.CheckKey(key, cfg.APNsKeyID, cfg.APNsTeamID); err != nil {
		return failed(name, err, "HERALD_APNS_KEY_FILE must be the .p8 auth key Apple issued (Certificates, Identifiers & Profiles, Keys), with its id in HERALD_APNS_KEY_ID and the team's in HERALD_APNS_TEAM_ID")
	}
	return passed(name, fmt.Sprintf("key %s of team %s signs provider tokens (not sent: APNs is tried at the first push)", cfg.APNsKeyID, cfg.APNsTeamID))
}

// checkWebPush reads the VAPID key; push services are not called (a push
// service is only known from a browser's subscription).
func checkWebPush(cfg config.Config) checkResult {
	const name = "webpush"
	if cfg.VAPIDKeyFile == "" {
		return passed(name, "not configured: web devices get no pushes")
	}
	key, err := readVAPIDKey(cfg)
	if err != nil {
		return failed(name, err, "HERALD_VAPID_PRIVATE_KEY_FILE must be a readable PEM EC P-256 private key (herald keys vapid writes one)")
	}
	return passed(name, "VAPID key "+key.Public()[:12]+"… for "+cfg.VAPIDSubject+" (not sent: push services are tried at the first push)")
}

// checkHMS asks Huawei's token endpoint for an access token with the
// client credentials, as the first push would; nothing is sent (a device
// token is needed for that).
func checkHMS(ctx context.Context, cfg config.Config) checkResult {
	const name = "hms"
	if cfg.HMSAppID == "" {
		return passed(name, "not configured: huawei devices get no pushes")
	}
	c, err := hms.New(hms.Config{AppID: cfg.HMSAppID, ClientID: cfg.HMSClientID, ClientSecret: cfg.HMSClientSecret, TokenURL: cfg.HMSTokenURL, SendURL: cfg.HMSSendURL})
	if err != nil {
		return failed(name, err, "check HERALD_HMS_APP_ID, HERALD_HMS_CLIENT_SECRET and the HERALD_HMS_*_URL endpoints")
	}
	if err := c.Check(ctx); err != nil {
		return failed(name, err, hmsTokenFix(err))
	}
	return passed(name, "app "+cfg.HMSAppID+": OAuth access token granted (not sent: Push Kit is tried at the first push)")
}

// hmsTokenFix says what to check when Huawei's token endpoint did not
// grant the client credentials a token.
func hmsTokenFix(err error) string {
	status := 0
	if pe, ok := errors.AsType[*push.Error](err); ok {
		status = pe.Status
	}
	switch {
	case status == 400 || status == 401 || status == 403:
		return "the token endpoint refused the client credentials: set HERALD_HMS_CLIENT_SECRET (or HERALD_HMS_CLIENT_SECRET_FILE) to the App secret and HERALD_HMS_APP_ID to the App ID of the app in AppGallery Connect (Project settings, App information), and HERALD_HMS_CLIENT_ID only if the OAuth client is another"
	case status == 0 && errors.Is(err, context.DeadlineExceeded):
		return "the token endpoint (HERALD_HMS_TOKEN_URL) did not answer in time: check outbound HTTPS from here to it (a proxy goes in HTTPS_PROXY), or try with a longer --timeout"
	case status == 0:
		return "the token endpoint (HERALD_HMS_TOKEN_URL) could not be reached: check outbound HTTPS from here to it (a proxy goes in HTTPS_PROXY) and that it is Huawei's (" + hms.DefaultTokenURL + ")"
	}
	return fmt.Sprintf("the token endpoint (HERALD_HMS_TOKEN_URL) failed with status %d: try again later; if it persists, check Huawei's service status and that HERALD_HMS_TOKEN_URL is Huawei's", status)
}

// checkBilling builds the connected stores' channels and reads the
// product map, as a server's start does.
func checkBilling(ctx context.Context, cfg config.Config) checkResult {
	const name = "billing"
	setup, err := openBilling(ctx, cfg, slices.Sorted(maps.Keys(cfg.PlanDeviceLimits)), nil)
	if err != nil {
		return failed(name, err, "see docs/billing.md: each connected store needs its variables, and HERALD_BILLING_PRODUCTS a JSON file mapping its product ids to plans")
	}
	if len(setup.channels) == 0 {
		return passed(name, "no store connected: plans change only by the admin API")
	}
	var stores []string
	products := 0
	for _, src := range subscriptions.Sources() {
		if _, ok := setup.channels[src]; ok {
			stores = append(stores, string(src))
			products += len(setup.products[src])
		}
	}
	return passed(name, fmt.Sprintf("%s connected, %d products mapped to plans", strings.Join(stores, ", "), products))
}

// checkPwnedPasswords reads one range of the breach corpus. A corpus that
// cannot answer only warns: the check fails open in service too.
func checkPwnedPasswords(ctx context.Context, cfg config.Config) checkResult {
	const name = "pwned"
	if cfg.PwnedPasswordsURL == "" {
		return passed(name, "not configured: new passwords are not checked against breaches")
	}
	n, err := pwned.New(pwned.Config{URL: cfg.PwnedPasswordsURL, Timeout: cfg.PwnedPasswordsTimeout}).Check(ctx)
	if err != nil {
		return warned(name, err.Error()+"; until it answers, new passwords are accepted unchecked", "check that HERALD_PWNED_PASSWORDS_URL (https://api.pwnedpasswords.com) can be reached from here")
	}
	return passed(name, fmt.Sprintf("range 00000 read: %d breached suffixes", n))
}

// checkCaptcha asks the CAPTCHA provider to verify a token no one solved:
// the answer must come, and must not refuse the secret.
func checkCaptcha(ctx context.Context, cfg config.Config) checkResult {
	const name = "captcha"
	if cfg.CaptchaProvider == "" {
		return passed(name, "not configured: signup, resend, password reset and login need no CAPTCHA")
	}
	g, err := captcha.New(captcha.Config{Provider: cfg.CaptchaProvider, Secret: cfg.CaptchaSecret, VerifyURL: cfg.CaptchaVerifyURL, Timeout: cfg.CaptchaTimeout})
	if err != nil {
		return failed(name, err, "set HERALD_CAPTCHA_PROVIDER to turnstile or hcaptcha, with HERALD_CAPTCHA_SECRET")
	}
	res, err := g.Check(ctx)
	if err != nil {
		return failed(name, err, "check that the provider's siteverify endpoint (HERALD_CAPTCHA_VERIFY_URL, or "+cfg.CaptchaProvider+"'s own) can be reached from here; until it answers, the requests a CAPTCHA guards are refused with 503")
	}
	if res.SecretRefused() {
		return failed(name, fmt.Errorf("%s refused HERALD_CAPTCHA_SECRET (%s)", cfg.CaptchaProvider, strings.Join(res.ErrorCodes, ", ")), "set HERALD_CAPTCHA_SECRET to the site's secret key from the provider's dashboard")
	}
	return passed(name, cfg.CaptchaProvider+" answered and accepted the secret")
}

func checkTelegram(ctx context.Context, cfg config.Config) checkResult {
	const name = "telegram"
	if cfg.TelegramBotToken == "" {
		return passed(name, "not configured: the messenger is off")
	}
	res, err := telegram.New(cfg.TelegramBotToken, cfg.TelegramAPIURL, nil).Check(ctx)
	if err != nil {
		if telegram.Classify(err) == telegram.Unauthorized {
			return failed(name, err, "Telegram refused the token: copy it again from @BotFather into HERALD_TELEGRAM_BOT_TOKEN")
		}
		return failed(name, err, "check that HERALD_TELEGRAM_API_URL (https://api.telegram.org unless you run your own Bot API server) can be reached from here")
	}
	bot := "@" + res.Bot.Username
	hook := res.Webhook
	switch {
	case cfg.TelegramWebhookURL == "" && hook.URL != "":
		return warned(name, bot+": a webhook is registered at "+hook.URL+" but HERALD_TELEGRAM_WEBHOOK_URL is empty", "serve removes the webhook to long-poll; set HERALD_TELEGRAM_WEBHOOK_URL to keep it")
	case cfg.TelegramWebhookURL != "" && hook.URL != cfg.TelegramWebhookURL:
		registered := hook.URL
		if registered == "" {
			registered = "none"
		}
		return warned(name, fmt.Sprintf("%s: webhook registered at Telegram is %s, HERALD_TELEGRAM_WEBHOOK_URL is %s", bot, registered, cfg.TelegramWebhookURL), "serve registers HERALD_TELEGRAM_WEBHOOK_URL at start; if this persists, check that the server starts")
	case cfg.TelegramWebhookURL != "" && hook.LastErrorMessage != "":
		return warned(name, fmt.Sprintf("%s: Telegram's last delivery to the webhook failed: %s", bot, hook.LastErrorMessage), "check that "+cfg.TelegramWebhookURL+" reaches POST /webhooks/telegram through the proxy, with a valid certificate")
	case cfg.TelegramWebhookURL != "":
		return passed(name, bot+": webhook registered at "+hook.URL)
	}
	return passed(name, bot+": no webhook, updates long-polled")
}

func checkJWTKeys(cfg config.Config) checkResult {
	const name = "jwt keys"
	if cfg.JWTKeysFile == "" {
		return passed(name, "HERALD_JWT_KEYS_FILE is not set: a key generated once and kept in the database signs")
	}
	ks, err := sessions.LoadKeySetFile(cfg.JWTKeysFile)
	if err != nil {
		return failed(name, err, "fix HERALD_JWT_KEYS_FILE: exactly one Ed25519 key marked \"active\": true with its \"d\" (`herald keys generate` prints one)")
	}
	return passed(name, fmt.Sprintf("active key %s, %d kept to verify", ks.ActiveID(), ks.VerifyOnly()))
}

// checkDiscovery says where /.well-known/openid-configuration's URLs come
// from, and warns when production cannot publish it.
func checkDiscovery(cfg config.Config) checkResult {
	const name = "discovery"
	switch base := cfg.PublicBase(); {
	case base != "":
		return passed(name, "jwks_uri is "+base+"/.well-known/jwks.json")
	case cfg.Env == "development":
		return passed(name, "jwks_uri follows each request's Host (development profile)")
	}
	return warned(name, "neither HERALD_PUBLIC_URL nor an http(s) HERALD_JWT_ISSUER is set: /.well-known/openid-configuration answers 404 (the keys stay at /.well-known/jwks.json)", "set HERALD_PUBLIC_URL to the address clients reach Herald at (https://api.example.com) if other services discover its keys")
}

// checkSecrets says how the secrets the database keeps are stored: sealed
// by HERALD_ENCRYPTION_KEY, about to be (at the next start), or in plain
// text; and fails when they do not open with the keys given, as the start
// would.
func checkSecrets(ctx context.Context, cfg config.Config, db *sqlstore.DB) checkResult {
	const name = "secrets"
	keys, err := encryptionKeys(cfg)
	if err != nil {
		return failed(name, err, "give HERALD_ENCRYPTION_KEY_PREVIOUS only the keys that HERALD_ENCRYPTION_KEY replaced")
	}
	noKey := func(stored string) checkResult {
		if cfg.Env == "development" {
			return passed(name, stored+"not sealed: HERALD_ENCRYPTION_KEY is not set (development profile)")
		}
		return warned(name, stored+"in plain text: HERALD_ENCRYPTION_KEY is not set, so webhook signing secrets, the JWT seed and the HMAC keys are readable by anyone with a copy of the database", "set HERALD_ENCRYPTION_KEY (openssl rand -hex 32) or HERALD_ENCRYPTION_KEY_FILE; the next start seals them")
	}
	if db == nil {
		if dialect, path, err := storage.ParseURL(cfg.DatabaseURL); err == nil && dialect == storage.SQLite {
			if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
				if keys == nil {
					return noKey("none stored yet; they will be kept ")
				}
				return passed(name, "none stored yet; they will be sealed with key "+keys.ID())
			}
		}
		if db, err = sqlstore.Open(ctx, cfg.DatabaseURL, sqlstore.Options{MaxConns: 2, Keys: keys}); err != nil {
			return warned(name, "not checked: the database did not answer", "see the database line (HERALD_DATABASE_URL)")
		}
		defer db.Close()
	}
	if list, err := db.MigrationStatus(ctx); err == nil && slices.ContainsFunc(list, func(m sqlstore.Migration) bool { return !m.Applied }) {
		if keys == nil {
			return noKey("not checked until the database is migrated; they will be kept ")
		}
		return passed(name, "not checked until the database is migrated; they will be sealed with key "+keys.ID())
	}
	st, err := db.SealStatus(ctx)
	if err != nil {
		return warned(name, "not checked: "+oneLine(err.Error()), "see the database line (HERALD_DATABASE_URL)")
	}
	if len(st.Unreadable) > 0 {
		given := "HERALD_ENCRYPTION_KEY is not set"
		if keys != nil {
			given = "HERALD_ENCRYPTION_KEY is key " + keys.ID()
		}
		detail := fmt.Sprintf("%d stored secrets do not open (%s): %s", len(st.Unreadable), given, strings.Join(st.Unreadable, "; "))
		fix := "the stored values were changed, or moved between rows: check that HERALD_DATABASE_URL is the database they were sealed in, else restore them from a backup"
		if len(st.SealedBy) > 0 {
			fix = "set HERALD_ENCRYPTION_KEY to the key that sealed them (key " + strings.Join(st.SealedBy, ", key ") + "); while rotating keep the old key in HERALD_ENCRYPTION_KEY_PREVIOUS. serve refuses to start until then"
		}
		return checkResult{name: name, status: checkError, detail: detail, fix: fix}
	}
	total := st.Plain + st.Current + st.Previous
	if keys == nil {
		return noKey(fmt.Sprintf("%d stored ", total))
	}
	detail := fmt.Sprintf("%d stored, %d sealed with key %s", total, st.Current, keys.ID())
	if n := st.Plain + st.Previous; n > 0 {
		detail += fmt.Sprintf("; %d (plain or under a previous key) are sealed with it at the next start", n)
	} else if len(cfg.EncryptionKeysPrevious) > 0 {
		detail += "; none is left under a previous key: HERALD_ENCRYPTION_KEY_PREVIOUS can go"
	}
	return passed(name, detail)
}

// printChecks writes one line per result and says whether any failed.
func printChecks(w io.Writer, results []checkResult) (failedAny bool) {
	for _, r := range results {
		line := fmt.Sprintf("%-7s  %-14s %s", r.status, r.name, r.detail)
		if r.fix != "" {
			line += " — fix: " + r.fix
		}
		fmt.Fprintln(w, line)
		failedAny = failedAny || r.status == checkError
	}
	return failedAny
}

// errChecksFailed is `herald check`'s exit status 1; the lines said why.
var errChecksFailed = errors.New("checks failed")

func cmdCheck(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "check", "Validate the configuration, then try each configured dependency (database and its connection\nlimit, Redis, SMTP, FCM, APNs, Web Push, HMS, Telegram, JWT keys, discovery, stored secrets) without changing anything, and print one line per check: ok, warning or error,\nwith the fix. Exit status: 0 when no check failed (warnings included), 1 when one did, 2 when the\nconfiguration is invalid.", configHint)
	timeout := fs.Duration("timeout", 10*time.Second, "time allowed to each check")
	replicas := fs.Int("replicas", 0, "how many servers share the database, for the connections line (overrides HERALD_REPLICAS)")
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	if *timeout <= 0 {
		fmt.Fprintln(env.stderr, "--timeout must be positive")
		return errUsage
	}
	if *replicas < 0 {
		fmt.Fprintln(env.stderr, "--replicas must be positive")
		return errUsage
	}
	cfg, err := loadConfig(env)
	if *replicas > 0 {
		cfg.Replicas = *replicas
	}
	if err == nil {
		_, err = loadEmailTemplates(cfg) // the email templates are configuration too
	}
	if err != nil {
		problems := strings.ReplaceAll(strings.TrimPrefix(err.Error(), "invalid configuration:\n"), "\n", "; ")
		printChecks(env.stdout, []checkResult{{name: "configuration", status: checkError, detail: problems, fix: "set each variable named as `herald help config` describes"}})
		return err
	}
	results := append([]checkResult{passed("configuration", "valid")}, runChecks(ctx, dependencyChecks(cfg, nil, nil), *timeout)...)
	if printChecks(env.stdout, results) {
		return errChecksFailed
	}
	return nil
}

// logChecks runs the checks of serve in the background and logs their
// summary on one line, a warning when one is not ok. Nothing fails: a
// dependency that is down is the fallbacks' business. The returned
// function stops the checks and waits for them.
func (a *App) logChecks(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		results := runChecks(ctx, dependencyChecks(a.cfg, a.db, a.redis), 10*time.Second)
		if ctx.Err() != nil {
			return
		}
		level := slog.LevelInfo
		attrs := make([]any, 0, 2*len(results))
		var problems []string
		for _, r := range results {
			attrs = append(attrs, strings.ReplaceAll(r.name, " ", "_"), r.status.String())
			if r.status != checkOK {
				level = slog.LevelWarn
				problems = append(problems, r.name+": "+r.detail)
			}
		}
		if len(problems) > 0 {
			attrs = append(attrs, "problems", strings.Join(problems, "; "))
		}
		a.logger.Log(ctx, level, "dependency checks (herald check tells more)", attrs...)
	}()
	return func() { cancel(); <-done }
}
