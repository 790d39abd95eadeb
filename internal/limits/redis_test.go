package limits

import (
	"context"
	"testing"
	"time"
)

// Two instances (two clients, same prefix) must share one budget.
func TestRedisSharedAcrossClients(t *testing.T) {
	c1, c2 := testRedisClient(t), testRedisClient(t)
	prefix := testPrefix(t, c1)
	clk := newFakeClock()
	b1 := NewRedis(c1, AbusePolicy{}, prefix, clk.Now)
	b2 := NewRedis(c2, AbusePolicy{}, prefix, clk.Now)
	global := tier("global", 10, time.Minute)

	for i := range 10 {
		b := b1
		if i%2 == 1 {
			b = b2
		}
		if d := mustAllow(t, b, "", check(global, "192.0.2.1", 1)); !d.Allowed || d.Remaining != 9-i {
			t.Fatalf("request %d: %+v, want remaining %d", i, d, 9-i)
		}
	}
	for _, b := range []*Redis{b1, b2} {
		if d := mustAllow(t, b, "", check(global, "192.0.2.1", 1)); d.Allowed {
			t.Fatalf("limit not shared: %+v", d)
		}
	}
}

// Every key the script writes must expire so Redis memory stays bounded.
func TestRedisKeysExpire(t *testing.T) {
	c := testRedisClient(t)
	prefix := testPrefix(t, c)
	b := NewRedis(c, AbusePolicy{RefusalsBeforeBlock: 1}, prefix, newFakeClock().Now)
	lim := tier("auth", 1, time.Minute)
	for range 3 { // allowed, refused, refused -> blocked
		mustAllow(t, b, "192.0.2.1", check(lim, "192.0.2.1", 1), check(tier("global", 100, time.Minute), "192.0.2.1", 1))
	}
	if d := mustAllow(t, b, "192.0.2.1"); !d.Blocked {
		t.Fatalf("not blocked: %+v", d)
	}

	ctx := context.Background()
	var keys []string
	iter := c.Scan(ctx, 0, prefix+":*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	// Two tier counters, block marker and block log (refusal log was reset).
	if len(keys) != 4 {
		t.Fatalf("keys = %v, want 4", keys)
	}
	for _, k := range keys {
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl <= 0 || ttl > 24*time.Hour {
			t.Errorf("%s: PTTL %v, want in (0, 24h]", k, ttl)
		}
	}
}
