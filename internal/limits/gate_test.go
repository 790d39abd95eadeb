package limits_test

// The gate is tested from outside the package: it needs a real ban store,
// and sqlstore imports limits.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/policy"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// gateStart is 15 s into a minute: the current window ends 45 s later.
var gateStart = time.Date(2030, 1, 1, 12, 0, 15, 0, time.UTC)

// banStore opens a fresh, migrated SQLite database: the real ban store.
func banStore(t testing.TB) *sqlstore.DB {
	t.Helper()
	db, _ := jobstest.Open(t, sqlstoretest.NewURL(t, "sqlite"), jobs.Config{})
	return db
}

type gateFixture struct {
	gate *limits.Gate
	db   *sqlstore.DB
}

// newGate returns a gate over an in-memory backend on a fixed clock and a
// real ban store.
func newGate(t testing.TB, tiers limits.Tiers, policy limits.AbusePolicy, refresh time.Duration) gateFixture {
	t.Helper()
	mem := limits.NewMemory(policy, testsupport.NewClock(gateStart).Now)
	t.Cleanup(func() { mem.Close() })
	db := banStore(t)
	return gateFixture{gate: limits.NewGate(mem, tiers, db, slog.New(slog.DiscardHandler), refresh), db: db}
}

// admitted is what one Check produced, as the headers would show it.
type admitted struct {
	err                     *apperr.Error // nil when admitted
	limit, remaining, reset string
}

func (f gateFixture) admit(t testing.TB, ip string, u policy.Units) admitted {
	t.Helper()
	v := f.gate.Check(context.Background(), netip.MustParseAddr(ip), u)
	var a admitted
	if v.Shown() {
		a = admitted{limit: strconv.Itoa(v.Limit), remaining: strconv.Itoa(v.Remaining), reset: strconv.FormatInt(v.Reset.Unix(), 10)}
	}
	if err := v.Err(); err != nil {
		a.err = apperr.As(err)
	}
	return a
}

var (
	signup = policy.Units{Global: 1, Auth: 1}
	plain  = policy.Units{Global: 1}
	// nextMinute is the end of gateStart's window, as X-RateLimit-Reset.
	nextMinute = strconv.FormatInt(gateStart.Truncate(time.Minute).Add(time.Minute).Unix(), 10)
)

func TestGateHeadersOfClosestTier(t *testing.T) {
	t.Parallel()
	f := newGate(t, limits.PerWindow(time.Minute, 5, 3, 300, 1000, 60), limits.AbusePolicy{}, 0)
	steps := []struct {
		name                     string
		units                    policy.Units
		wantLimit, wantRemaining string
	}{
		{"signup: auth is closer than global", signup, "3", "2"},
		{"second signup", signup, "3", "1"},
		{"plain request: global only", plain, "5", "2"},
		{"third signup: auth at 0, global at 1", signup, "3", "0"},
		{"per-user tier of another subject", policy.Units{Global: 1, Protected: 1, UserID: "u1"}, "5", "0"},
	}
	for _, s := range steps {
		a := f.admit(t, "192.0.2.1", s.units)
		if a.err != nil {
			t.Fatalf("%s: refused: %v", s.name, a.err)
		}
		if a.limit != s.wantLimit || a.remaining != s.wantRemaining || a.reset != nextMinute {
			t.Fatalf("%s: headers limit=%s remaining=%s reset=%s, want %s %s %s", s.name, a.limit, a.remaining, a.reset, s.wantLimit, s.wantRemaining, nextMinute)
		}
	}
}

func TestGateRateLimited(t *testing.T) {
	t.Parallel()
	f := newGate(t, limits.PerWindow(time.Minute, 100, 3, 300, 1000, 60), limits.AbusePolicy{}, 0)
	for range 3 {
		if a := f.admit(t, "192.0.2.1", signup); a.err != nil {
			t.Fatalf("refused early: %v", a.err)
		}
	}
	a := f.admit(t, "192.0.2.1", signup)
	if a.err == nil || a.err.Code != apperr.RateLimited {
		t.Fatalf("fourth signup: %+v, want RATE_LIMITED", a.err)
	}
	want := map[string]any{"limit": 3, "window": "60s", "retryAfter": 45, "tier": "auth"}
	for k, v := range want {
		if a.err.Details[k] != v {
			t.Errorf("details[%s] = %#v, want %#v (all: %v)", k, a.err.Details[k], v, a.err.Details)
		}
	}
	if a.err.RetryAfterSeconds != 45 || a.err.Status() != 429 {
		t.Errorf("RetryAfterSeconds = %d, status %d; want 45, 429", a.err.RetryAfterSeconds, a.err.Status())
	}
	if a.limit != "3" || a.remaining != "0" || a.reset != nextMinute {
		t.Errorf("refusal headers %s/%s/%s, want 3/0/%s", a.limit, a.remaining, a.reset, nextMinute)
	}
	// The refused request was charged to no tier: global has 100-3 left
	// before this one.
	if a := f.admit(t, "192.0.2.1", plain); a.err != nil || a.remaining != "96" {
		t.Fatalf("global after refusal: %+v, want remaining 96", a)
	}
	// Another address has its own auth budget.
	if a := f.admit(t, "192.0.2.2", signup); a.err != nil || a.remaining != "2" {
		t.Fatalf("other address: %+v", a)
	}
}

func TestGateBanned(t *testing.T) {
	t.Parallel()
	f := newGate(t, limits.PerWindow(time.Minute, 100, 10, 300, 1000, 60), limits.AbusePolicy{}, 10*time.Millisecond)
	ctx := context.Background()
	if err := f.db.AddBan(ctx, limits.Ban{IP: "192.0.2.7", Reason: "test", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	a := f.admit(t, "192.0.2.7", plain)
	if a.err == nil || a.err.Code != apperr.Banned || a.err.Status() != 403 {
		t.Fatalf("banned address: %+v, want BANNED 403", a.err)
	}
	if a.limit != "" {
		t.Errorf("a banned request carries rate-limit headers: %+v", a)
	}
	if a := f.admit(t, "192.0.2.8", plain); a.err != nil {
		t.Fatalf("other address refused: %v", a.err)
	}
	// Lifted in the database (by the CLI or another replica): noticed at
	// the next refresh.
	if err := f.db.LiftBan(ctx, "192.0.2.7"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ban lifted", func() bool { return f.admit(t, "192.0.2.7", plain).err == nil })
}

func TestGateBanAfterBlocks(t *testing.T) {
	t.Parallel()
	policy := limits.AbusePolicy{RefusalsBeforeBlock: 1, BanAfterBlocks: 1}
	tiers := limits.PerWindow(time.Minute, 100, 1, 300, 1000, 60)
	f := newGate(t, tiers, policy, time.Hour) // bans not re-read: what holds comes from the gate itself
	const ip = "192.0.2.9"

	steps := []struct {
		name     string
		wantCode apperr.Code // "" admitted
		wantTier string
	}{
		{"allowed", "", ""},
		{"refused by auth", apperr.RateLimited, "auth"},
		{"second refusal blocks, and the block bans", apperr.RateLimited, limits.TierBlocked},
		{"banned from now on", apperr.Banned, ""},
	}
	for _, s := range steps {
		a := f.admit(t, ip, signup)
		switch {
		case s.wantCode == "" && a.err != nil:
			t.Fatalf("%s: refused: %v", s.name, a.err)
		case s.wantCode == "":
			continue
		case a.err == nil || a.err.Code != s.wantCode:
			t.Fatalf("%s: got %+v, want %s", s.name, a.err, s.wantCode)
		}
		if s.wantTier != "" && a.err.Details["tier"] != s.wantTier {
			t.Fatalf("%s: tier %v, want %s", s.name, a.err.Details["tier"], s.wantTier)
		}
		if s.wantTier == limits.TierBlocked && (a.err.RetryAfterSeconds != 900 || a.limit != "0" || a.remaining != "0") {
			t.Fatalf("%s: retryAfter %d headers %s/%s, want 900 (15 min) and 0/0", s.name, a.err.RetryAfterSeconds, a.limit, a.remaining)
		}
	}
	bans, err := f.db.ListBans(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(bans) != 1 || bans[0].IP != ip || bans[0].Reason == "" {
		t.Fatalf("stored bans %+v, want one for %s with a reason", bans, ip)
	}
	// Another gate on the same database (a restart, another replica)
	// refuses the address too.
	mem := limits.NewMemory(limits.AbusePolicy{}, nil)
	defer mem.Close()
	other := limits.NewGate(mem, tiers, f.db, slog.New(slog.DiscardHandler), 0)
	if err := other.Check(context.Background(), netip.MustParseAddr(ip), plain).Err(); !apperr.Is(err, apperr.Banned) {
		t.Fatalf("other gate: %v, want BANNED", err)
	}
}

func TestGateIPv6SharesSlash64(t *testing.T) {
	t.Parallel()
	f := newGate(t, limits.PerWindow(time.Minute, 2, 10, 300, 1000, 60), limits.AbusePolicy{}, time.Millisecond)
	cases := []struct {
		ip           string
		wantAdmitted bool
	}{
		{"2001:db8:1:2::1", true},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", true}, // same /64: second unit
		{"2001:db8:1:2:abcd::9", false},            // same /64: over the limit
		{"2001:db8:1:3::1", true},                  // next /64: its own counter
		{"::ffff:192.0.2.1", true},                 // IPv4-mapped counts as the IPv4 address
		{"192.0.2.1", true},
		{"192.0.2.1", false},
	}
	for i, c := range cases {
		if a := f.admit(t, c.ip, plain); (a.err == nil) != c.wantAdmitted {
			t.Fatalf("request %d from %s: err %v, want admitted=%v", i, c.ip, a.err, c.wantAdmitted)
		}
	}
	// A ban on the /64 holds for every address in it.
	subject, err := limits.BanSubject("2001:db8:1:3::77")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.db.AddBan(context.Background(), limits.Ban{IP: subject, Reason: "test", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/64 ban", func() bool {
		a := f.admit(t, "2001:db8:1:3:dead:beef::1", plain)
		return a.err != nil && a.err.Code == apperr.Banned
	})
}

func TestBanSubject(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string // want "" means an error
	}{
		{"203.0.113.9", "203.0.113.9"},
		{"::ffff:203.0.113.9", "203.0.113.9"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:DB8:1:2::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2::/64", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:3::/64", "2001:db8:1:2::/64"},
		{"::1", "::/64"},
		{"2001:db8::/48", ""},
		{"203.0.113.0/24", ""},
		{"203.0.113", ""},
		{"example.com", ""},
		{"", ""},
	}
	for _, c := range cases {
		got, err := limits.BanSubject(c.in)
		if c.want == "" {
			if err == nil {
				t.Errorf("BanSubject(%q) = %q, want an error", c.in, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("BanSubject(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
		// What an operator types and what the gate counts agree.
		if a, err := netip.ParseAddr(c.in); err == nil && limits.Subject(a) != c.want {
			t.Errorf("Subject(%s) = %q, want %q", c.in, limits.Subject(a), c.want)
		}
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testsupport.Eventually(t, 5*time.Second, cond, "timed out waiting for %s", what)
}

func BenchmarkGateMemory(b *testing.B) {
	mem := limits.NewMemory(limits.DefaultAbusePolicy(), nil)
	defer mem.Close()
	benchGate(b, mem)
}

func BenchmarkGateRedis(b *testing.B) {
	c := benchRedis(b)
	benchGate(b, limits.NewRedis(c, limits.DefaultAbusePolicy(), benchPrefix(b), nil))
}

// benchGate admits a users/me request (global + protected) through the
// whole gate: ban lookup, backend, verdict.
func benchGate(b *testing.B, backend limits.Backend) {
	g := limits.NewGate(backend, limits.PerWindow(time.Minute, 1<<30, 1<<30, 1<<30, 1<<30, 1<<30), banStore(b), slog.New(slog.DiscardHandler), 0)
	ip := netip.MustParseAddr("192.0.2.1")
	u := policy.Units{Global: 1, Protected: 1, UserID: "0190a000-0000-7000-8000-000000000001"}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := g.Check(ctx, ip, u).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// benchRedis is a client of HERALD_TEST_REDIS_URL; the benchmark is skipped
// without it.
func benchRedis(b *testing.B) *redis.Client {
	url := os.Getenv("HERALD_TEST_REDIS_URL")
	if url == "" {
		b.Skip("Redis not benchmarked: HERALD_TEST_REDIS_URL is not set")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	c := redis.NewClient(opt)
	b.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return c
}

// benchPrefix is a key prefix of the benchmark's own, deleted afterwards.
func benchPrefix(b *testing.B) string {
	var r [8]byte
	rand.Read(r[:])
	prefix := "herald-test:gate:" + hex.EncodeToString(r[:])
	opt, _ := redis.ParseURL(os.Getenv("HERALD_TEST_REDIS_URL"))
	b.Cleanup(func() {
		c := redis.NewClient(opt)
		defer c.Close()
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return prefix
}

// countingBans counts the reads of the real ban store, and can make them
// fail as an unreachable database would.
type countingBans struct {
	*sqlstore.DB
	mu    sync.Mutex
	reads int
	fail  bool
}

func (c *countingBans) ListBans(ctx context.Context) ([]limits.Ban, error) {
	c.mu.Lock()
	c.reads++
	fail := c.fail
	c.mu.Unlock()
	if fail {
		return nil, context.DeadlineExceeded
	}
	return c.DB.ListBans(ctx)
}

// A stale ban set is re-read by one request, not by every request that
// notices; a failing store is asked once per refresh period, not per request.
func TestBanRefreshIsClaimedOnce(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run("fail="+strconv.FormatBool(fail), func(t *testing.T) {
			mem := limits.NewMemory(limits.DefaultAbusePolicy(), testsupport.NewClock(gateStart).Now)
			t.Cleanup(func() { mem.Close() })
			store := &countingBans{DB: banStore(t), fail: fail}
			gate := limits.NewGate(mem, limits.PerWindow(time.Minute, 0, 0, 0, 0, 0), store, slog.New(slog.DiscardHandler), time.Hour)
			var wg sync.WaitGroup
			for i := 0; i < 50; i++ {
				wg.Go(func() {
					for j := 0; j < 5; j++ {
						if err := gate.Check(context.Background(), netip.MustParseAddr("203.0.113.7"), policy.Units{Global: 1}).Err(); err != nil {
							t.Error(err)
						}
					}
				})
			}
			wg.Wait()
			if store.reads != 1 {
				t.Fatalf("the ban list was read %d times for 250 requests in one refresh period, want 1", store.reads)
			}
		})
	}
}

// Admission's two steps: Address charges only the tiers counted per
// address and refuses before the caller is known; Caller charges the
// caller's tiers, shows the tier closest to exhaustion of the two steps,
// and refuses without undoing the address's units.
func TestGateAddressThenCaller(t *testing.T) {
	t.Parallel()
	f := newGate(t, limits.PerWindow(time.Minute, 5, 3, 2, 1000, 60), limits.AbusePolicy{}, 0)
	ctx := context.Background()
	ip := netip.MustParseAddr("192.0.2.20")
	me := policy.Units{Global: 1, Protected: 1, UserID: "u1"}

	addr := f.gate.Address(ctx, ip, me)
	if !addr.Allowed || addr.Tier != policy.TierGlobal || addr.Remaining != 4 {
		t.Fatalf("address step: %+v, want global with 4 left (the protected unit not charged)", addr)
	}
	v := f.gate.Caller(ctx, ip, me, addr)
	if !v.Allowed || v.Tier != policy.TierProtected || v.Remaining != 1 {
		t.Fatalf("caller step: %+v, want protected with 1 left (closer than global's 4)", v)
	}
	if v := f.gate.Check(ctx, ip, me); !v.Allowed || v.Tier != policy.TierProtected || v.Remaining != 0 {
		t.Fatalf("second call: %+v, want protected with 0 left", v)
	}
	// Refused by the caller's tier: global keeps the unit (5-3 = 2 left
	// before the next request).
	if err := f.gate.Check(ctx, ip, me).Err(); !apperr.Is(err, apperr.RateLimited) || apperr.As(err).Details["tier"] != policy.TierProtected {
		t.Fatalf("third call: %v, want RATE_LIMITED by protected", err)
	}
	if a := f.admit(t, "192.0.2.20", plain); a.err != nil || a.remaining != "1" {
		t.Fatalf("a plain request after the refusal: %+v, want global with 1 left", a)
	}
	// A refused address step is the verdict: Caller charges nothing.
	f.admit(t, "192.0.2.20", plain)
	refused := f.gate.Address(ctx, ip, me)
	if refused.Allowed || refused.Tier != policy.TierGlobal {
		t.Fatalf("address over global: %+v", refused)
	}
	other := policy.Units{Global: 1, Protected: 1, UserID: "u2"}
	if v := f.gate.Caller(ctx, ip, other, refused); v.Allowed || v.Tier != policy.TierGlobal {
		t.Fatalf("caller after a refused address: %+v, want the address's refusal", v)
	}
	if v := f.gate.Check(ctx, netip.MustParseAddr("192.0.2.21"), other); !v.Allowed || v.Tier != policy.TierProtected || v.Remaining != 1 {
		t.Fatalf("u2 from another address: %+v, want its first protected unit charged only now", v)
	}
}
