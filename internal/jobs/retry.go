package jobs

import (
	"math/rand/v2"
	"time"

	"github.com/riverqueue/river/rivertype"
)

// Backoff is the retry policy of background jobs: Base doubled per attempt,
// capped at Max, with ±10% jitter so retries of one outage do not arrive
// together. River's default (attempt⁴ seconds) waits hours by the tenth try,
// far too long for a verification email.
type Backoff struct {
	Base, Max time.Duration
}

// NextRetry implements river.ClientRetryPolicy.
func (b Backoff) NextRetry(job *rivertype.JobRow) time.Time {
	d := b.Base
	for i := 1; i < job.Attempt && d < b.Max; i++ {
		d *= 2
	}
	if d > b.Max {
		d = b.Max
	}
	jitter := time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
	return time.Now().UTC().Add(d + jitter)
}
