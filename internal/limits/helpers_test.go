package limits

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/redis/go-redis/v9"
)

// testStart is 15s into a minute so 1-minute windows reset 45s later.
var testStart = time.Date(2030, 1, 1, 12, 0, 15, 0, time.UTC)

func newFakeClock() *testsupport.Clock { return testsupport.NewClock(testStart) }

// backendKind creates a fresh, isolated backend of one kind on a clock.
type backendKind struct {
	name string
	// require skips the test, with the reason, when this run cannot
	// reach the backend; nil when it always can.
	require func(tb testing.TB)
	make    func(tb testing.TB, policy AbusePolicy, now func() time.Time) Backend
}

// backendKinds returns every backend; the Redis one needs
// HERALD_TEST_REDIS_URL (its tests skip without it).
func backendKinds() []backendKind {
	return []backendKind{{
		name: "memory",
		make: func(tb testing.TB, policy AbusePolicy, now func() time.Time) Backend {
			m := NewMemory(policy, now)
			tb.Cleanup(func() { _ = m.Close() })
			return m
		},
	}, {
		name:    "redis",
		require: requireRedis,
		make: func(tb testing.TB, policy AbusePolicy, now func() time.Time) Backend {
			c := testRedisClient(tb)
			return NewRedis(c, policy, testPrefix(tb, c), now)
		},
	}}
}

// requireRedis skips the test, saying why, unless HERALD_TEST_REDIS_URL is
// set.
func requireRedis(tb testing.TB) {
	tb.Helper()
	if os.Getenv("HERALD_TEST_REDIS_URL") == "" {
		tb.Skip("Redis not tested: HERALD_TEST_REDIS_URL is not set")
	}
}

// testRedisClient is a client of HERALD_TEST_REDIS_URL; it skips the test
// without the variable (requireRedis).
func testRedisClient(tb testing.TB) *redis.Client {
	tb.Helper()
	requireRedis(tb)
	opt, err := redis.ParseURL(os.Getenv("HERALD_TEST_REDIS_URL"))
	if err != nil {
		tb.Fatalf("parse HERALD_TEST_REDIS_URL: %v", err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		tb.Fatalf("redis ping: %v", err)
	}
	return c
}

// testPrefix returns a unique key prefix and deletes its keys afterwards.
func testPrefix(tb testing.TB, c *redis.Client) string {
	tb.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "herald-test:limits:" + hex.EncodeToString(b[:])
	tb.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+":*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			tb.Errorf("cleanup %s: %v", prefix, err)
		}
	})
	return prefix
}

func tier(name string, limit int, window time.Duration) Tier {
	return Tier{Name: name, Limit: limit, Window: window}
}

func check(t Tier, subject string, cost int) Check {
	return Check{Tier: t, Subject: subject, Cost: cost}
}

func mustAllow(tb testing.TB, b Backend, abuseKey string, checks ...Check) Decision {
	tb.Helper()
	d, err := b.Allow(context.Background(), abuseKey, checks)
	if err != nil {
		tb.Fatalf("Allow: %v", err)
	}
	return d
}
