package captcha

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// Failures counts failed logins per address for a window, shared or not.
// Count is the failures in the current window; Failed adds one (starting
// a window when none runs); Forget ends the window.
type Failures interface {
	Count(ctx context.Context, key string) (int, error)
	Failed(ctx context.Context, key string, window time.Duration) error
	Forget(ctx context.Context, key string) error
}

// RedisFailures shares the count between replicas: one key per address
// (its SHA-256, so no address is stored), expiring with its window.
type RedisFailures struct {
	Client *redis.Client
	Prefix string // e.g. "herald:captcha:"
}

func (r RedisFailures) key(k string) string {
	sum := sha256.Sum256([]byte(k))
	return r.Prefix + "login:" + hex.EncodeToString(sum[:])
}

// failedScript increments the count and starts the window's expiry with
// the first failure only, so later failures do not extend it.
var failedScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 or redis.call('PTTL', KEYS[1]) < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return n`)

// Count implements Failures.
func (r RedisFailures) Count(ctx context.Context, key string) (int, error) {
	n, err := r.Client.Get(ctx, r.key(key)).Int()
	if err == redis.Nil {
		return 0, nil
	}
	return n, err
}

// Failed implements Failures.
func (r RedisFailures) Failed(ctx context.Context, key string, window time.Duration) error {
	return failedScript.Run(ctx, r.Client, []string{r.key(key)}, window.Milliseconds()).Err()
}

// Forget implements Failures.
func (r RedisFailures) Forget(ctx context.Context, key string) error {
	return r.Client.Del(ctx, r.key(key)).Err()
}
