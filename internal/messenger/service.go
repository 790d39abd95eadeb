package messenger

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/telegram"
)

// Config is the bot's configuration (HERALD_TELEGRAM_* in the environment).
type Config struct {
	// Token is the bot token from @BotFather; "" disables the bot.
	Token string
	// APIURL is the Bot API server; "" is https://api.telegram.org.
	APIURL string
	// WebhookURL is the public https address of POST /webhooks/telegram.
	// "" means long polling.
	WebhookURL string
	// WebhookSecret is the secret_token Telegram echoes on every webhook
	// call: 1-256 of A-Z a-z 0-9 _ -. "" generates one, kept in the
	// database so every replica shares it.
	WebhookSecret string
	// StatusCacheTTL is how long getMe and getWebhookInfo answers are
	// reused by Status; default 30s.
	StatusCacheTTL time.Duration
	// PollLeaseTTL is how long the polling replica's lease lasts without
	// renewal: another replica takes polling over within about this long
	// after the poller dies; default 20s.
	PollLeaseTTL time.Duration
	// PollTimeout is how long one getUpdates call waits for updates (whole
	// seconds, at least 1); default and maximum a third of PollLeaseTTL,
	// at most 25s, so a poll always ends inside the lease.
	PollTimeout time.Duration
	// PollRetry is the wait after a failed poll and between attempts to
	// take the polling lease held by another replica; default a sixth of
	// PollLeaseTTL, at most 5s.
	PollRetry time.Duration
	// Pacer tunes outgoing pacing; zero values are Telegram's limits
	// (1 message/second per chat, 30/second overall).
	Pacer limits.ChatPaceConfig
	// SharedPacer, when set, wraps this process's pacer (of Pacer's
	// limits) in one that every replica shares (limits.SharedChatPace
	// over Redis), which falls back to the local one; nil: this process
	// paces alone.
	SharedPacer func(local limits.ChatPacer) limits.ChatPacer
	// Live is the broker subscriber changes reach live subscribers
	// through; nil: one of its own (this process alone).
	Live *live.Broker
	// Replies words the bot's answers (texts.TelegramReply); required
	// when Token is set.
	Replies func(Reply) string
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// LogValue keeps the token and the secret out of logs.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Bool("token_set", c.Token != ""),
		slog.String("api_url", c.APIURL),
		slog.String("webhook_url", c.WebhookURL),
		slog.Bool("webhook_secret_set", c.WebhookSecret != ""),
	)
}

// Defaults.
const (
	DefaultStatusCacheTTL = 30 * time.Second
	DefaultPollLeaseTTL   = 20 * time.Second
	DefaultPollTimeout    = 25 * time.Second
	DefaultPollRetry      = 5 * time.Second
	// DefaultPageSize and MaxPageSize bound Subscribers' first.
	DefaultPageSize = 50
	MaxPageSize     = 100
)

// secretName is the secrets row holding the generated webhook secret.
const secretName = "telegram_webhook_secret"

// pollLease is the leases row that lets one replica poll getUpdates.
const pollLease = "telegram_poll"

// allowedUpdates are the update kinds the bot acts on.
var allowedUpdates = []string{telegram.UpdateMessage, telegram.UpdateMyChatMember}

// Service is the messenger bot.
type Service struct {
	store  Store
	cfg    Config
	bot    *telegram.Client // nil without a token
	secret string
	pacer  limits.ChatPacer
	log    *slog.Logger
	now    func() time.Time
	holder string // this replica's name in the polling lease
	live   *live.Broker

	statusMu    sync.Mutex
	cached      *botInfo
	cachedUntil time.Time

	runMu   sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// NewService validates cfg, loads (or creates) the webhook secret and
// returns the service. It makes no call to Telegram.
func NewService(ctx context.Context, store Store, cfg Config, httpClient *http.Client, logger *slog.Logger) (*Service, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	now := cfg.Now
	if now == nil {
		now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.StatusCacheTTL <= 0 {
		cfg.StatusCacheTTL = DefaultStatusCacheTTL
	}
	if cfg.PollLeaseTTL <= 0 {
		cfg.PollLeaseTTL = DefaultPollLeaseTTL
	}
	if cfg.PollTimeout <= 0 || cfg.PollTimeout > cfg.PollLeaseTTL/3 {
		cfg.PollTimeout = min(DefaultPollTimeout, cfg.PollLeaseTTL/3)
	}
	if cfg.PollTimeout < time.Second {
		cfg.PollTimeout = time.Second
	}
	if cfg.PollRetry <= 0 {
		cfg.PollRetry = max(min(DefaultPollRetry, cfg.PollLeaseTTL/6), 100*time.Millisecond)
	}
	if cfg.APIURL == "" {
		cfg.APIURL = telegram.DefaultAPIURL
	}
	if u, err := url.Parse(cfg.APIURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("telegram API URL %q: must be an absolute http(s) URL", cfg.APIURL)
	}
	if cfg.WebhookURL != "" {
		if u, err := url.Parse(cfg.WebhookURL); err != nil || u.Scheme != "https" || u.Host == "" {
			return nil, fmt.Errorf("telegram webhook URL %q: Telegram only calls absolute https URLs", cfg.WebhookURL)
		}
	}
	if cfg.Token != "" && cfg.Replies == nil {
		return nil, errors.New("messenger: Config.Replies is required with a bot token")
	}
	if strings.ContainsAny(cfg.Token, "/?#% \t\r\n") {
		return nil, errors.New("telegram bot token: contains characters a token never has")
	}
	secret := cfg.WebhookSecret
	if secret != "" {
		if !ValidSecret(secret) {
			return nil, errors.New("telegram webhook secret: must be 1 to 256 characters of A-Z, a-z, 0-9, _ and -")
		}
	} else {
		b, err := store.Secret(ctx, secretName, func() ([]byte, error) {
			raw := make([]byte, 32)
			if _, err := rand.Read(raw); err != nil {
				return nil, err
			}
			return []byte(base64.RawURLEncoding.EncodeToString(raw)), nil
		})
		if err != nil {
			return nil, fmt.Errorf("load telegram webhook secret: %w", err)
		}
		secret = string(b)
		if !ValidSecret(secret) {
			return nil, errors.New("telegram webhook secret in the database is not a valid secret_token")
		}
	}
	s := &Service{
		store:  store,
		cfg:    cfg,
		secret: secret,
		pacer:  limits.ChatPacer(limits.NewChatPace(cfg.Pacer)),
		log:    logger,
		now:    now,
		holder: newHolder(),
		live:   cfg.Live,
	}
	if cfg.SharedPacer != nil {
		s.pacer = cfg.SharedPacer(s.pacer)
	}
	if s.live == nil {
		s.live = live.New(nil, logger)
	}
	if cfg.Token != "" {
		s.bot = telegram.New(cfg.Token, cfg.APIURL, httpClient)
	}
	return s, nil
}

// ValidSecret reports whether s is acceptable as Telegram's secret_token.
func ValidSecret(s string) bool {
	if len(s) < 1 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

func newHolder() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	rand.Read(b)
	if host == "" {
		host = "herald"
	}
	return host + "-" + hex.EncodeToString(b)
}

// Enabled reports whether a bot token is configured.
func (s *Service) Enabled() bool { return s.bot != nil }

// Status is the bot's connection as messengerBotStatus reports it. When
// not connected the pointers are nil and SubscriberCount is 0.
type Status struct {
	Connected       bool
	BotUsername     *string
	BotName         *string
	WebhookURL      *string // nil in polling mode
	SubscriberCount int
}

// botInfo is what getMe and getWebhookInfo said, cached.
type botInfo struct {
	connected  bool
	username   string
	name       string
	webhookURL string
}

// Status reports the bot's connection. Telegram being unreachable, the
// token missing or refused all give the not-connected shape, with the
// reason in the log; only a database failure is an error.
func (s *Service) Status(ctx context.Context) (Status, error) {
	info := s.botInfo(ctx)
	if !info.connected {
		return Status{}, nil
	}
	n, err := s.store.CountTelegramSubscribers(ctx)
	if err != nil {
		return Status{}, err
	}
	st := Status{Connected: true, BotUsername: &info.username, BotName: &info.name, SubscriberCount: n}
	if info.webhookURL != "" {
		st.WebhookURL = &info.webhookURL
	}
	return st, nil
}

// statusTimeout bounds the upstream calls of one status refresh.
const statusTimeout = 10 * time.Second

// botInfo returns the cached answers of getMe and getWebhookInfo, asking
// Telegram again once they are StatusCacheTTL old. Concurrent callers wait
// for one refresh rather than each calling upstream.
func (s *Service) botInfo(ctx context.Context) botInfo {
	s.statusMu.Lock()
	defer s.statusMu.Unlock()
	if s.cached != nil && s.now().Before(s.cachedUntil) {
		return *s.cached
	}
	info := s.fetchBotInfo(ctx)
	if ctx.Err() != nil {
		return info // the caller gave up; don't remember a half answer
	}
	s.cached, s.cachedUntil = &info, s.now().Add(s.cfg.StatusCacheTTL)
	return info
}

func (s *Service) fetchBotInfo(ctx context.Context) botInfo {
	if s.bot == nil {
		s.log.InfoContext(ctx, "messenger not connected", "reason", "no bot token configured (HERALD_TELEGRAM_BOT_TOKEN)")
		return botInfo{}
	}
	ctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	me, err := s.bot.GetMe(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "messenger not connected", "reason", reasonOf(err), "err", err)
		return botInfo{}
	}
	info := botInfo{connected: true, username: me.Username, name: strings.TrimSpace(me.FirstName + " " + me.LastName)}
	hook, err := s.bot.GetWebhookInfo(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "telegram getWebhookInfo failed; webhookUrl reported as null", "reason", reasonOf(err), "err", err)
		return info
	}
	info.webhookURL = hook.URL
	return info
}

// forgetStatus drops the cached status, e.g. after setWebhook.
func (s *Service) forgetStatus() {
	s.statusMu.Lock()
	s.cached = nil
	s.statusMu.Unlock()
}

// reasonOf names a failed call's class for the log.
func reasonOf(err error) string {
	switch telegram.Classify(err) {
	case telegram.Unauthorized:
		return "telegram rejected the bot token"
	case telegram.Unreachable:
		return "telegram unreachable"
	case telegram.ServerError:
		return "telegram server error"
	case telegram.RateLimited:
		return "telegram rate limit"
	}
	return "telegram call failed"
}

// Page is one page of subscribers.
type Page = cursor.Page[Subscriber]

// Subscribers lists chats, newest subscription first: of one status
// (subscribed, unsubscribed or blocked), or of every status for "". first
// is the page size (0: DefaultPageSize; at most MaxPageSize); after is the
// EndCursor of the previous page, "" for the first page.
// VALIDATION_ERROR for another status, a negative first or a bad cursor.
func (s *Service) Subscribers(ctx context.Context, status string, first int, after string) (Page, error) {
	switch SubscriberStatus(status) {
	case "", Subscribed, Unsubscribed, Blocked:
	default:
		return Page{}, apperr.Invalid("status", "one of subscribed, unsubscribed, blocked", status)
	}
	switch {
	case first < 0:
		return Page{}, apperr.Invalid("first", "a number from 0 to "+strconv.Itoa(MaxPageSize), strconv.Itoa(first))
	case first == 0:
		first = DefaultPageSize
	case first > MaxPageSize:
		first = MaxPageSize
	}
	var pos *Position
	if after != "" {
		p, err := decodePosition(after)
		if err != nil {
			return Page{}, apperr.Invalid("after", "an endCursor of an earlier page", after)
		}
		pos = &p
	}
	items, err := s.store.ListTelegramSubscribers(ctx, SubscriberStatus(status), pos, first+1)
	if err != nil {
		return Page{}, err
	}
	return cursor.Cut(subscriberCursor, items, first, func(sub Subscriber) subscriberPosition {
		return subscriberPosition{Since: sub.SubscribedSince.UTC(), ChatID: sub.ChatID}
	})
}

// subscriberPosition is subscriberCursor's payload: the last row of a page.
type subscriberPosition struct {
	Since  time.Time `json:"s"`
	ChatID string    `json:"c"`
}

var subscriberCursor = cursor.New[subscriberPosition]("subscriber")

func decodePosition(c string) (Position, error) {
	p, err := subscriberCursor.Decode(c)
	if err != nil {
		return Position{}, err
	}
	id, err := strconv.ParseInt(p.ChatID, 10, 64)
	if err != nil {
		return Position{}, err
	}
	return Position{Since: p.Since.UTC(), ChatID: id}, nil
}

func formatChatID(id int64) string { return strconv.FormatInt(id, 10) }
