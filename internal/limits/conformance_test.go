package limits

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestConformance runs the same behaviour suite against every backend so
// Memory and Redis are interchangeable.
func TestConformance(t *testing.T) {
	for _, k := range backendKinds() {
		t.Run(k.name, func(t *testing.T) {
			if k.require != nil {
				k.require(t)
			}
			t.Run("ExhaustThenRefuse", func(t *testing.T) { testExhaustThenRefuse(t, k) })
			t.Run("OneRequestChargesEveryTier", func(t *testing.T) { testChargesEveryTier(t, k) })
			t.Run("RefusalChargesNothing", func(t *testing.T) { testRefusalChargesNothing(t, k) })
			t.Run("Cost", func(t *testing.T) { testCost(t, k) })
			t.Run("DisabledTierSkipped", func(t *testing.T) { testDisabledTier(t, k) })
			t.Run("InvalidCheck", func(t *testing.T) { testInvalidCheck(t, k) })
			t.Run("ResetAfterWindow", func(t *testing.T) { testResetAfterWindow(t, k) })
			t.Run("ClosestToExhaustion", func(t *testing.T) { testClosestToExhaustion(t, k) })
			t.Run("Block", func(t *testing.T) { testBlock(t, k) })
			t.Run("RefusalWindowSlides", func(t *testing.T) { testRefusalWindowSlides(t, k) })
			t.Run("BanDue", func(t *testing.T) { testBanDue(t, k) })
			t.Run("Concurrent", func(t *testing.T) { testConcurrent(t, k) })
		})
	}
}

func testExhaustThenRefuse(t *testing.T, k backendKind) {
	clk := newFakeClock()
	b := k.make(t, AbusePolicy{}, clk.Now)
	auth := tier("auth", 10, time.Minute)
	reset := testStart.Truncate(time.Minute).Add(time.Minute)

	for i := range 10 {
		d := mustAllow(t, b, "", check(auth, "192.0.2.1", 1))
		want := Decision{Allowed: true, Tier: "auth", Limit: 10, Remaining: 9 - i, Window: time.Minute, Reset: reset}
		assertDecision(t, d, want)
	}
	d := mustAllow(t, b, "", check(auth, "192.0.2.1", 1))
	assertDecision(t, d, Decision{Tier: "auth", Limit: 10, Window: time.Minute, Reset: reset, RetryAfter: 45 * time.Second})

	// Partial seconds round up, and the last instant still says 1s.
	clk.Advance(14*time.Second + 300*time.Millisecond) // 30.7s left
	if d := mustAllow(t, b, "", check(auth, "192.0.2.1", 1)); d.RetryAfter != 31*time.Second {
		t.Fatalf("RetryAfter = %v, want 31s", d.RetryAfter)
	}
	clk.Advance(30*time.Second + 699*time.Millisecond) // 1ms left
	if d := mustAllow(t, b, "", check(auth, "192.0.2.1", 1)); d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("got %+v, want refused with RetryAfter 1s", d)
	}
	// Another subject has its own budget.
	if d := mustAllow(t, b, "", check(auth, "192.0.2.2", 1)); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("other subject: %+v", d)
	}
}

func testChargesEveryTier(t *testing.T, k backendKind) {
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	global := tier("global", 5, time.Minute)
	protected := tier("protected", 4, time.Minute)
	both := []Check{check(global, "192.0.2.1", 1), check(protected, "user-1", 1)}

	mustAllow(t, b, "", both...)
	mustAllow(t, b, "", both...)
	if d := mustAllow(t, b, "", check(global, "192.0.2.1", 1)); d.Remaining != 2 {
		t.Fatalf("global remaining = %d, want 2 (charged by both requests)", d.Remaining)
	}
	if d := mustAllow(t, b, "", check(protected, "user-1", 1)); d.Remaining != 1 {
		t.Fatalf("protected remaining = %d, want 1 (charged by both requests)", d.Remaining)
	}
}

func testRefusalChargesNothing(t *testing.T, k backendKind) {
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	global := tier("global", 10, time.Minute)
	auth := tier("auth", 1, time.Minute)
	apikey := tier("apikey", 10, time.Minute)
	req := []Check{check(global, "192.0.2.1", 1), check(auth, "192.0.2.1", 1), check(apikey, "key-1", 1)}

	if d := mustAllow(t, b, "", req...); !d.Allowed {
		t.Fatalf("first request refused: %+v", d)
	}
	for range 5 {
		if d := mustAllow(t, b, "", req...); d.Allowed || d.Tier != "auth" {
			t.Fatalf("want refusal by auth, got %+v", d)
		}
	}
	for _, c := range []Check{req[0], req[2]} {
		if d := mustAllow(t, b, "", c); d.Remaining != 8 {
			t.Fatalf("%s remaining = %d, want 8 (only the admitted requests count)", c.Tier.Name, d.Remaining)
		}
	}
}

func testCost(t *testing.T, k backendKind) {
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	gql := tier("protected", 10, time.Minute)
	steps := []struct {
		cost          int
		wantAllowed   bool
		wantRemaining int
	}{
		{cost: 4, wantAllowed: true, wantRemaining: 6},
		{cost: 4, wantAllowed: true, wantRemaining: 2},
		{cost: 3, wantAllowed: false, wantRemaining: 2}, // refused whole, nothing charged
		{cost: 0, wantAllowed: true, wantRemaining: 1},  // zero cost counts as one
		{cost: 1, wantAllowed: true, wantRemaining: 0},
		{cost: 1, wantAllowed: false, wantRemaining: 0},
	}
	for i, s := range steps {
		d := mustAllow(t, b, "", check(gql, "user-1", s.cost))
		if d.Allowed != s.wantAllowed || d.Remaining != s.wantRemaining {
			t.Fatalf("step %d (cost %d): allowed=%v remaining=%d, want %v %d", i, s.cost, d.Allowed, d.Remaining, s.wantAllowed, s.wantRemaining)
		}
	}
	// A cost above the limit can never fit.
	if d := mustAllow(t, b, "", check(tier("big", 5, time.Minute), "user-1", 6)); d.Allowed {
		t.Fatalf("cost above limit allowed: %+v", d)
	}
}

func testDisabledTier(t *testing.T, k backendKind) {
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	off := tier("admin", 0, time.Minute)
	on := tier("global", 5, time.Minute)
	for range 3 {
		if d := mustAllow(t, b, "", check(off, "admin-1", 1)); !d.Allowed || d.Tier != "" {
			t.Fatalf("disabled tier alone: %+v, want allowed with no tier", d)
		}
	}
	if d := mustAllow(t, b, "", check(off, "admin-1", 1), check(on, "192.0.2.1", 1)); d.Tier != "global" || d.Remaining != 4 {
		t.Fatalf("got %+v, want global with 4 remaining", d)
	}
	// Even a disabled tier with a zero window is fine: it is never evaluated.
	if d := mustAllow(t, b, "", Check{Tier: Tier{Name: "x"}}); !d.Allowed {
		t.Fatalf("zero tier: %+v", d)
	}
}

func testInvalidCheck(t *testing.T, k backendKind) {
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	for _, c := range []Check{
		{Tier: tier("neg", -1, time.Minute)},
		{Tier: tier("nowindow", 5, 0)},
		{Tier: tier("", 5, time.Minute)},
	} {
		if _, err := b.Allow(context.Background(), "", []Check{c}); !errors.Is(err, ErrInvalidCheck) {
			t.Errorf("%+v: err = %v, want ErrInvalidCheck", c.Tier, err)
		}
	}
}

func testResetAfterWindow(t *testing.T, k backendKind) {
	clk := newFakeClock()
	b := k.make(t, AbusePolicy{}, clk.Now)
	auth := tier("auth", 2, time.Minute)
	mustAllow(t, b, "", check(auth, "192.0.2.1", 1))
	mustAllow(t, b, "", check(auth, "192.0.2.1", 1))

	clk.Advance(45*time.Second - time.Millisecond) // last ms of the window
	if d := mustAllow(t, b, "", check(auth, "192.0.2.1", 1)); d.Allowed {
		t.Fatalf("allowed before the window ended: %+v", d)
	}
	clk.Advance(time.Millisecond)
	d := mustAllow(t, b, "", check(auth, "192.0.2.1", 1))
	nextReset := testStart.Truncate(time.Minute).Add(2 * time.Minute)
	assertDecision(t, d, Decision{Allowed: true, Tier: "auth", Limit: 2, Remaining: 1, Window: time.Minute, Reset: nextReset})
}

func testClosestToExhaustion(t *testing.T, k backendKind) {
	global := tier("global", 100, time.Minute)
	auth := tier("auth", 10, time.Minute)
	protected := tier("protected", 300, time.Minute)
	hourly := tier("hourly", 10, time.Hour)
	cases := []struct {
		name          string
		checks        []Check
		wantTier      string
		wantRemaining int
	}{
		{"smallest limit", []Check{check(global, "ip", 1), check(auth, "ip", 1), check(protected, "u", 1)}, "auth", 9},
		{"cost changes the order", []Check{check(global, "ip", 95), check(auth, "ip", 1)}, "global", 5},
		{"tie goes to the longer window", []Check{check(auth, "ip", 1), check(hourly, "ip", 1)}, "hourly", 9},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := k.make(t, AbusePolicy{}, newFakeClock().Now)
			d := mustAllow(t, b, "", tc.checks...)
			if !d.Allowed || d.Tier != tc.wantTier || d.Remaining != tc.wantRemaining {
				t.Fatalf("got %+v, want %s with %d remaining", d, tc.wantTier, tc.wantRemaining)
			}
		})
	}
	// When several tiers refuse, the one that frees up last is reported.
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	minute, hour := tier("m", 1, time.Minute), tier("h", 1, time.Hour)
	mustAllow(t, b, "", check(minute, "ip", 1), check(hour, "ip", 1))
	d := mustAllow(t, b, "", check(minute, "ip", 1), check(hour, "ip", 1))
	if d.Allowed || d.Tier != "h" || d.RetryAfter != time.Hour-15*time.Second {
		t.Fatalf("got %+v, want refusal by h with RetryAfter 59m45s", d)
	}
}

// refuseUntilBlocked exhausts a 1-per-minute tier for ip and sends refused
// requests until ip is blocked, returning the blocking decision and the
// number of tier refusals it took.
func refuseUntilBlocked(t *testing.T, b Backend, ip string) (Decision, int) {
	t.Helper()
	lim := tier("auth", 1, time.Minute)
	mustAllow(t, b, ip, check(lim, ip, 1))
	for n := 0; n < 1000; n++ {
		d := mustAllow(t, b, ip, check(lim, ip, 1))
		if d.Blocked {
			return d, n
		}
		if d.Allowed || d.Tier != "auth" {
			t.Fatalf("request %d: %+v, want refusal by auth", n, d)
		}
	}
	t.Fatal("never blocked")
	return Decision{}, 0
}

func testBlock(t *testing.T, k backendKind) {
	clk := newFakeClock()
	b := k.make(t, DefaultAbusePolicy(), clk.Now)
	const ip = "192.0.2.7"

	d, refusals := refuseUntilBlocked(t, b, ip)
	if refusals != 20 {
		t.Fatalf("blocked after %d plain refusals, want 20 (the 21st blocks)", refusals)
	}
	blockEnd := testStart.Add(15 * time.Minute)
	assertDecision(t, d, Decision{Tier: TierBlocked, Window: 15 * time.Minute, Reset: blockEnd, RetryAfter: 15 * time.Minute, Blocked: true})

	// Blocked for every tier, even ones with budget left.
	clk.Advance(5*time.Minute + 500*time.Millisecond)
	d = mustAllow(t, b, ip, check(tier("global", 100, time.Minute), ip, 1))
	assertDecision(t, d, Decision{Tier: TierBlocked, Window: 15 * time.Minute, Reset: blockEnd, RetryAfter: 10 * time.Minute, Blocked: true})

	// Other IPs and requests without abuse tracking are unaffected.
	if d := mustAllow(t, b, "192.0.2.8", check(tier("global", 100, time.Minute), "192.0.2.8", 1)); !d.Allowed {
		t.Fatalf("other ip: %+v", d)
	}
	if d := mustAllow(t, b, "", check(tier("global", 100, time.Minute), ip, 1)); !d.Allowed {
		t.Fatalf("no abuse key: %+v", d)
	}

	clk.Advance(10*time.Minute - 501*time.Millisecond) // 1ms before the end
	if d := mustAllow(t, b, ip); !d.Blocked || d.RetryAfter != time.Second {
		t.Fatalf("1ms before unblock: %+v", d)
	}
	clk.Advance(time.Millisecond)
	if d := mustAllow(t, b, ip, check(tier("global", 100, time.Minute), ip, 1)); !d.Allowed {
		t.Fatalf("after BlockFor: %+v", d)
	}
	// The refusal count restarted with the block.
	if _, n := refuseUntilBlocked(t, b, ip); n != 20 {
		t.Fatalf("second block after %d refusals, want 20", n)
	}
}

func testRefusalWindowSlides(t *testing.T, k backendKind) {
	cases := []struct {
		name        string
		gap         time.Duration // between the first 15 and the next 6 refusals
		wantBlocked bool
	}{
		{"within the window", 10*time.Minute - time.Millisecond, true},
		{"older refusals expired", 10 * time.Minute, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			b := k.make(t, DefaultAbusePolicy(), clk.Now)
			lim := tier("auth", 1, time.Minute)
			refuse := func(n int) (blocked bool) {
				mustAllow(t, b, "ip", check(lim, "ip", 1))
				for range n {
					blocked = mustAllow(t, b, "ip", check(lim, "ip", 1)).Blocked
				}
				return blocked
			}
			if refuse(15) {
				t.Fatal("blocked too early")
			}
			clk.Advance(tc.gap)
			if got := refuse(6); got != tc.wantBlocked {
				t.Fatalf("blocked = %v, want %v", got, tc.wantBlocked)
			}
		})
	}
}

func testBanDue(t *testing.T, k backendKind) {
	// Smaller refusal threshold keeps the Redis variant quick.
	policy := AbusePolicy{RefusalsBeforeBlock: 2, RefusalWindow: time.Minute, BlockFor: 15 * time.Minute, BanAfterBlocks: 3, BanWindow: 24 * time.Hour}
	cases := []struct {
		name    string
		gaps    []time.Duration // before the 2nd, 3rd, ... block
		wantDue []bool          // BanDue of each block
	}{
		{"three blocks in an hour", []time.Duration{15 * time.Minute, 15 * time.Minute}, []bool{false, false, true}},
		{"first block outside the window", []time.Duration{12 * time.Hour, 12 * time.Hour}, []bool{false, false, false}},
		{"third block just inside", []time.Duration{12 * time.Hour, 12*time.Hour - time.Millisecond}, []bool{false, false, true}},
		{"fourth block still due", []time.Duration{time.Hour, time.Hour, time.Hour}, []bool{false, false, true, true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newFakeClock()
			b := k.make(t, policy, clk.Now)
			for i, want := range tc.wantDue {
				if i > 0 {
					clk.Advance(tc.gaps[i-1])
				}
				d, _ := refuseUntilBlocked(t, b, "198.51.100.1")
				if d.BanDue != want {
					t.Fatalf("block %d: BanDue = %v, want %v", i+1, d.BanDue, want)
				}
			}
			// Requests refused because of an existing block never report BanDue.
			if d := mustAllow(t, b, "198.51.100.1"); !d.Blocked || d.BanDue {
				t.Fatalf("while blocked: %+v", d)
			}
		})
	}
}

func testConcurrent(t *testing.T, k backendKind) {
	b := k.make(t, AbusePolicy{}, newFakeClock().Now)
	global := tier("global", 50, time.Minute)
	auth := tier("auth", 200, time.Minute)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 25 {
				d, err := b.Allow(context.Background(), "", []Check{check(global, "ip", 1), check(auth, "ip", 1)})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 50 {
		t.Fatalf("allowed %d of 200 concurrent requests, want exactly 50", got)
	}
	if d := mustAllow(t, b, "", check(auth, "ip", 1)); d.Remaining != 149 {
		t.Fatalf("auth remaining = %d, want 149 (only admitted requests charged)", d.Remaining)
	}
}

func assertDecision(t *testing.T, got, want Decision) {
	t.Helper()
	if !got.Reset.Equal(want.Reset) {
		t.Fatalf("Reset = %v, want %v (decision %+v)", got.Reset, want.Reset, got)
	}
	got.Reset, want.Reset = time.Time{}, time.Time{}
	if got != want {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}
