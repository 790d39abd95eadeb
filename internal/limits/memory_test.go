package limits

import (
	"testing"
	"time"
)

// The janitor must drop finished windows and stale abuse state, but keep
// anything that still affects decisions.
func TestMemorySweep(t *testing.T) {
	clk := newFakeClock()
	m := NewMemory(AbusePolicy{RefusalsBeforeBlock: 1}, clk.Now)
	defer m.Close()
	lim := tier("auth", 1, time.Minute)
	for range 3 {
		mustAllow(t, m, "ip", check(lim, "ip", 1), check(tier("daily", 100, 24*time.Hour), "ip", 1))
	}
	size := func() (int, int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.windows), len(m.abuse)
	}

	clk.Advance(time.Minute) // minute window over, daily window and block remain
	m.sweep()
	if w, a := size(); w != 1 || a != 1 {
		t.Fatalf("after 1m: %d windows, %d abuse entries; want 1, 1", w, a)
	}
	if d := mustAllow(t, m, "ip"); !d.Blocked {
		t.Fatalf("block lost by sweep: %+v", d)
	}

	clk.Advance(24 * time.Hour) // block, ban log and daily window expired
	m.sweep()
	if w, a := size(); w != 0 || a != 0 {
		t.Fatalf("after 24h: %d windows, %d abuse entries; want 0, 0", w, a)
	}
}

func TestMemoryCloseIdempotent(t *testing.T) {
	m := NewMemory(AbusePolicy{}, nil)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if d := mustAllow(t, m, "", check(tier("g", 1, time.Minute), "ip", 1)); !d.Allowed {
		t.Fatalf("Allow after Close: %+v", d)
	}
}
