// Package config reads Herald's configuration from environment variables
// and validates all of it at start-up, reporting one line per problem.
package config

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore"
)

// Config is everything an operator can set.
type Config struct {
	Addr            string
	DatabaseURL     string
	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration

	SMTPURL  string
	MailFrom string

	TrustedProxies []netip.Prefix

	VerificationCodeTTL time.Duration
	ResendCooldown      time.Duration
	ResendHourlyLimit   int
	TrialPeriod         time.Duration
	ReferralBonus       time.Duration
	SecretKey           []byte

	Argon2MemoryKiB   int
	Argon2Iterations  int
	Argon2Parallelism int
	HashConcurrency   int

	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	RefreshGrace    time.Duration
	JWTKeysFile     string
	JWTIssuer       string

	RateLimitGlobal, RateLimitAuth, RateLimitProtected, RateLimitAdmin, RateLimitAPIKey int
	RedisURL                                                                            string
	BlockAfterRefusals                                                                  int
	BlockRefusalWindow, BlockDuration                                                   time.Duration
	BanAfterBlocks                                                                      int
	BanWindow                                                                           time.Duration

	GraphQLMaxRootMutations, GraphQLMaxDepth, GraphQLMaxComplexity int

	FCMCredentialsFile string
	FCMProjectID       string
	FCMEndpoint        string
	APNsKeyFile        string
	APNsKeyID          string
	APNsTeamID         string
	APNsTopic          string
	APNsEndpoint       string
	PushRate           int
	PushBatchSize      int
	PushConcurrency    int
	PushLeaseTTL       time.Duration
	DeliveryRetention  time.Duration
	PlanDeviceLimits   map[string]int
	UpgradeURL         string
	RenewURL           string

	TelegramBotToken      string
	TelegramAPIURL        string
	TelegramWebhookURL    string
	TelegramWebhookSecret string

	JobRetryBase time.Duration
	JobRetryMax  time.Duration
	JobPoll      time.Duration
}

// Var documents one environment variable; the README's table and
// `herald --help` are made from the same list.
type Var struct {
	Name    string
	Default string
	Example string
	Help    string
	set     func(c *Config, v string) error
}

// Vars lists every variable Herald reads.
func Vars() []Var {
	return []Var{
		{"HERALD_ADDR", "127.0.0.1:8080", ":8080", "listen address", func(c *Config, v string) error {
			if _, _, err := splitHostPort(v); err != nil {
				return err
			}
			c.Addr = v
			return nil
		}},
		{"HERALD_DATABASE_URL", "sqlite:herald.db", "postgres://herald@db:5432/herald", "sqlite:PATH (embedded) or postgres://… (production)", func(c *Config, v string) error {
			if _, _, err := sqlstore.ParseURL(v); err != nil {
				return err
			}
			c.DatabaseURL = v
			return nil
		}},
		{"HERALD_LOG_FORMAT", "json", "text", "json or text", func(c *Config, v string) error {
			if v != "json" && v != "text" {
				return fmt.Errorf("must be json or text, not %q", v)
			}
			c.LogFormat = v
			return nil
		}},
		{"HERALD_LOG_LEVEL", "info", "debug", "debug, info, warn or error", func(c *Config, v string) error {
			switch v {
			case "debug", "info", "warn", "error":
				c.LogLevel = v
				return nil
			}
			return fmt.Errorf("must be debug, info, warn or error, not %q", v)
		}},
		{"HERALD_SHUTDOWN_TIMEOUT", "30s", "10s", "how long a shutdown waits for requests and jobs in flight", duration(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
		{"HERALD_SMTP_URL", "", "smtp://user:pass@mail.example.com:587", "smtp:// (STARTTLS when offered) or smtps:// (implicit TLS); empty: emails are written to the log", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || u.Port() == "" {
				return errors.New("must look like smtp://[user:pass@]host:port or smtps://[user:pass@]host:port")
			}
			c.SMTPURL = v
			return nil
		}},
		{"HERALD_MAIL_FROM", "Herald <no-reply@localhost>", "Herald <no-reply@example.com>", "sender of every email", func(c *Config, v string) error {
			if !strings.Contains(v, "@") {
				return fmt.Errorf("must be an address, not %q", v)
			}
			c.MailFrom = v
			return nil
		}},
		{"HERALD_TRUSTED_PROXIES", "", "10.0.0.0/8,127.0.0.1/32", "CIDRs whose X-Forwarded-For is believed", func(c *Config, v string) error {
			c.TrustedProxies = nil
			for _, part := range strings.Split(v, ",") {
				part = strings.TrimSpace(part)
				if part == "" {
					continue
				}
				p, err := netip.ParsePrefix(part)
				if err != nil {
					a, aerr := netip.ParseAddr(part)
					if aerr != nil {
						return fmt.Errorf("%q is not a CIDR", part)
					}
					p = netip.PrefixFrom(a, a.BitLen())
				}
				c.TrustedProxies = append(c.TrustedProxies, p.Masked())
			}
			return nil
		}},
		{"HERALD_VERIFICATION_CODE_TTL", "15m", "10m", "validity of an emailed code", duration(func(c *Config) *time.Duration { return &c.VerificationCodeTTL })},
		{"HERALD_RESEND_COOLDOWN", "60s", "30s", "wait between two code emails a user asks for", duration(func(c *Config) *time.Duration { return &c.ResendCooldown })},
		{"HERALD_RESEND_HOURLY_LIMIT", "5", "3", "code emails a user may ask for per email per sliding hour", integer(func(c *Config) *int { return &c.ResendHourlyLimit }, 1)},
		{"HERALD_TRIAL_PERIOD", "168h", "336h", "trial subscription of a new account", duration(func(c *Config) *time.Duration { return &c.TrialPeriod })},
		{"HERALD_REFERRAL_BONUS", "168h", "72h", "extension given to both sides of a referral", duration(func(c *Config) *time.Duration { return &c.ReferralBonus })},
		{"HERALD_SECRET_KEY", "", "(64 hex digits)", "key of the code hashes, hex, at least 32 bytes; empty: generated once and kept in the database", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			var b []byte
			if _, err := fmt.Sscanf(v, "%x", &b); err != nil || len(b) < 32 || len(v) != 2*len(b) {
				return errors.New("must be at least 64 hex digits")
			}
			c.SecretKey = b
			return nil
		}},
		{"HERALD_ACCESS_TOKEN_TTL", "24h", "1h", "lifetime of an access token (JWT)", duration(func(c *Config) *time.Duration { return &c.AccessTokenTTL })},
		{"HERALD_REFRESH_TOKEN_TTL", "720h", "2160h", "lifetime of a session's refresh token", duration(func(c *Config) *time.Duration { return &c.RefreshTokenTTL })},
		{"HERALD_REFRESH_REUSE_GRACE", "10s", "5s", "window in which a just-rotated refresh token may be used again (two tabs) without revoking the session", duration(func(c *Config) *time.Duration { return &c.RefreshGrace })},
		{"HERALD_JWT_KEYS_FILE", "", "/etc/herald/jwks.json", "JWK set of Ed25519 keys, one marked \"active\": true; empty: a key generated once and kept in the database", str(func(c *Config) *string { return &c.JWTKeysFile })},
		{"HERALD_JWT_ISSUER", "herald", "https://api.example.com", "iss claim of access tokens", str(func(c *Config) *string { return &c.JWTIssuer })},
		{"HERALD_RATE_LIMIT_GLOBAL", "100", "300", "requests per minute per client IP, every API request (0 disables)", integer(func(c *Config) *int { return &c.RateLimitGlobal }, 0)},
		{"HERALD_RATE_LIMIT_AUTH", "10", "20", "requests per minute per client IP to signup, verification, login, refresh and password reset (0 disables)", integer(func(c *Config) *int { return &c.RateLimitAuth }, 0)},
		{"HERALD_RATE_LIMIT_PROTECTED", "300", "600", "requests per minute per user to operations that need a token (0 disables)", integer(func(c *Config) *int { return &c.RateLimitProtected }, 0)},
		{"HERALD_RATE_LIMIT_ADMIN", "1000", "2000", "requests per minute per admin to admin operations (0 disables)", integer(func(c *Config) *int { return &c.RateLimitAdmin }, 0)},
		{"HERALD_RATE_LIMIT_APIKEY", "60", "120", "requests per minute per API key to API-key routes (0 disables)", integer(func(c *Config) *int { return &c.RateLimitAPIKey }, 0)},
		{"HERALD_REDIS_URL", "", "redis://redis:6379/0", "Redis for rate-limit counters shared by replicas; empty: counted in memory", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if u, err := url.Parse(v); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
				return errors.New("must look like redis://[user:pass@]host:port[/db] or rediss://…")
			}
			c.RedisURL = v
			return nil
		}},
		{"HERALD_BLOCK_AFTER_REFUSALS", "20", "50", "refused requests within HERALD_BLOCK_REFUSAL_WINDOW that block an IP", integer(func(c *Config) *int { return &c.BlockAfterRefusals }, 1)},
		{"HERALD_BLOCK_REFUSAL_WINDOW", "10m", "5m", "window of the refusal count", duration(func(c *Config) *time.Duration { return &c.BlockRefusalWindow })},
		{"HERALD_BLOCK_DURATION", "15m", "1h", "how long a block lasts", duration(func(c *Config) *time.Duration { return &c.BlockDuration })},
		{"HERALD_BAN_AFTER_BLOCKS", "3", "5", "blocks within HERALD_BAN_WINDOW that ban an IP until an operator lifts it", integer(func(c *Config) *int { return &c.BanAfterBlocks }, 1)},
		{"HERALD_BAN_WINDOW", "24h", "48h", "window of the block count", duration(func(c *Config) *time.Duration { return &c.BanWindow })},
		{"HERALD_GRAPHQL_MAX_ROOT_MUTATIONS", "10", "5", "mutation fields one GraphQL document may hold", integer(func(c *Config) *int { return &c.GraphQLMaxRootMutations }, 1)},
		{"HERALD_GRAPHQL_MAX_DEPTH", "10", "8", "selection depth of one GraphQL document", integer(func(c *Config) *int { return &c.GraphQLMaxDepth }, 1)},
		{"HERALD_GRAPHQL_MAX_COMPLEXITY", "200", "100", "field complexity of one GraphQL document", integer(func(c *Config) *int { return &c.GraphQLMaxComplexity }, 1)},
		{"HERALD_FCM_CREDENTIALS_FILE", "", "/etc/herald/fcm-service-account.json", "Firebase service-account JSON; enables FCM for android (and ios without APNs)", str(func(c *Config) *string { return &c.FCMCredentialsFile })},
		{"HERALD_FCM_PROJECT_ID", "", "my-vpn-app", "FCM project; empty: the project_id of the credentials file", str(func(c *Config) *string { return &c.FCMProjectID })},
		{"HERALD_FCM_ENDPOINT", "https://fcm.googleapis.com", "http://127.0.0.1:9090", "FCM HTTP v1 server", httpURL(func(c *Config) *string { return &c.FCMEndpoint })},
		{"HERALD_APNS_KEY_FILE", "", "/etc/herald/AuthKey_ABC123.p8", "APNs token-auth key (.p8); with the three below, enables APNs for ios", str(func(c *Config) *string { return &c.APNsKeyFile })},
		{"HERALD_APNS_KEY_ID", "", "ABC123DEFG", "APNs key id", str(func(c *Config) *string { return &c.APNsKeyID })},
		{"HERALD_APNS_TEAM_ID", "", "DEF123GHIJ", "Apple team id", str(func(c *Config) *string { return &c.APNsTeamID })},
		{"HERALD_APNS_TOPIC", "", "com.example.vpn", "the app's bundle id", str(func(c *Config) *string { return &c.APNsTopic })},
		{"HERALD_APNS_ENDPOINT", "production", "sandbox", "production, sandbox, or an https URL", str(func(c *Config) *string { return &c.APNsEndpoint })},
		{"HERALD_PUSH_RATE", "10000", "2000", "sends per second per provider and process (0: no cap)", integer(func(c *Config) *int { return &c.PushRate }, 0)},
		{"HERALD_PUSH_BATCH_SIZE", "500", "1000", "devices per broadcast batch", integer(func(c *Config) *int { return &c.PushBatchSize }, 1)},
		{"HERALD_PUSH_CONCURRENCY", "64", "128", "sends in flight per broadcast", integer(func(c *Config) *int { return &c.PushConcurrency }, 1)},
		{"HERALD_PUSH_LEASE_TTL", "30s", "10s", "how long a broadcast stays claimed by a worker that stopped answering", duration(func(c *Config) *time.Duration { return &c.PushLeaseTTL })},
		{"HERALD_PUSH_DELIVERY_RETENTION", "720h", "168h", "how long the per-device delivery records of a finished broadcast are kept (its counters stay)", duration(func(c *Config) *time.Duration { return &c.DeliveryRetention })},
		{"HERALD_PLAN_DEVICE_LIMITS", "trial=3,basic=5,premium=10", "trial=2,basic=5,premium=20", "active devices allowed per plan", func(c *Config, v string) error {
			m := map[string]int{}
			for _, part := range strings.Split(v, ",") {
				plan, n, ok := strings.Cut(strings.TrimSpace(part), "=")
				limit, err := strconv.Atoi(strings.TrimSpace(n))
				if !ok || strings.TrimSpace(plan) == "" || err != nil || limit < 0 {
					return fmt.Errorf("%q is not plan=number", part)
				}
				m[strings.TrimSpace(plan)] = limit
			}
			c.PlanDeviceLimits = m
			return nil
		}},
		{"HERALD_UPGRADE_URL", "https://example.com/upgrade", "https://vpn.example.com/upgrade", "shown with DEVICE_LIMIT_REACHED", httpURL(func(c *Config) *string { return &c.UpgradeURL })},
		{"HERALD_RENEW_URL", "https://example.com/renew", "https://vpn.example.com/renew", "shown with SUBSCRIPTION_EXPIRED", httpURL(func(c *Config) *string { return &c.RenewURL })},
		{"HERALD_TELEGRAM_BOT_TOKEN", "", "123456:ABC-DEF…", "Telegram bot token; empty: the messenger is not connected", str(func(c *Config) *string { return &c.TelegramBotToken })},
		{"HERALD_TELEGRAM_API_URL", "https://api.telegram.org", "http://127.0.0.1:8081", "Bot API server", httpURL(func(c *Config) *string { return &c.TelegramAPIURL })},
		{"HERALD_TELEGRAM_WEBHOOK_URL", "", "https://api.example.com/webhooks/telegram", "public HTTPS address of POST /webhooks/telegram; empty: the server long-polls (one replica at a time)", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if u, err := url.Parse(v); err != nil || u.Scheme != "https" || u.Host == "" {
				return fmt.Errorf("%q is not an https URL", v)
			}
			c.TelegramWebhookURL = v
			return nil
		}},
		{"HERALD_TELEGRAM_WEBHOOK_SECRET", "", "s3cret_token-1", "secret Telegram sends in X-Telegram-Bot-Api-Secret-Token (1-256 of A-Za-z0-9_-); empty: generated once and kept in the database", func(c *Config, v string) error {
			if v == "" {
				return nil
			}
			if len(v) > 256 || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
				return errors.New("must be 1 to 256 characters of A-Za-z0-9_-")
			}
			c.TelegramWebhookSecret = v
			return nil
		}},
		{"HERALD_ARGON2_MEMORY", "65536", "19456", "argon2id memory per hash, KiB", integer(func(c *Config) *int { return &c.Argon2MemoryKiB }, 8)},
		{"HERALD_ARGON2_ITERATIONS", "3", "2", "argon2id passes", integer(func(c *Config) *int { return &c.Argon2Iterations }, 1)},
		{"HERALD_ARGON2_PARALLELISM", "2", "1", "argon2id lanes", integer(func(c *Config) *int { return &c.Argon2Parallelism }, 1)},
		{"HERALD_HASH_CONCURRENCY", strconv.Itoa(runtime.NumCPU()), "4", "password hashes run at once (each holds HERALD_ARGON2_MEMORY)", integer(func(c *Config) *int { return &c.HashConcurrency }, 1)},
		{"HERALD_JOB_RETRY_BASE", "1s", "5s", "first retry delay of a failed background job (doubles each attempt)", duration(func(c *Config) *time.Duration { return &c.JobRetryBase })},
		{"HERALD_JOB_RETRY_MAX", "10m", "1h", "longest delay between two retries of a background job", duration(func(c *Config) *time.Duration { return &c.JobRetryMax })},
		{"HERALD_JOB_POLL", "1s", "200ms", "how often workers look for new background jobs", duration(func(c *Config) *time.Duration { return &c.JobPoll })},
	}
}

func str(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		*field(c) = v
		return nil
	}
}

func httpURL(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", v)
		}
		*field(c) = v
		return nil
	}
}

func duration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration (use Go syntax such as 90s, 15m, 168h)", v)
		}
		if d <= 0 {
			return fmt.Errorf("must be positive, not %s", v)
		}
		*field(c) = d
		return nil
	}
}

func integer(field func(*Config) *int, min int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", v)
		}
		if n < min {
			return fmt.Errorf("must be at least %d, not %d", min, n)
		}
		*field(c) = n
		return nil
	}
}

func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("%q needs a port, such as 127.0.0.1:8080", addr)
	}
	port, err := strconv.Atoi(addr[i+1:])
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has no valid port", addr)
	}
	return addr[:i], port, nil
}

// Load reads every variable through getenv, returning all problems at once,
// one per line.
func Load(getenv func(string) string) (Config, error) {
	var c Config
	var problems []string
	for _, v := range Vars() {
		val := strings.TrimSpace(getenv(v.Name))
		if val == "" {
			val = v.Default
		}
		if err := v.set(&c, val); err != nil {
			problems = append(problems, v.Name+": "+err.Error())
		}
	}
	apns := []string{c.APNsKeyFile, c.APNsKeyID, c.APNsTeamID, c.APNsTopic}
	if set := len(slices.DeleteFunc(slices.Clone(apns), func(s string) bool { return s == "" })); set > 0 && set < len(apns) {
		problems = append(problems, "HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID, HERALD_APNS_TOPIC: set all four to enable APNs, or none")
	}
	if len(problems) > 0 {
		return c, errors.New(strings.Join(problems, "\n"))
	}
	return c, nil
}
