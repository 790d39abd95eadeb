package limits

import (
	"context"
	"math"
	"testing"
	"time"
)

// benchChecks is a typical authenticated API-key request: three tiers.
func benchChecks() []Check {
	return []Check{
		check(tier("global", math.MaxInt32, time.Minute), "192.0.2.1", 1),
		check(tier("protected", math.MaxInt32, time.Minute), "user-1", 1),
		check(tier("apikey", math.MaxInt32, time.Minute), "key-1", 1),
	}
}

func benchAllow(b *testing.B, backend Backend) {
	checks := benchChecks()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		d, err := backend.Allow(ctx, "192.0.2.1", checks)
		if err != nil || !d.Allowed {
			b.Fatalf("Allow: %+v, %v", d, err)
		}
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	m := NewMemory(DefaultAbusePolicy(), time.Now)
	defer m.Close()
	benchAllow(b, m)
}

func BenchmarkRedisAllow(b *testing.B) {
	c := testRedisClient(b)
	benchAllow(b, NewRedis(c, DefaultAbusePolicy(), testPrefix(b, c), time.Now))
}
