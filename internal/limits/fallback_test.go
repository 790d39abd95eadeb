package limits

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

const degradedMsg = "rate limit backend unavailable"

func TestFallbackRedisUnreachable(t *testing.T) {
	// Nothing listens on port 1: every dial is refused at once.
	client := redis.NewClient(&redis.Options{
		Addr:          "127.0.0.1:1",
		MaxRetries:    -1,
		DialerRetries: 1,
		DialTimeout:   time.Second,
	})
	defer client.Close()
	clk := newFakeClock()
	mem := NewMemory(AbusePolicy{}, clk.Now)
	defer mem.Close()
	var logs testsupport.Buffer
	f := NewFallback(NewRedis(client, AbusePolicy{}, "herald-test", clk.Now), mem, slog.New(slog.NewTextHandler(&logs, nil)), clk.Now)

	if f.Degraded() {
		t.Fatal("degraded before any call")
	}
	auth := tier("auth", 10, time.Minute)
	for i := range 50 {
		if i == 20 {
			clk.Advance(2 * time.Second) // lets a probe hit Redis again
		}
		d := mustAllow(t, f, "", check(auth, "192.0.2.1", 1))
		if wantAllowed := i < 10; d.Allowed != wantAllowed || d.Tier != "auth" {
			t.Fatalf("call %d: %+v, want allowed=%v from memory", i, d, wantAllowed)
		}
	}
	if !f.Degraded() {
		t.Fatal("Degraded() = false while Redis is down")
	}
	if n := strings.Count(logs.String(), degradedMsg); n != 1 {
		t.Fatalf("%d degraded log lines within a minute, want 1:\n%s", n, logs.String())
	}

	clk.Advance(time.Minute)
	mustAllow(t, f, "192.0.2.1", check(auth, "192.0.2.1", 1))
	if n := strings.Count(logs.String(), degradedMsg); n != 2 {
		t.Fatalf("%d degraded log lines after a minute, want 2", n)
	}
}

// flaky is a primary whose health the test controls.
type flaky struct {
	down  atomic.Bool
	calls atomic.Int64
}

func (f *flaky) Allow(context.Context, string, []Check) (Decision, error) {
	f.calls.Add(1)
	if f.down.Load() {
		return Decision{}, errors.New("connection refused")
	}
	return Decision{Allowed: true, Tier: "primary"}, nil
}

func TestFallbackRecovers(t *testing.T) {
	clk := newFakeClock()
	primary := &flaky{}
	mem := NewMemory(AbusePolicy{}, clk.Now)
	defer mem.Close()
	var logs testsupport.Buffer
	f := NewFallback(primary, mem, slog.New(slog.NewTextHandler(&logs, nil)), clk.Now)
	req := check(tier("fallback", 100, time.Minute), "ip", 1)

	steps := []struct {
		name      string
		advance   time.Duration
		down      bool
		wantTier  string
		wantCalls int64 // primary calls so far
		wantDegr  bool
	}{
		{"healthy", 0, false, "primary", 1, false},
		{"outage detected", 0, true, "fallback", 2, true},
		{"primary skipped between probes", 500 * time.Millisecond, true, "fallback", 2, true},
		{"failed probe", 500 * time.Millisecond, true, "fallback", 3, true},
		{"skipped again", 0, false, "fallback", 3, true},
		{"successful probe", time.Second, false, "primary", 4, false},
		{"back to primary", 0, false, "primary", 5, false},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		primary.down.Store(s.down)
		d := mustAllow(t, f, "ip", req)
		if d.Tier != s.wantTier || primary.calls.Load() != s.wantCalls || f.Degraded() != s.wantDegr {
			t.Fatalf("%s: tier %q, primary calls %d, degraded %v; want %q, %d, %v",
				s.name, d.Tier, primary.calls.Load(), f.Degraded(), s.wantTier, s.wantCalls, s.wantDegr)
		}
	}
	if n := strings.Count(logs.String(), "rate limit backend recovered"); n != 1 {
		t.Fatalf("%d recovery log lines, want 1", n)
	}
}

func TestFallbackInvalidCheckIsNotAnOutage(t *testing.T) {
	mem := NewMemory(AbusePolicy{}, nil)
	defer mem.Close()
	primary := NewMemory(AbusePolicy{}, nil)
	defer primary.Close()
	f := NewFallback(primary, mem, slog.New(slog.DiscardHandler), nil)
	_, err := f.Allow(context.Background(), "", []Check{{Tier: tier("bad", -1, time.Minute)}})
	if !errors.Is(err, ErrInvalidCheck) {
		t.Fatalf("err = %v, want ErrInvalidCheck", err)
	}
	if f.Degraded() {
		t.Fatal("invalid check marked the backend degraded")
	}
}
