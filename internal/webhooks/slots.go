package webhooks

import "time"

// Slots are the rules that keep one endpoint from delaying the others.
//
// An endpoint has at most Concurrency deliveries in flight, on every
// replica together: a delivery holds a slot, a row in the database taken
// under the endpoint's row lock, while it sends. A delivery that finds no
// slot free is parked (a row, oldest first) and its job ends, so waiting
// holds no worker; each delivery that ends hands its slot to the oldest
// parked one, as a new job that already holds the slot. A slot whose
// holder died lapses after AttemptBound (River runs the holder's job again
// by then).
//
// The circuit breaker: Threshold failed attempts in a row open it, and
// the endpoint's deliveries all wait (parked) for the cooldown, the n-th
// wait of Cooldowns for the n-th opening in a row (the last repeating).
// Then it is half-open: one delivery, the oldest parked, is tried. Its
// success closes the breaker (and the parked deliveries go out,
// Concurrency at a time); its failure opens it again, for the next
// cooldown. A success at any time closes it.
type Slots struct {
	Concurrency int
	Threshold   int
	Cooldowns   []time.Duration
	// LeaseTTL is how long a slot is held without a release.
	LeaseTTL time.Duration
	// ReserveTTL is how long a slot handed to a parked delivery waits for
	// its job to start before another delivery may take it.
	ReserveTTL time.Duration
}

// Default slot rules.
const (
	DefaultConcurrency = 2
	BreakerThreshold   = 5
)

// Breaker is an endpoint's circuit breaker, as the store keeps it.
type Breaker struct {
	// Failures are the failed attempts since the last success.
	Failures int
	// Opens counts the openings since the last success.
	Opens int
	// Until is when an open breaker becomes half-open.
	Until *time.Time
}

// Open reports whether the breaker holds every delivery back at now.
func (s Slots) Open(b Breaker, now time.Time) bool {
	return b.Failures >= s.Threshold && b.Until != nil && now.Before(*b.Until)
}

// Limit is how many deliveries may be in flight at now: Concurrency when
// the breaker is closed, none when it is open, one when half-open.
func (s Slots) Limit(b Breaker, now time.Time) int {
	switch {
	case b.Failures < s.Threshold:
		return s.Concurrency
	case s.Open(b, now):
		return 0
	}
	return 1
}

// After is the breaker after an attempt at now.
func (s Slots) After(b Breaker, succeeded bool, now time.Time) Breaker {
	if succeeded {
		return Breaker{}
	}
	b.Failures++
	if b.Failures >= s.Threshold && !s.Open(b, now) {
		until := now.Add(s.cooldown(b.Opens))
		b.Until, b.Opens = &until, b.Opens+1
	}
	return b
}

func (s Slots) cooldown(opens int) time.Duration {
	if len(s.Cooldowns) == 0 {
		return 30 * time.Second
	}
	return s.Cooldowns[min(opens, len(s.Cooldowns)-1)]
}

// SlotRequest is a delivery asking for a slot: the job JobID delivering
// EventID to EndpointID, after Attempts earlier attempts.
type SlotRequest struct {
	EndpointID, EventID string
	JobID               int64
	Attempts            int
}
