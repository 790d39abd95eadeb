// Package captcha verifies a client's CAPTCHA token with Cloudflare
// Turnstile or hCaptcha, and counts the failed logins of each account after
// which a login must carry one.
//
// Both providers speak the same siteverify protocol: a form POST of
// secret, response (the client's token) and remoteip, answered with JSON
// {"success": bool, "error-codes": [...]}. A client sends its token in the
// X-Captcha-Token header, on either door; the server puts it in the
// request's api.RequestInfo.
//
// A missing token is CAPTCHA_REQUIRED (400), a token the provider refuses
// CAPTCHA_FAILED (403), and a provider that cannot answer (down, slow,
// garbled) 503 SERVICE_UNAVAILABLE with Retry-After: the request is
// refused (fail closed), since a CAPTCHA that opens when its provider is
// down protects nothing from whoever can slow it.
package captcha

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

// Providers and their siteverify endpoints.
const (
	Turnstile = "turnstile"
	HCaptcha  = "hcaptcha"

	TurnstileVerifyURL = "https://challenges.cloudflare.com/turnstile/v0/siteverify"
	HCaptchaVerifyURL  = "https://api.hcaptcha.com/siteverify"
)

// Actions a CAPTCHA guards, as logged and as named in the docs.
const (
	ActionSignup = "signup"
	ActionResend = "resend"
	ActionReset  = "password_reset"
	ActionLogin  = "login"
	ActionGuest  = "guest"
)

// Header is the request header that carries the client's token.
const Header = "X-Captcha-Token"

// retryAfterSeconds is the Retry-After of a provider that cannot answer.
const retryAfterSeconds = 5

// Config is the provider and the login-failure rule.
type Config struct {
	// Provider is Turnstile or HCaptcha; empty turns CAPTCHAs off.
	Provider string
	Secret   string
	// VerifyURL overrides the provider's siteverify endpoint (tests).
	VerifyURL string
	// Timeout bounds one verification (default 5 s).
	Timeout time.Duration
	// LoginFailures is how many failed logins of one account within
	// FailureWindow make its next logins need a CAPTCHA (default 3, 15 min).
	LoginFailures int
	FailureWindow time.Duration
	// MaxTracked bounds the accounts whose failures are counted (default
	// 100 000); when full, the expired are dropped, then the oldest.
	MaxTracked int
	// Shared, when set (RedisFailures), counts the failures for every
	// replica; while it errs, each replica counts in its own memory.
	Shared Failures
	Client *http.Client
	Now    func() time.Time
	Log    *slog.Logger
}

// Guard verifies tokens and counts login failures. A nil *Guard, or one
// without a provider, demands nothing. It is safe for concurrent use.
type Guard struct {
	cfg    Config
	client *http.Client
	now    func() time.Time
	log    *slog.Logger

	mu       sync.Mutex
	failures map[string]failures
}

// failures is one account's failed logins in the current window.
type failures struct {
	n     int
	since time.Time // the window's first failure
}

// New returns a guard for cfg; with cfg.Provider empty it demands nothing.
func New(cfg Config) (*Guard, error) {
	switch cfg.Provider {
	case "":
	case Turnstile:
		if cfg.VerifyURL == "" {
			cfg.VerifyURL = TurnstileVerifyURL
		}
	case HCaptcha:
		if cfg.VerifyURL == "" {
			cfg.VerifyURL = HCaptchaVerifyURL
		}
	default:
		return nil, fmt.Errorf("captcha: unknown provider %q (turnstile or hcaptcha)", cfg.Provider)
	}
	if cfg.Provider != "" && cfg.Secret == "" {
		return nil, errors.New("captcha: a provider needs its secret")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.LoginFailures <= 0 {
		cfg.LoginFailures = 3
	}
	if cfg.FailureWindow <= 0 {
		cfg.FailureWindow = 15 * time.Minute
	}
	if cfg.MaxTracked <= 0 {
		cfg.MaxTracked = 100_000
	}
	g := &Guard{cfg: cfg, client: cfg.Client, now: cfg.Now, log: cfg.Log, failures: map[string]failures{}}
	if g.client == nil {
		g.client = &http.Client{Timeout: cfg.Timeout}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.log == nil {
		g.log = slog.New(slog.DiscardHandler)
	}
	return g, nil
}

// On reports whether a provider is configured.
func (g *Guard) On() bool { return g != nil && g.cfg.Provider != "" }

// Require checks the token of the request in ctx (X-Captcha-Token, and
// its client's IP) for action: nil when it passes or CAPTCHAs are off.
func (g *Guard) Require(ctx context.Context, action string) error {
	info := api.Info(ctx)
	return g.Verify(ctx, action, info.CaptchaToken, info.ClientIP)
}

// Verify checks token, presented from ip, for action: CAPTCHA_REQUIRED
// when it is empty, CAPTCHA_FAILED when the provider refuses it, 503
// SERVICE_UNAVAILABLE with Retry-After when the provider cannot answer.
func (g *Guard) Verify(ctx context.Context, action, token string, ip netip.Addr) error {
	if !g.On() {
		return nil
	}
	if strings.TrimSpace(token) == "" {
		return apperr.Newf(apperr.CaptchaRequired, "This request needs a CAPTCHA token in the %s header.", Header).With("action", action)
	}
	res, err := g.siteverify(ctx, token, ip)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		g.log.WarnContext(ctx, "captcha provider could not answer; the request is refused", "provider", g.cfg.Provider, "action", action, "error", err)
		return apperr.Newf(apperr.ServiceUnavailable, "The CAPTCHA provider cannot be reached; try again later.").WithRetryAfter(retryAfterSeconds)
	}
	if !res.Success {
		g.log.InfoContext(ctx, "captcha refused", "provider", g.cfg.Provider, "action", action, "error_codes", res.ErrorCodes)
		return apperr.New(apperr.CaptchaFailed).With("action", action)
	}
	return nil
}

// Check asks the provider to verify a token no one solved, for herald
// check: an error when it cannot answer; its answer's error codes say
// whether it accepted the secret (a refused token is the expected answer).
func (g *Guard) Check(ctx context.Context) (Result, error) {
	if !g.On() {
		return Result{}, errors.New("captcha: no provider")
	}
	return g.siteverify(ctx, "herald-check", netip.Addr{})
}

// SecretRefused reports whether a siteverify answer refused the secret.
func (r Result) SecretRefused() bool {
	return slices.Contains(r.ErrorCodes, "invalid-input-secret") || slices.Contains(r.ErrorCodes, "missing-input-secret")
}

// Result is a siteverify answer (the fields Herald reads).
type Result struct {
	Success    bool     `json:"success"`
	ErrorCodes []string `json:"error-codes"`
}

// maxAnswer bounds a siteverify answer's body.
const maxAnswer = 64 << 10

func (g *Guard) siteverify(ctx context.Context, token string, ip netip.Addr) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	form := url.Values{"secret": {g.cfg.Secret}, "response": {token}}
	if ip.IsValid() {
		form.Set("remoteip", ip.String())
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, g.cfg.VerifyURL, strings.NewReader(form.Encode()))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := g.client.Do(req)
	if err != nil {
		return Result{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswer))
		return Result{}, fmt.Errorf("siteverify answered %s", resp.Status)
	}
	return ParseResult(io.LimitReader(resp.Body, maxAnswer))
}

// ParseResult decodes a siteverify answer; one without a success field is
// an error, not a refusal.
func ParseResult(r io.Reader) (Result, error) {
	var raw struct {
		Success    *bool    `json:"success"`
		ErrorCodes []string `json:"error-codes"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return Result{}, fmt.Errorf("siteverify answer: %w", err)
	}
	if raw.Success == nil {
		return Result{}, errors.New("siteverify answer without success")
	}
	return Result{Success: *raw.Success, ErrorCodes: raw.ErrorCodes}, nil
}

// LoginNeedsCaptcha reports whether the account key (a normalized email)
// failed LoginFailures logins within the window.
func (g *Guard) LoginNeedsCaptcha(ctx context.Context, key string) bool {
	if !g.On() {
		return false
	}
	if g.cfg.Shared != nil {
		n, err := g.cfg.Shared.Count(ctx, key)
		if err == nil {
			return n >= g.cfg.LoginFailures
		}
		g.log.WarnContext(ctx, "shared login-failure count unreadable; counting on this replica", "error", err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.failures[key]
	if !ok {
		return false
	}
	if g.now().Sub(f.since) >= g.cfg.FailureWindow {
		delete(g.failures, key)
		return false
	}
	return f.n >= g.cfg.LoginFailures
}

// LoginFailed counts a failed login of key.
func (g *Guard) LoginFailed(ctx context.Context, key string) {
	if !g.On() {
		return
	}
	if g.cfg.Shared != nil {
		err := g.cfg.Shared.Failed(ctx, key, g.cfg.FailureWindow)
		if err == nil {
			return
		}
		g.log.WarnContext(ctx, "shared login-failure count not written; counting on this replica", "error", err)
	}
	now := g.now()
	g.mu.Lock()
	defer g.mu.Unlock()
	f, ok := g.failures[key]
	if !ok || now.Sub(f.since) >= g.cfg.FailureWindow {
		if !ok && len(g.failures) >= g.cfg.MaxTracked {
			g.evictLocked(now)
		}
		f = failures{since: now}
	}
	f.n++
	g.failures[key] = f
}

// LoginSucceeded forgets key's failures.
func (g *Guard) LoginSucceeded(ctx context.Context, key string) {
	if !g.On() {
		return
	}
	if g.cfg.Shared != nil {
		if err := g.cfg.Shared.Forget(ctx, key); err != nil {
			g.log.WarnContext(ctx, "shared login-failure count not cleared", "error", err)
		}
	}
	g.mu.Lock()
	delete(g.failures, key)
	g.mu.Unlock()
}

// evictLocked drops the expired windows, or else the oldest one.
func (g *Guard) evictLocked(now time.Time) {
	oldest, oldestAt := "", now
	for k, f := range g.failures {
		if now.Sub(f.since) >= g.cfg.FailureWindow {
			delete(g.failures, k)
			continue
		}
		if !f.since.After(oldestAt) {
			oldest, oldestAt = k, f.since
		}
	}
	if len(g.failures) >= g.cfg.MaxTracked && oldest != "" {
		delete(g.failures, oldest)
	}
}
