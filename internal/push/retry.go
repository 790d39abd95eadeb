package push

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/herald-vpn/herald/internal/sleep"
	"net/http"
	"strconv"
	"strings"
)

// RetryPolicy bounds SendWithRetry. Zero fields take the defaults of
// DefaultRetryPolicy (except Jitter, where zero means no jitter).
type RetryPolicy struct {
	// Attempts is the total number of sends, including the first (default 3).
	Attempts int
	// BaseBackoff is the wait before the first retry; it doubles on each
	// further retry (default 500ms).
	BaseBackoff time.Duration
	// MaxBackoff caps the exponential backoff. A server Retry-After longer
	// than MaxBackoff is not waited for in-process: SendWithRetry returns the
	// Retryable error at once so the caller can reschedule (Classify returns
	// the delay). Default 30s.
	MaxBackoff time.Duration
	// Jitter in [0,1] randomly shortens each backoff by up to that fraction,
	// so a broadcast's failures do not retry in lockstep. Retry-After waits
	// are never shortened.
	Jitter float64
	// Sleep waits for d or until ctx is done; nil uses a timer. Tests inject
	// a recorder here instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
}

// DefaultRetryPolicy is a sensible policy for interactive sends.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{Attempts: 3, BaseBackoff: 500 * time.Millisecond, MaxBackoff: 30 * time.Second, Jitter: 0.2}
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	d := DefaultRetryPolicy()
	if p.Attempts <= 0 {
		p.Attempts = d.Attempts
	}
	if p.BaseBackoff <= 0 {
		p.BaseBackoff = d.BaseBackoff
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	p.Jitter = min(max(p.Jitter, 0), 1)
	if p.Sleep == nil {
		p.Sleep = sleep.For
	}
	return p
}

// backoff returns the wait after the given (1-based) failed attempt.
func (p RetryPolicy) backoff(attempt int) time.Duration {
	d := p.BaseBackoff
	for i := 1; i < attempt && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	if p.Jitter > 0 {
		d -= time.Duration(float64(d) * p.Jitter * rand.Float64())
	}
	return d
}

// SendWithRetry sends n via p, retrying only Retryable outcomes up to
// policy.Attempts times. It waits max(backoff, Retry-After) between attempts
// and stops early when ctx is done. DeadToken, Fatal and Other return at
// once. The returned error wraps the last provider error, so Classify still
// works on it.
func SendWithRetry(ctx context.Context, p Provider, t Target, n Notification, policy RetryPolicy) error {
	policy = policy.withDefaults()
	for attempt := 1; ; attempt++ {
		err := p.Send(ctx, t, n)
		kind, retryAfter := Classify(err)
		if kind != Retryable {
			return err
		}
		if attempt >= policy.Attempts {
			return fmt.Errorf("push: giving up after %d attempts: %w", attempt, err)
		}
		if retryAfter > policy.MaxBackoff {
			return fmt.Errorf("push: retry-after %s exceeds max backoff %s: %w", retryAfter, policy.MaxBackoff, err)
		}
		wait := max(policy.backoff(attempt), retryAfter)
		if serr := policy.Sleep(ctx, wait); serr != nil {
			return fmt.Errorf("push: retry wait interrupted after %d attempts: %w; last error: %w", attempt, serr, err)
		}
	}
}

// ParseRetryAfter reads a Retry-After header: delta-seconds or an HTTP
// date (RFC 9110 §10.2.3), as a wait from now; 0 for none, a past date, or
// anything else.
func ParseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		return time.Duration(max(s, 0)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
