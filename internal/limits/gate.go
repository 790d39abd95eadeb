package limits

import (
	"context"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/policy"
)

// Tiers holds the limits of each tier; a zero Limit disables a tier.
type Tiers struct {
	Global, Auth, Protected, Admin, APIKey Tier
}

// PerWindow returns the tiers with the given limits, all over one window.
func PerWindow(window time.Duration, global, auth, protected, admin, apikey int) Tiers {
	t := func(name string, n int) Tier { return Tier{Name: name, Limit: n, Window: window} }
	return Tiers{t(policy.TierGlobal, global), t(policy.TierAuth, auth), t(policy.TierProtected, protected), t(policy.TierAdmin, admin), t(policy.TierAPIKey, apikey)}
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

// Gate admits or refuses API requests in two steps, so that an address's
// verdict comes before its credential is checked: Address (bans, blocks,
// the tiers counted per address), then, for an authenticated caller,
// Caller (the tiers counted per user or API key). Each step is one call
// to the backend. It returns a Verdict; the server writes its headers and
// its refusal.
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

// Verdict is the gate's answer for one request: whether it may go on,
// and the tier whose numbers its rate-limit headers show.
type Verdict struct {
	Allowed bool
	// Tier is the tier closest to exhaustion when allowed, the refusing
	// one when refused, TierBlocked for a blocked address, "" when no
	// tier applied (then there are no numbers to show).
	Tier      string
	Limit     int
	Remaining int
	Reset     time.Time
	Window    time.Duration
	// RetryAfter is, when refused, the whole seconds to wait (at least 1).
	RetryAfter int
	Banned     bool
}

// Shown reports whether the verdict has numbers for the X-RateLimit
// headers.
func (v Verdict) Shown() bool { return v.Tier != "" }

// Err is the refusal a door shows: BANNED, or RATE_LIMITED with the tier,
// limit, window and retryAfter; nil when allowed.
func (v Verdict) Err() error {
	switch {
	case v.Allowed:
		return nil
	case v.Banned:
		return apperr.Newf(apperr.Banned, "This address is banned; contact support.")
	}
	msg := fmt.Sprintf("Too many requests (%s tier); retry in %d seconds.", v.Tier, v.RetryAfter)
	if v.Tier == TierBlocked {
		msg = fmt.Sprintf("This address is blocked for continuing after being rate limited; retry in %d seconds.", v.RetryAfter)
	}
	return apperr.Newf(apperr.RateLimited, "%s", msg).
		With("limit", v.Limit).
		With("window", fmt.Sprintf("%ds", int(v.Window/time.Second))).
		With("tier", v.Tier).
		WithRetryAfter(v.RetryAfter)
}

// Address is the first half of admission, decided before any credential
// is looked at: a banned address is refused, a blocked one too, and the
// tiers counted per address (global and auth) are charged, all or none.
// u's per-caller fields are ignored. A request it refuses has cost no
// credential check and no write. A backend failure lets the request
// through.
func (g *Gate) Address(ctx context.Context, ip netip.Addr, u policy.Units) Verdict {
	subject := Subject(ip)
	if g.isBanned(ctx, subject) {
		return Verdict{Banned: true}
	}
	var buf [2]Check
	checks := buf[:0]
	add := func(t Tier, cost int) {
		if cost > 0 && t.Limit > 0 {
			checks = append(checks, Check{Tier: t, Subject: subject, Cost: cost})
		}
	}
	add(g.tiers.Global, u.Global)
	add(g.tiers.Auth, u.Auth)
	return g.charge(ctx, subject, checks)
}

// Caller is the second half, once Address has admitted the request and
// its caller is authenticated: it charges the tiers counted per caller
// (protected and admin per user, apikey per key) and returns the
// request's verdict — this refusal, or, allowed, the tier of the two
// calls closest to exhaustion. addr is Address's verdict. A request
// refused here has spent its address units (global is a baseline of all
// traffic from the address), and its refusal counts towards the
// address's block, as one refused by an address tier does.
func (g *Gate) Caller(ctx context.Context, ip netip.Addr, u policy.Units, addr Verdict) Verdict {
	if !addr.Allowed {
		return addr
	}
	var buf [3]Check
	checks := buf[:0]
	add := func(t Tier, who string, cost int) {
		if cost > 0 && t.Limit > 0 && who != "" {
			checks = append(checks, Check{Tier: t, Subject: who, Cost: cost})
		}
	}
	add(g.tiers.Protected, u.UserID, u.Protected)
	add(g.tiers.Admin, u.UserID, u.Admin)
	keyTier := g.tiers.APIKey
	if u.APIKeyLimit > 0 {
		keyTier.Limit = u.APIKeyLimit
	}
	add(keyTier, u.APIKey, u.APIKeyUnits)
	if len(checks) == 0 {
		return addr
	}
	v := g.charge(ctx, Subject(ip), checks)
	if !v.Allowed {
		return v
	}
	return closer(addr, v)
}

// Check is Address and then Caller, for a request whose caller is known
// already (or that has none).
func (g *Gate) Check(ctx context.Context, ip netip.Addr, u policy.Units) Verdict {
	return g.Caller(ctx, ip, u, g.Address(ctx, ip, u))
}

// charge runs checks in one call to the backend, with the address's
// abuse tracking, and turns the decision into a verdict.
func (g *Gate) charge(ctx context.Context, subject string, checks []Check) Verdict {
	d, err := g.backend.Allow(ctx, subject, checks)
	if err != nil {
		g.logger.ErrorContext(ctx, "rate limiter failed; request let through", "err", err)
		return Verdict{Allowed: true}
	}
	if d.BanDue {
		g.ban(ctx, subject, "blocked repeatedly for continued requests after being rate limited")
	}
	v := Verdict{Allowed: d.Allowed, Tier: d.Tier, Limit: d.Limit, Remaining: d.Remaining, Reset: d.Reset, Window: d.Window}
	if !d.Allowed {
		v.RetryAfter = apperr.WaitSeconds(d.RetryAfter)
	}
	if d.Blocked {
		v.Limit, v.Remaining, v.Reset = 0, 0, g.now().Add(time.Duration(v.RetryAfter)*time.Second)
	}
	return v
}

// closer is the allowed verdict whose tier is closer to exhaustion: fewer
// units left, or, as many, the one that stays exhausted longer (as the
// backend picks among the tiers of one call).
func closer(a, b Verdict) Verdict {
	switch {
	case !b.Shown():
		return a
	case !a.Shown():
		return b
	case b.Remaining < a.Remaining, b.Remaining == a.Remaining && b.Reset.After(a.Reset):
		return b
	}
	return a
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
