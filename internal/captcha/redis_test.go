package captcha_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/captcha"
	"github.com/redis/go-redis/v9"
)

func testRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	if os.Getenv("HERALD_TEST_REDIS_URL") == "" {
		t.Skip("Redis not tested: HERALD_TEST_REDIS_URL is not set")
	}
	opt, err := redis.ParseURL(os.Getenv("HERALD_TEST_REDIS_URL"))
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	var b [8]byte
	_, _ = rand.Read(b[:])
	prefix := "herald-test:captcha:" + hex.EncodeToString(b[:]) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			c.Del(ctx, iter.Val())
		}
	})
	return c, prefix
}

// Two replicas sharing Redis count one address's failures together; a
// success on either forgets them; the key expires with the window, which
// later failures do not extend, and does not hold the address.
func TestSharedLoginFailures(t *testing.T) {
	c, prefix := testRedis(t)
	ctx := context.Background()
	shared := captcha.RedisFailures{Client: c, Prefix: prefix}
	replica := func() *captcha.Guard {
		g, err := captcha.New(captcha.Config{Provider: captcha.Turnstile, Secret: "x", LoginFailures: 3, FailureWindow: time.Minute, Shared: shared})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	a, b := replica(), replica()
	const addr = "shared@example.com"
	a.LoginFailed(ctx, addr)
	b.LoginFailed(ctx, addr)
	if a.LoginNeedsCaptcha(ctx, addr) || b.LoginNeedsCaptcha(ctx, addr) {
		t.Fatal("needed after 2 failures")
	}
	a.LoginFailed(ctx, addr)
	if !b.LoginNeedsCaptcha(ctx, addr) {
		t.Fatal("replica b does not see the 3 failures counted on both")
	}
	keys, err := c.Keys(ctx, prefix+"*").Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys %v, %v: want one", keys, err)
	}
	if strings.Contains(keys[0], "shared") {
		t.Fatalf("key %q holds the address", keys[0])
	}
	ttl, err := c.PTTL(ctx, keys[0]).Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("key's expiry %v, %v: want within the window", ttl, err)
	}
	b.LoginSucceeded(ctx, addr)
	if a.LoginNeedsCaptcha(ctx, addr) {
		t.Fatal("still needed on a after a success on b")
	}
}

// failingShared is a shared store that always errs (Redis down).
type failingShared struct{}

func (failingShared) Count(context.Context, string) (int, error) { return 0, errors.New("down") }
func (failingShared) Failed(context.Context, string, time.Duration) error {
	return errors.New("down")
}
func (failingShared) Forget(context.Context, string) error { return errors.New("down") }

// While the shared count errs, each replica counts in its own memory.
func TestSharedLoginFailuresFallBack(t *testing.T) {
	ctx := context.Background()
	g, err := captcha.New(captcha.Config{Provider: captcha.HCaptcha, Secret: "x", LoginFailures: 2, Shared: failingShared{}})
	if err != nil {
		t.Fatal(err)
	}
	g.LoginFailed(ctx, "a@example.com")
	g.LoginFailed(ctx, "a@example.com")
	if !g.LoginNeedsCaptcha(ctx, "a@example.com") {
		t.Fatal("failures not counted in memory while the shared store errs")
	}
}
