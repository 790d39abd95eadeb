package limits

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
)

// Tier names, as they appear in `details.tier`.
const (
	TierGlobal    = "global"
	TierAuth      = "auth"
	TierProtected = "protected"
	TierAdmin     = "admin"
	TierAPIKey    = "apikey"
)

// Units is what one request costs against each tier: one per request on
// REST, one per root field on GraphQL.
type Units struct {
	Global, Auth, Protected, Admin, APIKeyUnits int
	UserID                                      string // subject of protected and admin
	APIKey                                      string // subject of apikey
}

// Tiers holds the limits of each tier; a zero Limit disables a tier.
type Tiers struct {
	Global, Auth, Protected, Admin, APIKey Tier
}

// PerMinute returns the tiers with the given per-minute limits.
func PerMinute(global, auth, protected, admin, apikey int) Tiers {
	t := func(name string, n int) Tier { return Tier{Name: name, Limit: n, Window: time.Minute} }
	return Tiers{t(TierGlobal, global), t(TierAuth, auth), t(TierProtected, protected), t(TierAdmin, admin), t(TierAPIKey, apikey)}
}

// Ban is an IP refused outright until an operator lifts it.
type Ban struct {
	IP        string
	Reason    string
	CreatedAt time.Time
}

// BanStore keeps bans in the database so they hold across restarts and
// replicas.
type BanStore interface {
	ListBans(ctx context.Context) ([]Ban, error)
	AddBan(ctx context.Context, b Ban) error
}

// Gate admits or refuses API requests: bans first, then every tier in one
// call to the backend. It writes the X-RateLimit headers and returns the
// error the door renders.
type Gate struct {
	backend Backend
	tiers   Tiers
	bans    BanStore
	logger  *slog.Logger
	now     func() time.Time

	mu        sync.RWMutex
	banned    map[string]bool // by Subject
	loadedAt  time.Time       // when the last refresh started
	refreshEv time.Duration
}

// NewGate returns a gate; bans are re-read from the store every refresh
// (a few seconds), so a ban added or lifted elsewhere holds here soon after.
func NewGate(backend Backend, tiers Tiers, bans BanStore, logger *slog.Logger, refresh time.Duration) *Gate {
	if refresh <= 0 {
		refresh = 2 * time.Second
	}
	return &Gate{backend: backend, tiers: tiers, bans: bans, logger: logger, now: time.Now, refreshEv: refresh}
}

// Subject returns the counting key of an address: IPv6 clients share
// their /64, which one customer usually holds whole.
func Subject(ip netip.Addr) string {
	if ip.Is6() && !ip.Is4In6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.Unmap().String()
}

// isBanned answers from the ban set in memory. When the set is stale, the
// one request that claims the refresh re-reads it; the others, and every
// request while the database fails, use the set they have, so an outage
// costs one query and one log line per refresh period, not per request.
func (g *Gate) isBanned(ctx context.Context, subject string) bool {
	g.mu.RLock()
	fresh := g.now().Sub(g.loadedAt) < g.refreshEv
	banned := g.banned[subject]
	g.mu.RUnlock()
	if fresh || !g.claimRefresh() {
		return banned
	}
	list, err := g.bans.ListBans(ctx)
	if err != nil {
		g.logger.WarnContext(ctx, "bans not refreshed", "err", err)
		return banned
	}
	m := make(map[string]bool, len(list))
	for _, b := range list {
		m[b.IP] = true
	}
	g.mu.Lock()
	g.banned = m
	g.mu.Unlock()
	return m[subject]
}

// claimRefresh marks the refresh as started, for one caller only.
func (g *Gate) claimRefresh() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.now().Sub(g.loadedAt) < g.refreshEv {
		return false
	}
	g.loadedAt = g.now()
	return true
}

// BanSubject normalizes what an operator types (an address, or an IPv6
// /64) to the key bans are stored and matched under.
func BanSubject(s string) (string, error) {
	if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is6() && p.Bits() == 64 {
		return p.Masked().String(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", fmt.Errorf("%q is not an IP address", s)
	}
	return Subject(a), nil
}

// Admit charges u for the client ip and sets the rate-limit headers of the
// tier closest to exhaustion. It returns BANNED or RATE_LIMITED when the
// request must be refused; a backend failure lets the request through.
func (g *Gate) Admit(ctx context.Context, w http.ResponseWriter, ip netip.Addr, u Units) error {
	subject := Subject(ip)
	if g.isBanned(ctx, subject) {
		return apperr.Newf(apperr.Banned, "This address is banned; contact support.")
	}
	checks := make([]Check, 0, 5)
	add := func(t Tier, who string, cost int) {
		if cost > 0 && t.Limit > 0 && who != "" {
			checks = append(checks, Check{Tier: t, Subject: who, Cost: cost})
		}
	}
	add(g.tiers.Global, subject, u.Global)
	add(g.tiers.Auth, subject, u.Auth)
	add(g.tiers.Protected, u.UserID, u.Protected)
	add(g.tiers.Admin, u.UserID, u.Admin)
	add(g.tiers.APIKey, u.APIKey, u.APIKeyUnits)
	d, err := g.backend.Allow(ctx, subject, checks)
	if err != nil {
		g.logger.ErrorContext(ctx, "rate limiter failed; request let through", "err", err)
		return nil
	}
	if d.BanDue {
		g.ban(ctx, subject, "blocked repeatedly for continued requests after being rate limited")
	}
	secs := apperr.WaitSeconds(d.RetryAfter)
	h := w.Header()
	switch {
	case d.Blocked:
		setLimitHeaders(h, 0, 0, g.now().Add(time.Duration(secs)*time.Second))
	case d.Tier != "":
		setLimitHeaders(h, d.Limit, d.Remaining, d.Reset)
	}
	if d.Allowed {
		return nil
	}
	msg := fmt.Sprintf("Too many requests (%s tier); retry in %d seconds.", d.Tier, secs)
	if d.Blocked {
		msg = fmt.Sprintf("This address is blocked for continuing after being rate limited; retry in %d seconds.", secs)
	}
	return apperr.Newf(apperr.RateLimited, "%s", msg).
		With("limit", d.Limit).
		With("window", fmt.Sprintf("%ds", int(d.Window/time.Second))).
		With("tier", d.Tier).
		WithRetryAfter(secs)
}

// setLimitHeaders writes the X-RateLimit-* headers. The keys are written in
// Go's canonical form, as Header.Set would send them, so no key is rebuilt
// per request.
func setLimitHeaders(h http.Header, limit, remaining int, reset time.Time) {
	h["X-Ratelimit-Limit"] = []string{strconv.Itoa(limit)}
	h["X-Ratelimit-Remaining"] = []string{strconv.Itoa(remaining)}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(reset.Unix(), 10)}
}

func (g *Gate) ban(ctx context.Context, subject, reason string) {
	err := g.bans.AddBan(context.WithoutCancel(ctx), Ban{IP: subject, Reason: reason, CreatedAt: g.now().UTC()})
	if err != nil {
		g.logger.ErrorContext(ctx, "ban not stored", "ip", subject, "err", err)
		return
	}
	g.logger.WarnContext(ctx, "address banned", "ip", subject, "reason", reason)
	g.mu.Lock()
	if g.banned == nil {
		g.banned = map[string]bool{}
	}
	g.banned[subject] = true
	g.mu.Unlock()
}
