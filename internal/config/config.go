// Package config reads Herald's configuration from environment variables
// and validates all of it at start-up, reporting one line per problem.
package config

import (
	"errors"
	"fmt"
	"github.com/herald-vpn/herald/internal/preferences"
	"net/netip"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Config is everything an operator can set.
type Config struct {
	Env              string // production or development
	Addr             string
	PublicURL        string
	MetricsAddr      string
	MetricsPublic    bool
	DatabaseURL      string
	DatabaseMaxConns int
	// DatabaseStartTimeout is how long serve waits for a database that
	// refuses connections at start (0: fail at once).
	DatabaseStartTimeout time.Duration
	// Replicas is how many servers share the database: herald check
	// sizes their pools against PostgreSQL's max_connections.
	// DatabaseQueryTimeout bounds every database query (a transaction as a
	// whole) whose caller has no sooner deadline.
	DatabaseQueryTimeout time.Duration
	// RequestTimeout bounds every API request as a whole, but the
	// long-lived streams.
	RequestTimeout   time.Duration
	Replicas         int
	LogFormat        string
	LogLevel         string
	LogFlushInterval time.Duration
	ShutdownTimeout  time.Duration

	SMTPURL           string
	MailToLog         bool
	MailFrom          string
	ProductName       string
	EmailLogoURL      string
	SupportEmail      string
	EmailTemplatesDir string

	TrustedProxies []netip.Prefix
	CORSOrigins    []string

	VerificationCodeTTL time.Duration
	ResendCooldown      time.Duration
	ResendHourlyLimit   int
	TrialPeriod         time.Duration
	ReferralBonus       time.Duration
	SecretKey           []byte
	// EncryptionKey seals the secrets kept in the database (nil: none);
	// EncryptionKeysPrevious only open what they sealed before a rotation.
	EncryptionKey          []byte
	EncryptionKeysPrevious [][]byte

	Argon2MemoryKiB   int
	Argon2Iterations  int
	Argon2Parallelism int
	HashConcurrency   int
	HashQueue         int
	HashWait          time.Duration
	// MaxRequests, RequestQueue and RequestQueueWait bound the API
	// requests in flight (package shed), the long-lived streams aside.
	MaxRequests      int
	RequestQueue     int
	RequestQueueWait time.Duration

	AccessTokenTTL  time.Duration
	RefreshTokenTTL time.Duration
	RefreshGrace    time.Duration
	JWTKeysFile     string
	JWTIssuer       string
	JWTAudience     string

	RateLimitGlobal, RateLimitAuth, RateLimitProtected, RateLimitAdmin, RateLimitAPIKey int
	RateLimitWindow                                                                     time.Duration
	RedisURL                                                                            string
	BlockAfterRefusals                                                                  int
	BlockRefusalWindow, BlockDuration                                                   time.Duration
	BanAfterBlocks                                                                      int
	BanWindow                                                                           time.Duration

	GraphQLMaxRootMutations, GraphQLMaxDepth, GraphQLMaxComplexity int
	GraphQLIntrospection                                           bool
	Console                                                        bool

	WSMaxSubscriptions, WSMessageRate, WSMaxConnsPerUser, WSMaxConnsPerIP int
	WSPingInterval, WSIdleTimeout, WSInitTimeout                          time.Duration
	SSEHeartbeat, SSEMaxDuration                                          time.Duration

	FCMCredentialsFile string
	FCMProjectID       string
	FCMEndpoint        string
	APNsKeyFile        string
	APNsKeyID          string
	APNsTeamID         string
	APNsTopic          string
	APNsEndpoint       string
	// VAPIDKeyFile and VAPIDSubject enable Web Push (platform web).
	VAPIDKeyFile        string
	VAPIDSubject        string
	WebPushAllowPrivate bool
	// HMSAppID and HMSClientSecret enable Huawei Push Kit (platform
	// huawei); HMSClientID is HMSAppID unless set.
	HMSAppID          string
	HMSClientID       string
	HMSClientSecret   string
	HMSTokenURL       string
	HMSSendURL        string
	PushRate          int
	PushBatchSize     int
	PushConcurrency   int
	PushLeaseTTL      time.Duration
	DeliveryRetention time.Duration
	// TestClockOffset shifts the replica's clock (test only).
	TestClockOffset time.Duration
	// SecurityLogRetention is how long security log entries are kept.
	SecurityLogRetention time.Duration
	// InboxRetention is how long an in-app inbox item is kept.
	InboxRetention time.Duration
	// GuestRetention is how long an unused guest account is kept.
	GuestRetention time.Duration
	// NotificationCategories are the operator's notification categories,
	// after the built-in ones (preferences.NewCatalogue).
	NotificationCategories []string
	// NotificationDigests are the categories whose sends to a user are
	// folded into one per window (HERALD_NOTIFICATION_DIGESTS).
	NotificationDigests preferences.Digests
	// RecentSignIn is how recent a session's sign-in must be for an
	// account without a password to delete itself.
	RecentSignIn     time.Duration
	PlanDeviceLimits map[string]int
	UpgradeURL       string
	RenewURL         string

	// Store subscriptions (docs/billing.md).
	BillingProductsFile      string
	BillingReconcileInterval time.Duration
	RenewURLAppStore         string
	RenewURLGooglePlay       string
	RenewURLStripe           string
	AppleBundleID            string
	AppleEnvironment         string
	AppleRootCertFile        string
	AppleIssuerID            string
	AppleKeyID               string
	ApplePrivateKeyFile      string
	AppleAPIURL              string
	GooglePackageName        string
	GoogleServiceAccountFile string
	GooglePushAudience       string
	GooglePushServiceAccount string
	GooglePushIssuer         string
	GoogleJWKSURL            string
	GoogleAPIURL             string
	StripeSecretKey          string
	StripeWebhookSecret      string
	StripeAPIURL             string
	StripeTolerance          time.Duration
	StripeSuccessURL         string
	StripeCancelURL          string
	StripePortalReturnURL    string

	TelegramBotToken      string
	TelegramAPIURL        string
	TelegramWebhookURL    string
	TelegramWebhookSecret string
	TelegramPollLeaseTTL  time.Duration
	TelegramRate          int

	JobRetryBase time.Duration
	JobRetryMax  time.Duration
	JobPoll      time.Duration

	WebhooksAllowInsecure bool
	WebhooksAllowPrivate  bool
	WebhooksRetrySchedule []time.Duration
	WebhooksDisableAfter  time.Duration
	WebhooksAllowedPorts  []uint16
	WebhooksConcurrency   int

	// Second factors (issue 25).
	MFALockoutAttempts int
	MFALockoutDuration time.Duration
	AdminMFA           string

	// Breached passwords (issue 25): off while PwnedPasswordsURL is empty.
	PwnedPasswordsURL     string
	PwnedPasswordsTimeout time.Duration

	// CAPTCHA (issue 25): off while CaptchaProvider is empty.
	CaptchaProvider      string
	CaptchaSecret        string
	CaptchaVerifyURL     string
	CaptchaTimeout       time.Duration
	CaptchaLoginFailures int
	CaptchaFailureWindow time.Duration

	// Passkeys (issue 25): off while WebAuthnRPID is empty.
	WebAuthnRPID    string
	WebAuthnRPName  string
	WebAuthnOrigins []string

	// Sign in with Apple and Google (issue 25): each off while its client
	// ids are empty. The Apple key signs the client secret of the code
	// exchange and the revocation.
	AppleClientIDs     []string
	AppleIssuer        string
	AppleJWKSURL       string
	AppleTokenURL      string
	AppleTeamID        string
	AppleSignInKeyID   string
	AppleSignInKeyFile string
	GoogleClientIDs    []string
	GoogleIssuer       string
}

// Var documents one environment variable; docs/configuration.md's table and
// `herald --help` are made from the same list.
type Var struct {
	Name    string
	Default string
	Example string
	Help    string
	set     setter
}

// Vars lists every variable Herald reads: one row each, its value read and
// checked by one of the small typed validators of validate.go.
func Vars() []Var {
	return []Var{
		{"HERALD_ENV", "production", "development", "production, or development (a developer's machine): the auth rate-limit tier is off (unless HERALD_RATE_LIMIT_AUTH is set) so a local tour never trips it, emails are written to the log without HERALD_SMTP_URL, /metrics is on HERALD_ADDR while HERALD_METRICS_ADDR is empty, discovery takes its URLs from each request without HERALD_PUBLIC_URL, and the server says so at start", oneOf(func(c *Config) *string { return &c.Env }, "production", "development")},
		{"HERALD_ADDR", "127.0.0.1:8080", ":8080", "listen address", address(func(c *Config) *string { return &c.Addr })},
		{"HERALD_PUBLIC_URL", "", "https://api.example.com", "the address clients reach this server at (through the proxy): the base of the absolute URLs it publishes, such as jwks_uri in /.well-known/openid-configuration; empty: an http(s) HERALD_JWT_ISSUER's, else (development profile only) each request's own address; with none, production answers discovery 404", optional(baseURL(func(c *Config) *string { return &c.PublicURL }))},
		{"HERALD_METRICS_ADDR", "", "127.0.0.1:9090", "listen address of a separate listener serving GET /metrics and Go's profiles under /debug/pprof/ (for example an internal port); empty: no such listener (and no profiles)", optional(address(func(c *Config) *string { return &c.MetricsAddr }))},
		{"HERALD_METRICS_PUBLIC", "off", "on", "on: GET /metrics is also served on HERALD_ADDR, to anyone who reaches it; off: /metrics on HERALD_ADDR answers 404 (the development profile serves it there while HERALD_METRICS_ADDR is empty, unless this is set)", onOff(func(c *Config) *bool { return &c.MetricsPublic })},
		{"HERALD_DATABASE_URL", "sqlite:herald.db", "postgres://herald@db:5432/herald", "sqlite:PATH (embedded) or postgres://… (production)", databaseURL(func(c *Config) *string { return &c.DatabaseURL })},
		{"HERALD_DATABASE_MAX_CONNS", "25", "40", "PostgreSQL connections per replica (unless the URL's pool_max_conns sets it); SQLite: readers beside the one writer, at most 8", integer(func(c *Config) *int { return &c.DatabaseMaxConns }, 1)},
		{"HERALD_DATABASE_START_TIMEOUT", "60s", "5m", "how long serve waits at start for a database that cannot be reached yet (connection refused, too many clients, starting up), retrying with backoff while /readyz and the API answer 503 with Retry-After; past it serve exits 1. Errors retrying cannot fix (a bad URL, password or database name, a failed migration) stop the start at once. 0: fail at the first refusal", durationOrZero(func(c *Config) *time.Duration { return &c.DatabaseStartTimeout })},
		{"HERALD_REPLICAS", "1", "3", "how many Herald servers share the database: herald check warns when this × (HERALD_DATABASE_MAX_CONNS + the listener) nears PostgreSQL's usable connections (above 80 %) and fails past them (herald check --replicas overrides it)", integer(func(c *Config) *int { return &c.Replicas }, 1)},
		{"HERALD_DATABASE_QUERY_TIMEOUT", "30s", "10s", "the longest any database query (a transaction as a whole) may take when its caller has no sooner deadline: jobs, the broadcast sweep, the bot; past it the query is cancelled and its connection closed. Housekeeping and migrations have bounds of their own (see docs/operations.md)", duration(func(c *Config) *time.Duration { return &c.DatabaseQueryTimeout })},
		{"HERALD_REQUEST_TIMEOUT", "15s", "10s", "the longest an API request may take as a whole (REST and GraphQL over HTTP; not the event streams, GraphQL WebSockets or the Telegram webhook, which have bounds of their own); one whose deadline passes while it waits answers 503 SERVICE_UNAVAILABLE with Retry-After", duration(func(c *Config) *time.Duration { return &c.RequestTimeout })},
		{"HERALD_LOG_FORMAT", "json", "text", "json or text", oneOf(func(c *Config) *string { return &c.LogFormat }, "json", "text")},
		{"HERALD_LOG_LEVEL", "info", "debug", "debug, info, warn or error", oneOf(func(c *Config) *string { return &c.LogLevel }, "debug", "info", "warn", "error")},
		{"HERALD_LOG_FLUSH_INTERVAL", "100ms", "0", "how long the server holds INFO and DEBUG lines to write them in batches (a WARN or ERROR line is written at once, with everything before it); 0 writes every line at once", durationOrZero(func(c *Config) *time.Duration { return &c.LogFlushInterval })},
		{"HERALD_SHUTDOWN_TIMEOUT", "30s", "10s", "how long a shutdown waits for requests and jobs in flight", duration(func(c *Config) *time.Duration { return &c.ShutdownTimeout })},
		{"HERALD_SMTP_URL", "", "smtp://user:pass@mail.example.com:587", "smtp:// (STARTTLS when offered) or smtps:// (implicit TLS); empty: in the development profile emails are written to the log, in production the server refuses to start (unless HERALD_MAIL_TO_LOG=on)", optional(smtpURL(func(c *Config) *string { return &c.SMTPURL }))},
		{"HERALD_MAIL_TO_LOG", "off", "on", "on: without HERALD_SMTP_URL, a production server writes every email, its one-time code included, to its log instead of refusing to start (herald check warns); off: it refuses", onOff(func(c *Config) *bool { return &c.MailToLog })},
		{"HERALD_MAIL_FROM", "Herald <no-reply@localhost>", "Herald <no-reply@example.com>", "sender of every email", mailbox(func(c *Config) *string { return &c.MailFrom })},
		{"HERALD_PRODUCT_NAME", "Herald", "Example VPN", "the product's name in every email's subject and body", line(func(c *Config) *string { return &c.ProductName }, 64)},
		{"HERALD_EMAIL_LOGO_URL", "", "https://example.com/logo.png", "an http(s) image shown atop every HTML email (40 px high); empty: the product name instead", optional(httpURL(func(c *Config) *string { return &c.EmailLogoURL }))},
		{"HERALD_SUPPORT_EMAIL", "", "support@example.com", "address every email's footer invites questions to; empty: none", optional(bareAddress(func(c *Config) *string { return &c.SupportEmail }))},
		{"HERALD_EMAIL_TEMPLATES_DIR", "", "/etc/herald/emails", "directory whose files replace the embedded email templates of the same path (layout.html, en/verify.txt…) or add a locale; checked at start", str(func(c *Config) *string { return &c.EmailTemplatesDir })},
		{"HERALD_TRUSTED_PROXIES", "", "10.0.0.0/8,127.0.0.1/32", "CIDRs whose X-Forwarded-For is believed", prefixes(func(c *Config) *[]netip.Prefix { return &c.TrustedProxies })},
		{"HERALD_CORS_ORIGINS", "", "https://app.example.com,http://localhost:5173", "comma-separated origins (scheme://host[:port]) whose browser code may call /graphql and /api/v1, or * for any origin; credentials (cookies) are never allowed, tokens go in Authorization; empty: no CORS headers", origins(func(c *Config) *[]string { return &c.CORSOrigins })},
		{"HERALD_VERIFICATION_CODE_TTL", "15m", "10m", "validity of an emailed code", duration(func(c *Config) *time.Duration { return &c.VerificationCodeTTL })},
		{"HERALD_RESEND_COOLDOWN", "60s", "30s", "wait between two code emails a user asks for", duration(func(c *Config) *time.Duration { return &c.ResendCooldown })},
		{"HERALD_RESEND_HOURLY_LIMIT", "5", "3", "code emails a user may ask for per email per sliding hour", integer(func(c *Config) *int { return &c.ResendHourlyLimit }, 1)},
		{"HERALD_TRIAL_PERIOD", "168h", "336h", "trial subscription of a new account; 0: none, a new account has no subscription until it buys one (SUBSCRIPTION_NOT_FOUND)", durationOrZero(func(c *Config) *time.Duration { return &c.TrialPeriod })},
		{"HERALD_REFERRAL_BONUS", "168h", "72h", "extension given to both sides of a referral", duration(func(c *Config) *time.Duration { return &c.ReferralBonus })},
		{"HERALD_SECRET_KEY", "", "(64 hex digits)", "key of the code hashes, hex, at least 32 bytes; empty: generated once and kept in the database", optional(hexKey(func(c *Config) *[]byte { return &c.SecretKey }, 32))},
		{"HERALD_ENCRYPTION_KEY", "", "(64 hex digits)", "key (32 bytes in hex: openssl rand -hex 32) sealing, with AES-256-GCM, the secrets kept in the database: webhook signing secrets, the generated JWT seed and HMAC keys; rows kept in plain text are sealed at start; empty: they stay plain (herald check warns in production)", optional(sealKey(func(c *Config) *[]byte { return &c.EncryptionKey }))},
		{"HERALD_ENCRYPTION_KEY_FILE", "", "/etc/herald/encryption.key", "file holding HERALD_ENCRYPTION_KEY (64 hex digits), in its place", optional(sealKeyFile(func(c *Config) *[]byte { return &c.EncryptionKey }, "HERALD_ENCRYPTION_KEY"))},
		{"HERALD_ENCRYPTION_KEY_PREVIOUS", "", "(64 hex digits)", "comma-separated keys HERALD_ENCRYPTION_KEY replaced: they only open what they sealed, and at start every such row is sealed again with HERALD_ENCRYPTION_KEY", sealKeys(func(c *Config) *[][]byte { return &c.EncryptionKeysPrevious })},
		{"HERALD_ACCESS_TOKEN_TTL", "24h", "1h", "lifetime of an access token (JWT)", duration(func(c *Config) *time.Duration { return &c.AccessTokenTTL })},
		{"HERALD_REFRESH_TOKEN_TTL", "720h", "2160h", "lifetime of a session's refresh token", duration(func(c *Config) *time.Duration { return &c.RefreshTokenTTL })},
		{"HERALD_REFRESH_REUSE_GRACE", "10s", "5s", "window in which a just-rotated refresh token may be used again (two tabs) without revoking the session", duration(func(c *Config) *time.Duration { return &c.RefreshGrace })},
		{"HERALD_JWT_KEYS_FILE", "", "/etc/herald/jwks.json", "JWK set of Ed25519 keys, one marked \"active\": true; empty: a key generated once and kept in the database", str(func(c *Config) *string { return &c.JWTKeysFile })},
		{"HERALD_JWT_ISSUER", "herald", "https://api.example.com", "iss claim of access tokens", str(func(c *Config) *string { return &c.JWTIssuer })},
		{"HERALD_JWT_AUDIENCE", "", "https://vpn.example.com", "aud claim of access tokens; when set it is issued and required on verification (other services check it); empty: none", str(func(c *Config) *string { return &c.JWTAudience })},
		{"HERALD_RATE_LIMIT_GLOBAL", "100", "300", "requests per window per client IP, every API request (0 disables)", integer(func(c *Config) *int { return &c.RateLimitGlobal }, 0)},
		{"HERALD_RATE_LIMIT_AUTH", "10", "20", "requests per window per client IP to signup, verification, login, refresh and password reset (0 disables)", integer(func(c *Config) *int { return &c.RateLimitAuth }, 0)},
		{"HERALD_RATE_LIMIT_PROTECTED", "300", "600", "requests per window per user to operations that need a token (0 disables)", integer(func(c *Config) *int { return &c.RateLimitProtected }, 0)},
		{"HERALD_RATE_LIMIT_ADMIN", "1000", "2000", "requests per window per admin to admin operations (0 disables)", integer(func(c *Config) *int { return &c.RateLimitAdmin }, 0)},
		{"HERALD_RATE_LIMIT_APIKEY", "60", "120", "requests per window per API key, for keys created without their own rateLimit (0: such keys are not limited)", integer(func(c *Config) *int { return &c.RateLimitAPIKey }, 0)},
		{"HERALD_RATE_LIMIT_WINDOW", "1m", "10m", "window of every rate-limit tier, whole seconds (fixed windows, starting at multiples of it since the Unix epoch)", wholeSeconds(func(c *Config) *time.Duration { return &c.RateLimitWindow })},
		{"HERALD_REDIS_URL", "", "redis://redis:6379/0", "Redis for the rate-limit counters, push send-rate caps and the Telegram bot's pace shared by replicas; empty: counted in memory, per process", optional(redisURL(func(c *Config) *string { return &c.RedisURL }))},
		{"HERALD_BLOCK_AFTER_REFUSALS", "20", "50", "refused requests within HERALD_BLOCK_REFUSAL_WINDOW that block an IP", integer(func(c *Config) *int { return &c.BlockAfterRefusals }, 1)},
		{"HERALD_BLOCK_REFUSAL_WINDOW", "10m", "5m", "window of the refusal count", duration(func(c *Config) *time.Duration { return &c.BlockRefusalWindow })},
		{"HERALD_BLOCK_DURATION", "15m", "1h", "how long a block lasts", duration(func(c *Config) *time.Duration { return &c.BlockDuration })},
		{"HERALD_BAN_AFTER_BLOCKS", "3", "5", "blocks within HERALD_BAN_WINDOW that ban an IP until an operator lifts it", integer(func(c *Config) *int { return &c.BanAfterBlocks }, 1)},
		{"HERALD_BAN_WINDOW", "24h", "48h", "window of the block count", duration(func(c *Config) *time.Duration { return &c.BanWindow })},
		{"HERALD_GRAPHQL_MAX_ROOT_MUTATIONS", "10", "5", "mutation fields one GraphQL document may hold", integer(func(c *Config) *int { return &c.GraphQLMaxRootMutations }, 1)},
		{"HERALD_GRAPHQL_MAX_DEPTH", "10", "8", "selection depth of one GraphQL document", integer(func(c *Config) *int { return &c.GraphQLMaxDepth }, 1)},
		{"HERALD_GRAPHQL_MAX_COMPLEXITY", "200", "100", "field complexity of one GraphQL document", integer(func(c *Config) *int { return &c.GraphQLMaxComplexity }, 1)},
		{"HERALD_CONSOLE", "on", "off", "on: the operator console is served at /console (admins sign in there); off: /console answers 404", onOff(func(c *Config) *bool { return &c.Console })},
		{"HERALD_GRAPHQL_INTROSPECTION", "on", "off", "on: __schema and __type are answered; off: refused with GRAPHQL_VALIDATION_FAILED (__typename is always answered)", onOff(func(c *Config) *bool { return &c.GraphQLIntrospection })},
		{"HERALD_WS_MAX_SUBSCRIPTIONS", "20", "50", "GraphQL subscriptions running at once on one WebSocket connection; one more closes it with 4429", integer(func(c *Config) *int { return &c.WSMaxSubscriptions }, 1)},
		{"HERALD_WS_MESSAGE_RATE", "10", "20", "messages a WebSocket client may send per second (and in a burst); faster closes the connection with 4429 (0: no cap)", integer(func(c *Config) *int { return &c.WSMessageRate }, 0)},
		{"HERALD_WS_PING_INTERVAL", "30s", "15s", "how often the server sends a graphql-transport-ws ping on a WebSocket connection; no pong for two intervals closes it with 4408", duration(func(c *Config) *time.Duration { return &c.WSPingInterval })},
		{"HERALD_WS_IDLE_TIMEOUT", "90s", "60s", "a WebSocket connection from which nothing arrives (not even a pong) for this long is closed with 4408", duration(func(c *Config) *time.Duration { return &c.WSIdleTimeout })},
		{"HERALD_WS_INIT_TIMEOUT", "10s", "5s", "connection_init must arrive within this long of the WebSocket opening, else it is closed with 4408", duration(func(c *Config) *time.Duration { return &c.WSInitTimeout })},
		{"HERALD_WS_MAX_CONNECTIONS_PER_USER", "10", "20", "open WebSocket connections of one user or API key on one replica; one more closes with 4429. Event streams (SSE) are capped by the same number, counted apart: one more is refused with TOO_MANY_STREAMS (429)", integer(func(c *Config) *int { return &c.WSMaxConnsPerUser }, 1)},
		{"HERALD_WS_MAX_CONNECTIONS_PER_IP", "50", "200", "open WebSocket connections from one client address (an IPv6 client's /64) on one replica; one more closes with 4429. Event streams (SSE) are capped by the same number, counted apart: one more is refused with TOO_MANY_STREAMS (429)", integer(func(c *Config) *int { return &c.WSMaxConnsPerIP }, 1)},
		{"HERALD_SSE_HEARTBEAT", "15s", "10s", "how often an event stream (SSE) gets a keep-alive comment; its credential is checked again at each, and a revoked or expired one ends the stream with an error event", duration(func(c *Config) *time.Duration { return &c.SSEHeartbeat })},
		{"HERALD_SSE_MAX_DURATION", "10m", "30m", "how long one event stream (SSE) lasts at most; it then ends and the client reconnects with Last-Event-ID", duration(func(c *Config) *time.Duration { return &c.SSEMaxDuration })},
		{"HERALD_FCM_CREDENTIALS_FILE", "", "/etc/herald/fcm-service-account.json", "Firebase service-account JSON; enables FCM for android (and ios without APNs)", str(func(c *Config) *string { return &c.FCMCredentialsFile })},
		{"HERALD_FCM_PROJECT_ID", "", "my-vpn-app", "FCM project; empty: the project_id of the credentials file", str(func(c *Config) *string { return &c.FCMProjectID })},
		{"HERALD_FCM_ENDPOINT", "https://fcm.googleapis.com", "http://127.0.0.1:9090", "FCM HTTP v1 server", httpURL(func(c *Config) *string { return &c.FCMEndpoint })},
		{"HERALD_APNS_KEY_FILE", "", "/etc/herald/AuthKey_ABC123.p8", "APNs token-auth key (.p8); with the three below, enables APNs for ios", str(func(c *Config) *string { return &c.APNsKeyFile })},
		{"HERALD_APNS_KEY_ID", "", "ABC123DEFG", "APNs key id", str(func(c *Config) *string { return &c.APNsKeyID })},
		{"HERALD_APNS_TEAM_ID", "", "DEF123GHIJ", "Apple team id", str(func(c *Config) *string { return &c.APNsTeamID })},
		{"HERALD_APNS_TOPIC", "", "com.example.vpn", "the app's bundle id", str(func(c *Config) *string { return &c.APNsTopic })},
		{"HERALD_APNS_ENDPOINT", "production", "sandbox", "production, sandbox, or an https URL", str(func(c *Config) *string { return &c.APNsEndpoint })},
		{"HERALD_VAPID_PRIVATE_KEY_FILE", "", "/etc/herald/vapid.pem", "Web Push VAPID key: a PEM EC P-256 private key (herald keys vapid writes one); with HERALD_VAPID_SUBJECT, enables Web Push for web", str(func(c *Config) *string { return &c.VAPIDKeyFile })},
		{"HERALD_VAPID_SUBJECT", "", "mailto:ops@example.com", "the contact push services may use about Herald's pushes: a mailto: or https: URL", str(func(c *Config) *string { return &c.VAPIDSubject })},
		{"HERALD_WEBPUSH_ALLOW_PRIVATE", "off", "on", "on: Web Push subscriptions may point at push services on any address and port but a zoned one, and at plain http on loopback (development, tests); off: https endpoints on public addresses, port 443", onOff(func(c *Config) *bool { return &c.WebPushAllowPrivate })},
		{"HERALD_HMS_APP_ID", "", "104512345", "Huawei Push Kit: the app's ID in AppGallery Connect; with a client secret, enables HMS for huawei", str(func(c *Config) *string { return &c.HMSAppID })},
		{"HERALD_HMS_CLIENT_ID", "", "104512345", "Push Kit's OAuth 2.0 client ID; empty: HERALD_HMS_APP_ID (the app's ID is its client ID)", str(func(c *Config) *string { return &c.HMSClientID })},
		{"HERALD_HMS_CLIENT_SECRET", "", "(the app secret)", "Push Kit's OAuth 2.0 client secret: the app's App secret in AppGallery Connect", str(func(c *Config) *string { return &c.HMSClientSecret })},
		{"HERALD_HMS_CLIENT_SECRET_FILE", "", "/etc/herald/hms-client-secret", "file holding HERALD_HMS_CLIENT_SECRET, in its place", optional(secretFile(func(c *Config) *string { return &c.HMSClientSecret }, "HERALD_HMS_CLIENT_SECRET"))},
		{"HERALD_HMS_TOKEN_URL", "https://oauth-login.cloud.huawei.com/oauth2/v3/token", "http://127.0.0.1:9091/oauth2/v3/token", "Huawei's OAuth 2.0 token endpoint", httpURL(func(c *Config) *string { return &c.HMSTokenURL })},
		{"HERALD_HMS_SEND_URL", "https://push-api.cloud.huawei.com", "http://127.0.0.1:9091", "Push Kit's send API server (/v1/{app ID}/messages:send is appended)", httpURL(func(c *Config) *string { return &c.HMSSendURL })},
		{"HERALD_PUSH_RATE", "10000", "2000", "sends per second per provider (the development one too), shared by the replicas through Redis when HERALD_REDIS_URL is set, else per process (0: no cap)", integer(func(c *Config) *int { return &c.PushRate }, 0)},
		{"HERALD_PUSH_BATCH_SIZE", "500", "1000", "devices per broadcast batch", integer(func(c *Config) *int { return &c.PushBatchSize }, 1)},
		{"HERALD_PUSH_CONCURRENCY", "64", "128", "sends in flight per broadcast", integer(func(c *Config) *int { return &c.PushConcurrency }, 1)},
		{"HERALD_PUSH_LEASE_TTL", "20s", "10s", "how long a broadcast stays claimed by a worker that stopped answering: another replica takes it over within about this long after its worker dies", duration(func(c *Config) *time.Duration { return &c.PushLeaseTTL })},
		{"HERALD_TEST_CLOCK_OFFSET", "0s", "2s", "test only, never in production: shifts this replica's clock by this much (negative: behind), as if its system clock were off; the fault suite runs replicas 2 s apart with it (docs/operations.md, Clocks)", signedDuration(func(c *Config) *time.Duration { return &c.TestClockOffset })},
		{"HERALD_PUSH_DELIVERY_RETENTION", "720h", "168h", "how long the per-device delivery records of a finished broadcast (failures, retries, dead tokens, and outcomes written before their batch settled) are kept (its counters stay)", duration(func(c *Config) *time.Duration { return &c.DeliveryRetention })},
		{"HERALD_INBOX_RETENTION", "2160h", "720h", "how long an item of a user's in-app inbox is kept; an expired item is no longer listed or counted, and the hourly housekeeping deletes it", duration(func(c *Config) *time.Duration { return &c.InboxRetention })},
		{"HERALD_SECURITY_LOG_RETENTION", "8760h", "2160h", "how long an account's security log entries (sign-ins, factor, password, email, session and key changes, admins' actions) are kept; older ones are deleted by the hourly housekeeping", duration(func(c *Config) *time.Duration { return &c.SecurityLogRetention })},
		{"HERALD_RECENT_SIGN_IN", "10m", "5m", "an account without a password (made by Apple or Google, or a guest) deletes itself with a session signed in this recently (a refresh does not count); an older one is refused with RECENT_SIGN_IN_REQUIRED", duration(func(c *Config) *time.Duration { return &c.RecentSignIn })},
		{"HERALD_GUEST_RETENTION", "720h", "168h", "how long a guest account (POST /api/v1/auth/guest) is kept once unused: made longer ago and none of its sessions opened or refreshed since, it is deleted by the hourly housekeeping as an account is", duration(func(c *Config) *time.Duration { return &c.GuestRetention })},
		{"HERALD_NOTIFICATION_CATEGORIES", "", "promotions:2/day,vpn-tips,product:3/day", "notification categories beside the built-in security, billing (which no one can turn off), service, product and messages: comma-separated names of 1 to 32 lowercase letters, digits, '-' or '_'; a send names its category, and users turn each on or off per channel. A name followed by :N/day (N from 1 to 1000) caps the category: a user gets at most N of its sends a day, counted per calendar day in the user's time zone, the rest skipped (skipped.capped); a built-in category is named only to cap it (product:3/day), and security and billing cannot be capped", optional(categories(func(c *Config) *[]string { return &c.NotificationCategories }))},
		{"HERALD_NOTIFICATION_DIGESTS", "", "messages=15m", "categories whose sends to a user are folded into one digest: category=window, comma-separated; the first send of a window opens it, the rest join it, and one notification goes out when it ends (saying how many, with the latest subjects); urgent sends pass through; a window of 1m to 24h; not security or billing", optional(digests(func(c *Config) *preferences.Digests { return &c.NotificationDigests }))},
		{"HERALD_PLAN_DEVICE_LIMITS", "trial=3,basic=5,premium=10", "trial=2,basic=5,premium=20", "active devices allowed per plan", planLimits(func(c *Config) *map[string]int { return &c.PlanDeviceLimits })},
		{"HERALD_UPGRADE_URL", "https://example.com/upgrade", "https://vpn.example.com/upgrade", "shown with DEVICE_LIMIT_REACHED", httpURL(func(c *Config) *string { return &c.UpgradeURL })},
		{"HERALD_RENEW_URL", "https://example.com/renew", "https://vpn.example.com/renew", "shown with SUBSCRIPTION_EXPIRED (and in the renewal notices) when the plan's source has no renew URL of its own", httpURL(func(c *Config) *string { return &c.RenewURL })},
		{"HERALD_RENEW_URL_APP_STORE", "https://apps.apple.com/account/subscriptions", "https://apps.apple.com/account/subscriptions", "renewUrl of a plan bought in the App Store (its manage-subscriptions page)", httpURL(func(c *Config) *string { return &c.RenewURLAppStore })},
		{"HERALD_RENEW_URL_GOOGLE_PLAY", "https://play.google.com/store/account/subscriptions", "https://play.google.com/store/account/subscriptions", "renewUrl of a plan bought in Google Play", httpURL(func(c *Config) *string { return &c.RenewURLGooglePlay })},
		{"HERALD_RENEW_URL_STRIPE", "", "https://vpn.example.com/billing", "renewUrl of a plan bought through Stripe; empty: HERALD_RENEW_URL", optional(httpURL(func(c *Config) *string { return &c.RenewURLStripe }))},
		{"HERALD_BILLING_PRODUCTS", "", "/etc/herald/products.json", "JSON file mapping each store's product ids to plans ({\"app_store\": {\"com.example.vpn.premium\": \"premium\"}, \"google_play\": {…}, \"stripe\": {\"price_…\": \"basic\"}}); required when a store is connected; checked at start and by herald check", str(func(c *Config) *string { return &c.BillingProductsFile })},
		{"HERALD_BILLING_RECONCILE_INTERVAL", "24h", "6h", "how often every live store purchase is read again from its store, correcting a missed notification", duration(func(c *Config) *time.Duration { return &c.BillingReconcileInterval })},
		{"HERALD_APPLE_BUNDLE_ID", "", "com.example.vpn", "the app's bundle id; connects the App Store (notifications at POST /api/v1/billing/apple/notifications, app purchases at POST /api/v1/billing/apple/transactions)", str(func(c *Config) *string { return &c.AppleBundleID })},
		{"HERALD_APPLE_ENVIRONMENT", "Production", "Sandbox", "the App Store environment accepted: Production or Sandbox (the other is refused as meant for another app)", oneOf(func(c *Config) *string { return &c.AppleEnvironment }, "Production", "Sandbox")},
		{"HERALD_APPLE_ROOT_CERT_FILE", "", "/etc/herald/AppleRootCA-G3.pem", "PEM root certificate(s) the signed payloads' x5c chains must reach; empty: Apple Root CA - G3, built in", str(func(c *Config) *string { return &c.AppleRootCertFile })},
		{"HERALD_APPLE_ISSUER_ID", "", "57246542-96fe-1a63-e053-0824d011072a", "App Store Connect issuer id of the in-app purchase key (the App Store Server API, for reconciliation)", str(func(c *Config) *string { return &c.AppleIssuerID })},
		{"HERALD_APPLE_KEY_ID", "", "2X9R4HXF34", "id of the in-app purchase key", str(func(c *Config) *string { return &c.AppleKeyID })},
		{"HERALD_APPLE_PRIVATE_KEY_FILE", "", "/etc/herald/SubscriptionKey_2X9R4HXF34.p8", "the in-app purchase key (.p8); with the issuer and key ids, Herald reads purchases from the App Store Server API; empty: notifications only", str(func(c *Config) *string { return &c.ApplePrivateKeyFile })},
		{"HERALD_APPLE_API_URL", "", "https://api.storekit-sandbox.itunes.apple.com", "App Store Server API; empty: the production or sandbox server of HERALD_APPLE_ENVIRONMENT", optional(httpURL(func(c *Config) *string { return &c.AppleAPIURL }))},
		{"HERALD_GOOGLE_PACKAGE_NAME", "", "com.example.vpn", "the Android app's package name; with the three below, connects Google Play (real-time developer notifications at POST /api/v1/billing/google/rtdn, app purchases at POST /api/v1/billing/google/purchases)", str(func(c *Config) *string { return &c.GooglePackageName })},
		{"HERALD_GOOGLE_SERVICE_ACCOUNT_FILE", "", "/etc/herald/play-service-account.json", "service-account key (JSON) with access to the Google Play Developer API", str(func(c *Config) *string { return &c.GoogleServiceAccountFile })},
		{"HERALD_GOOGLE_PUSH_AUDIENCE", "", "https://api.example.com/api/v1/billing/google/rtdn", "the audience set on the Pub/Sub push subscription's authentication", str(func(c *Config) *string { return &c.GooglePushAudience })},
		{"HERALD_GOOGLE_PUSH_SERVICE_ACCOUNT", "", "rtdn-push@my-project.iam.gserviceaccount.com", "the service account the Pub/Sub push subscription authenticates as", str(func(c *Config) *string { return &c.GooglePushServiceAccount })},
		{"HERALD_GOOGLE_PUSH_ISSUER", "https://accounts.google.com", "https://accounts.google.com", "issuer of the push's OIDC token", httpURL(func(c *Config) *string { return &c.GooglePushIssuer })},
		{"HERALD_GOOGLE_JWKS_URL", "https://www.googleapis.com/oauth2/v3/certs", "https://www.googleapis.com/oauth2/v3/certs", "Google's signing keys: of the push's OIDC token and of Sign in with Google's id_tokens", httpURL(func(c *Config) *string { return &c.GoogleJWKSURL })},
		{"HERALD_GOOGLE_API_URL", "https://androidpublisher.googleapis.com", "http://127.0.0.1:9091", "Google Play Developer API", httpURL(func(c *Config) *string { return &c.GoogleAPIURL })},
		{"HERALD_STRIPE_SECRET_KEY", "", "sk_live_…", "Stripe secret (or restricted) key; with the webhook secret, connects Stripe (webhook at POST /api/v1/billing/stripe/webhook, Checkout and the customer portal)", str(func(c *Config) *string { return &c.StripeSecretKey })},
		{"HERALD_STRIPE_WEBHOOK_SECRET", "", "whsec_…", "signing secret of the Stripe webhook endpoint", str(func(c *Config) *string { return &c.StripeWebhookSecret })},
		{"HERALD_STRIPE_API_URL", "https://api.stripe.com", "http://127.0.0.1:12111", "Stripe API", httpURL(func(c *Config) *string { return &c.StripeAPIURL })},
		{"HERALD_STRIPE_TOLERANCE", "5m", "5m", "how old (or early) a Stripe webhook's signed timestamp may be; older is refused as a replay", duration(func(c *Config) *time.Duration { return &c.StripeTolerance })},
		{"HERALD_STRIPE_SUCCESS_URL", "https://example.com/billing/done", "https://vpn.example.com/billing/done", "where Checkout sends the user after paying", httpURL(func(c *Config) *string { return &c.StripeSuccessURL })},
		{"HERALD_STRIPE_CANCEL_URL", "https://example.com/billing", "https://vpn.example.com/billing", "where Checkout sends the user who gives up", httpURL(func(c *Config) *string { return &c.StripeCancelURL })},
		{"HERALD_STRIPE_PORTAL_RETURN_URL", "https://example.com/billing", "https://vpn.example.com/billing", "where the customer portal returns to", httpURL(func(c *Config) *string { return &c.StripePortalReturnURL })},
		{"HERALD_TELEGRAM_BOT_TOKEN", "", "123456:ABC-DEF…", "Telegram bot token; empty: the messenger is not connected", str(func(c *Config) *string { return &c.TelegramBotToken })},
		{"HERALD_TELEGRAM_API_URL", "https://api.telegram.org", "http://127.0.0.1:8081", "Bot API server", httpURL(func(c *Config) *string { return &c.TelegramAPIURL })},
		{"HERALD_TELEGRAM_WEBHOOK_URL", "", "https://api.example.com/webhooks/telegram", "public HTTPS address of POST /webhooks/telegram; empty: the server long-polls (one replica at a time)", optional(httpsURL(func(c *Config) *string { return &c.TelegramWebhookURL }))},
		{"HERALD_TELEGRAM_WEBHOOK_SECRET", "", "s3cret_token-1", "secret Telegram sends in X-Telegram-Bot-Api-Secret-Token (1-256 of A-Za-z0-9_-); empty: generated once and kept in the database", optional(token(func(c *Config) *string { return &c.TelegramWebhookSecret }, 256))},
		{"HERALD_TELEGRAM_POLL_LEASE_TTL", "20s", "10s", "lease of the replica that long-polls Telegram: another takes polling over within about this long after it dies (each poll waits at most a third of it)", duration(func(c *Config) *time.Duration { return &c.TelegramPollLeaseTTL })},
		{"HERALD_TELEGRAM_RATE", "30", "100", "messages per second the bot sends in all (Telegram's limit is 30; a bot with paid broadcasts may send up to 1000); each chat still gets at most one per second; shared by the replicas through Redis when HERALD_REDIS_URL is set, else per process", integerIn(func(c *Config) *int { return &c.TelegramRate }, 1, 1000)},
		{"HERALD_ARGON2_MEMORY", "65536", "19456", "argon2id memory per hash, KiB", integer(func(c *Config) *int { return &c.Argon2MemoryKiB }, 8)},
		{"HERALD_ARGON2_ITERATIONS", "3", "2", "argon2id passes", integer(func(c *Config) *int { return &c.Argon2Iterations }, 1)},
		{"HERALD_ARGON2_PARALLELISM", "2", "1", "argon2id lanes", integer(func(c *Config) *int { return &c.Argon2Parallelism }, 1)},
		{"HERALD_HASH_CONCURRENCY", strconv.Itoa(DefaultHashConcurrency(runtime.GOMAXPROCS(0))), "4", "password hashes run at once, each on one core (its lanes one after another) and holding HERALD_ARGON2_MEMORY; the default, half the cores, leaves the other half to everything else, so a login flood cannot starve cheap requests", integer(func(c *Config) *int { return &c.HashConcurrency }, 1)},
		{"HERALD_HASH_QUEUE", strconv.Itoa(HashQueuePerSlot * DefaultHashConcurrency(runtime.GOMAXPROCS(0))), "64", "password hashes that may wait for one of those places (by default about what they hash in HERALD_HASH_WAIT at the default cost); a login, signup or password change beyond them is refused at once with 503 SERVICE_UNAVAILABLE and Retry-After", integer(func(c *Config) *int { return &c.HashQueue }, 0)},
		{"HERALD_MAX_REQUESTS", "512", "256", "API requests (REST and GraphQL over HTTP; not the event streams or WebSockets) that run at once; more wait for a place", integer(func(c *Config) *int { return &c.MaxRequests }, 1)},
		{"HERALD_REQUEST_QUEUE", "2048", "512", "API requests that may wait for one of those places; one beyond them is refused at once with 503 SERVICE_UNAVAILABLE and Retry-After", integer(func(c *Config) *int { return &c.RequestQueue }, 0)},
		{"HERALD_REQUEST_QUEUE_WAIT", "2s", "1s", "longest an API request waits for a place (within its HERALD_REQUEST_TIMEOUT) before it is refused with 503 SERVICE_UNAVAILABLE and Retry-After", duration(func(c *Config) *time.Duration { return &c.RequestQueueWait })},
		{"HERALD_HASH_WAIT", "1s", "3s", "longest a password hash waits for a place before it is refused with 503 SERVICE_UNAVAILABLE and Retry-After", duration(func(c *Config) *time.Duration { return &c.HashWait })},
		{"HERALD_JOB_RETRY_BASE", "1s", "5s", "first retry delay of a failed background job (doubles each attempt)", duration(func(c *Config) *time.Duration { return &c.JobRetryBase })},
		{"HERALD_JOB_RETRY_MAX", "10m", "1h", "longest delay between two retries of a background job", duration(func(c *Config) *time.Duration { return &c.JobRetryMax })},
		{"HERALD_JOB_POLL", "1s", "200ms", "how often workers look for new background jobs", duration(func(c *Config) *time.Duration { return &c.JobPoll })},
		{"HERALD_WEBHOOKS_ALLOW_INSECURE", "off", "on", "on: webhook endpoints may be http:// (development); off: https only", onOff(func(c *Config) *bool { return &c.WebhooksAllowInsecure })},
		{"HERALD_WEBHOOKS_ALLOW_PRIVATE", "off", "on", "on: webhook endpoints may resolve to any address but a zoned one, on any port (development, tests); off: only public addresses, refused otherwise at registration and at each connection", onOff(func(c *Config) *bool { return &c.WebhooksAllowPrivate })},
		{"HERALD_WEBHOOKS_RETRY_SCHEDULE", "5s,5m,30m,2h,5h,10h,10h", "1s,2s,4s", "waits before each retry of a failed webhook delivery, comma-separated; their number is the number of retries", durations(func(c *Config) *[]time.Duration { return &c.WebhooksRetrySchedule })},
		{"HERALD_WEBHOOKS_DISABLE_AFTER", "120h", "72h", "a webhook endpoint whose every attempt has failed for this long is disabled (and a log line says so)", duration(func(c *Config) *time.Duration { return &c.WebhooksDisableAfter })},
		{"HERALD_WEBHOOKS_ALLOWED_PORTS", "", "8443,9000", "ports webhook endpoints may use beside 443 (and 80 with HERALD_WEBHOOKS_ALLOW_INSECURE), comma-separated", optional(ports(func(c *Config) *[]uint16 { return &c.WebhooksAllowedPorts }))},
		{"HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY", "2", "4", "webhook deliveries in flight to one endpoint, on all replicas together; its others wait without holding a worker", integer(func(c *Config) *int { return &c.WebhooksConcurrency }, 1)},
		{"HERALD_MFA_LOCKOUT_ATTEMPTS", "5", "10", "wrong second-factor codes in a row (TOTP or recovery, at login, step-up or confirmation) after which an account's code checks are refused with 429 MFA_LOCKED for HERALD_MFA_LOCKOUT_DURATION; 0 turns the lockout off", integer(func(c *Config) *int { return &c.MFALockoutAttempts }, 0)},
		{"HERALD_MFA_LOCKOUT_DURATION", "15m", "1h", "how long an account's second-factor checks stay locked after HERALD_MFA_LOCKOUT_ATTEMPTS wrong codes", duration(func(c *Config) *time.Duration { return &c.MFALockoutDuration })},
		{"HERALD_ADMIN_MFA", "optional", "required", "required: a user holding admin must sign in with a second factor (a token at aal2) to call any admin operation, else 403 ADMIN_MFA_REQUIRED (API keys are not affected: see docs/security.md); optional: not required (the requirement is off)", oneOf(func(c *Config) *string { return &c.AdminMFA }, "optional", "required")},
		{"HERALD_PWNED_PASSWORDS_URL", "", "https://api.pwnedpasswords.com", "Pwned Passwords range API (k-anonymity: only 5 hex digits of a password's SHA-1 are sent, answers padded); set, signup, password reset and password change refuse a password seen in a breach with WEAK_PASSWORD and failedChecks [\"breached\"]; empty: off", optional(httpURL(func(c *Config) *string { return &c.PwnedPasswordsURL }))},
		{"HERALD_PWNED_PASSWORDS_TIMEOUT", "2s", "1s", "longest one range lookup may take; a slower or failing corpus is logged and the password accepted (fail open)", duration(func(c *Config) *time.Duration { return &c.PwnedPasswordsTimeout })},
		{"HERALD_CAPTCHA_PROVIDER", "", "turnstile", "turnstile (Cloudflare) or hcaptcha: signup, resend of the verification code, password reset requests and logins after HERALD_CAPTCHA_LOGIN_FAILURES failures need the client's token in the X-Captcha-Token header (400 CAPTCHA_REQUIRED without it, 403 CAPTCHA_FAILED when refused, 503 SERVICE_UNAVAILABLE with Retry-After while the provider cannot answer); empty: off", optional(oneOf(func(c *Config) *string { return &c.CaptchaProvider }, "turnstile", "hcaptcha"))},
		{"HERALD_CAPTCHA_SECRET", "", "0x4AAAAAAA…", "the provider's secret key, sent with each verification; required with HERALD_CAPTCHA_PROVIDER", str(func(c *Config) *string { return &c.CaptchaSecret })},
		{"HERALD_CAPTCHA_VERIFY_URL", "", "https://challenges.cloudflare.com/turnstile/v0/siteverify", "the provider's siteverify endpoint; empty: the provider's own (Turnstile's or hCaptcha's)", optional(httpURL(func(c *Config) *string { return &c.CaptchaVerifyURL }))},
		{"HERALD_CAPTCHA_TIMEOUT", "5s", "3s", "longest one verification may take; a slower or failing provider refuses the request with 503 (fail closed)", duration(func(c *Config) *time.Duration { return &c.CaptchaTimeout })},
		{"HERALD_CAPTCHA_LOGIN_FAILURES", "3", "5", "failed logins of one email address within HERALD_CAPTCHA_FAILURE_WINDOW after which its logins need a CAPTCHA (counted in Redis with HERALD_REDIS_URL, else on each replica; forgotten at a successful login)", integer(func(c *Config) *int { return &c.CaptchaLoginFailures }, 1)},
		{"HERALD_CAPTCHA_FAILURE_WINDOW", "15m", "1h", "window of HERALD_CAPTCHA_LOGIN_FAILURES, from an address's first failed login", duration(func(c *Config) *time.Duration { return &c.CaptchaFailureWindow })},
		{"HERALD_WEBAUTHN_RP_ID", "", "example.com", "the WebAuthn relying party id of passkeys: the domain (no scheme, no port) the passkeys are bound to, the web origins' host or a parent of it; empty: passkeys are off and their operations answer 404 PASSKEYS_NOT_CONFIGURED", optional(rpID(func(c *Config) *string { return &c.WebAuthnRPID }))},
		{"HERALD_WEBAUTHN_RP_NAME", "", "Herald VPN", "the relying party's name authenticators show beside a passkey; empty: HERALD_PRODUCT_NAME", str(func(c *Config) *string { return &c.WebAuthnRPName })},
		{"HERALD_APPLE_CLIENT_IDS", "", "com.example.vpn,com.example.vpn.web", "Sign in with Apple: the client ids an id_token's audience may name, comma-separated (the iOS app's bundle id, the web service id); empty: off, and POST /api/v1/auth/oauth/apple answers 404 IDENTITY_PROVIDER_NOT_CONFIGURED", optional(names(func(c *Config) *[]string { return &c.AppleClientIDs }))},
		{"HERALD_APPLE_ISSUER", "https://appleid.apple.com", "https://appleid.apple.com", "the iss Apple's id_tokens carry", httpURL(func(c *Config) *string { return &c.AppleIssuer })},
		{"HERALD_APPLE_JWKS_URL", "https://appleid.apple.com/auth/keys", "https://appleid.apple.com/auth/keys", "where Apple's signing keys are", httpURL(func(c *Config) *string { return &c.AppleJWKSURL })},
		{"HERALD_APPLE_TOKEN_URL", "https://appleid.apple.com", "https://appleid.apple.com", "the base of Apple's /auth/token (the authorization code's exchange) and /auth/revoke (an account's deletion revokes its token)", httpURL(func(c *Config) *string { return &c.AppleTokenURL })},
		{"HERALD_APPLE_TEAM_ID", "", "ABCDE12345", "the Apple developer team id (the client secret's issuer); with HERALD_APPLE_SIGNIN_KEY_ID and HERALD_APPLE_SIGNIN_KEY_FILE, Sign in with Apple's authorization codes are exchanged for the refresh token Apple requires revoked when the account is deleted", str(func(c *Config) *string { return &c.AppleTeamID })},
		{"HERALD_APPLE_SIGNIN_KEY_ID", "", "XYZ987ABCD", "the id of the Sign in with Apple key", str(func(c *Config) *string { return &c.AppleSignInKeyID })},
		{"HERALD_APPLE_SIGNIN_KEY_FILE", "", "/etc/herald/AuthKey_XYZ987ABCD.p8", "the Sign in with Apple key (.p8, ES256)", str(func(c *Config) *string { return &c.AppleSignInKeyFile })},
		{"HERALD_GOOGLE_CLIENT_IDS", "", "123-abc.apps.googleusercontent.com", "Sign in with Google: the OAuth client ids an id_token's audience may name, comma-separated (Android, iOS and web clients); empty: off", optional(names(func(c *Config) *[]string { return &c.GoogleClientIDs }))},
		{"HERALD_GOOGLE_ISSUER", "https://accounts.google.com", "https://accounts.google.com", "the iss Google's id_tokens carry", httpURL(func(c *Config) *string { return &c.GoogleIssuer })},
		{"HERALD_WEBAUTHN_ORIGINS", "", "https://example.com,android:apk-key-hash:AbC…", "origins a passkey ceremony may come from, comma-separated: https origins (web apps; an iOS app's associated domain answers with its https origin), http://localhost origins for development, and android:apk-key-hash:<base64url SHA-256 of the signing certificate> for an Android app; empty with HERALD_WEBAUTHN_RP_ID set: https://<rp id> alone", optional(webAuthnOrigins(func(c *Config) *[]string { return &c.WebAuthnOrigins }))},
	}
}

// OnOffSpellings is what every on/off variable accepts, in any case;
// `herald help config` and docs/configuration.md say so.
const OnOffSpellings = "on/off variables also accept true/false, 1/0 and yes/no, in any case"

// parseOnOff reads a switch: on, true, 1 or yes; off, false, 0 or no; in
// any case (Docker, Kubernetes and Helm users write true and false).
func parseOnOff(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on", "true", "1", "yes":
		return true, nil
	case "off", "false", "0", "no":
		return false, nil
	}
	return false, fmt.Errorf("must be on or off (or true/false, 1/0, yes/no), not %q", v)
}

// PublicBase is the base of the absolute URLs the server publishes (no
// trailing slash): HERALD_PUBLIC_URL, else an http(s) HERALD_JWT_ISSUER;
// "" when neither says it, and then only the development profile may take
// it from each request (a production answer must never depend on the Host
// header a client sent).
func (c Config) PublicBase() string {
	if c.PublicURL != "" {
		return c.PublicURL
	}
	if u, err := url.Parse(c.JWTIssuer); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		return strings.TrimSuffix(c.JWTIssuer, "/")
	}
	return ""
}

// ServeRefusal is what stops `herald serve` (but no operator command) from
// starting with this configuration, one line per problem naming its
// variable; nil: nothing does. A production server without SMTP would
// write every verification and reset code to its log, so it must be
// asked for (HERALD_MAIL_TO_LOG=on).
func (c Config) ServeRefusal() error {
	if c.SMTPURL == "" && c.Env != "development" && !c.MailToLog {
		return errors.New("HERALD_SMTP_URL: not set, and a production server does not write emails (with their one-time codes) to its log: set HERALD_SMTP_URL=smtp://user:pass@mail.example.com:587, or HERALD_MAIL_TO_LOG=on to log them anyway, or HERALD_ENV=development on a developer's machine")
	}
	return nil
}

// DefaultHashConcurrency is how many password hashes run at once unless
// HERALD_HASH_CONCURRENCY says: half the cores, at least one. A hash takes
// one core (package password runs its lanes one after another), so the
// other half is left to every other request and a login flood cannot
// starve them.
func DefaultHashConcurrency(cores int) int {
	return max(1, cores/2)
}

// HashQueuePerSlot is HERALD_HASH_QUEUE's default per hashing place: a
// hash at the default cost takes about 150 ms of one core, so eight wait
// about HERALD_HASH_WAIT's default second; a longer queue would only
// refuse its waiters later.
const HashQueuePerSlot = 8

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
	if c.Env == "development" && strings.TrimSpace(getenv("HERALD_RATE_LIMIT_AUTH")) == "" {
		c.RateLimitAuth = 0
	}
	if strings.TrimSpace(getenv("HERALD_HASH_QUEUE")) == "" {
		c.HashQueue = HashQueuePerSlot * c.HashConcurrency
	}
	if c.Env == "development" && c.MetricsAddr == "" && strings.TrimSpace(getenv("HERALD_METRICS_PUBLIC")) == "" {
		c.MetricsPublic = true
	}
	if len(c.EncryptionKeysPrevious) > 0 && c.EncryptionKey == nil {
		problems = append(problems, "HERALD_ENCRYPTION_KEY_PREVIOUS: set only beside HERALD_ENCRYPTION_KEY (the key that replaced them)")
	}
	for _, p := range c.EncryptionKeysPrevious {
		if c.EncryptionKey != nil && string(p) == string(c.EncryptionKey) {
			problems = append(problems, "HERALD_ENCRYPTION_KEY_PREVIOUS: lists HERALD_ENCRYPTION_KEY itself")
			break
		}
	}
	apns := []string{c.APNsKeyFile, c.APNsKeyID, c.APNsTeamID, c.APNsTopic}
	if set := len(slices.DeleteFunc(slices.Clone(apns), func(s string) bool { return s == "" })); set > 0 && set < len(apns) {
		problems = append(problems, "HERALD_APNS_KEY_FILE, HERALD_APNS_KEY_ID, HERALD_APNS_TEAM_ID, HERALD_APNS_TOPIC: set all four to enable APNs, or none")
	}
	if (c.VAPIDKeyFile == "") != (c.VAPIDSubject == "") {
		problems = append(problems, "HERALD_VAPID_PRIVATE_KEY_FILE, HERALD_VAPID_SUBJECT: set both to enable Web Push, or neither")
	} else if c.VAPIDSubject != "" && !strings.HasPrefix(c.VAPIDSubject, "mailto:") && !strings.HasPrefix(c.VAPIDSubject, "https://") {
		problems = append(problems, "HERALD_VAPID_SUBJECT: a mailto: or https: URL")
	}
	if (c.HMSAppID == "") != (c.HMSClientSecret == "") {
		problems = append(problems, "HERALD_HMS_APP_ID, HERALD_HMS_CLIENT_SECRET (or HERALD_HMS_CLIENT_SECRET_FILE): set both to enable Huawei Push Kit, or neither")
	} else if c.HMSAppID == "" && c.HMSClientID != "" {
		problems = append(problems, "HERALD_HMS_CLIENT_ID: set only beside HERALD_HMS_APP_ID (Huawei Push Kit is off without it)")
	}
	if c.HMSClientID == "" {
		c.HMSClientID = c.HMSAppID
	}
	if c.CaptchaProvider != "" && c.CaptchaSecret == "" {
		problems = append(problems, "HERALD_CAPTCHA_SECRET: required with HERALD_CAPTCHA_PROVIDER")
	}
	if c.CaptchaProvider == "" && (c.CaptchaSecret != "" || c.CaptchaVerifyURL != "") {
		problems = append(problems, "HERALD_CAPTCHA_SECRET, HERALD_CAPTCHA_VERIFY_URL: set only beside HERALD_CAPTCHA_PROVIDER (CAPTCHAs are off without it)")
	}
	if c.WebAuthnRPID == "" && len(c.WebAuthnOrigins) > 0 {
		problems = append(problems, "HERALD_WEBAUTHN_ORIGINS: set only beside HERALD_WEBAUTHN_RP_ID (passkeys are off without it)")
	}
	if c.WebAuthnRPID != "" && len(c.WebAuthnOrigins) == 0 {
		c.WebAuthnOrigins = []string{"https://" + c.WebAuthnRPID}
	}
	if len(c.NotificationDigests) > 0 {
		// A category added by HERALD_NOTIFICATION_CATEGORIES may have a
		// digest; an unknown or critical one may not.
		if cat, err := preferences.NewCatalogue(c.NotificationCategories); err == nil {
			if err := cat.CheckDigests(c.NotificationDigests); err != nil {
				problems = append(problems, "HERALD_NOTIFICATION_DIGESTS: "+err.Error())
			}
		}
	}
	if len(problems) > 0 {
		return c, errors.New(strings.Join(problems, "\n"))
	}
	return c, nil
}
