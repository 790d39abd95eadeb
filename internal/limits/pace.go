package limits

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/sleep"
	"github.com/redis/go-redis/v9"
)

// Pace spaces events at a rate, in process: a token bucket in its GCRA
// form, holding a tenth of a second's worth (at least one). Callers beyond
// the rate wait their turn, in order, or until their context ends.
type Pace struct {
	mu        sync.Mutex
	tat       time.Time // theoretical arrival time of the next event
	interval  time.Duration
	tolerance time.Duration
	now       func() time.Time
}

// NewPace returns a pace of perSecond events (> 0).
func NewPace(perSecond float64) *Pace {
	interval, tolerance := paceShape(perSecond)
	return &Pace{interval: interval, tolerance: tolerance, now: time.Now}
}

// paceShape is the spacing of a rate and the burst it allows: a tenth of
// a second's worth, at least one.
func paceShape(perSecond float64) (interval, tolerance time.Duration) {
	interval = time.Duration(float64(time.Second) / perSecond)
	burst := max(int(perSecond/10), 1)
	return interval, interval * time.Duration(burst-1)
}

// reserve books the next event and says how long to wait for it.
func (p *Pace) reserve(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tat.Before(now) {
		p.tat = now
	}
	wait := p.tat.Add(-p.tolerance).Sub(now)
	p.tat = p.tat.Add(p.interval)
	return max(wait, 0)
}

// Wait blocks until the caller's turn.
func (p *Pace) Wait(ctx context.Context) error {
	return sleep.For(ctx, p.reserve(p.now()))
}

// paceScript books n events of one shared bucket on Redis's clock and
// returns how long, in microseconds, to wait for the first; the others
// follow one interval apart.
// KEYS: bucket. ARGV: interval µs, tolerance µs, n.
const paceScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local wait = tat - tolerance - now
if wait < 0 then wait = 0 end
local nxt = tat + tonumber(ARGV[3]) * interval
redis.call('SET', KEYS[1], string.format('%d', nxt), 'PX', math.floor((nxt - now) / 1000) + 1000)
return wait
`

var paceLua = redis.NewScript(paceScript)

// SharedPace is a Pace that every process using the same Redis key shares,
// so that N replicas together keep to the rate. Each process books events
// a fiftieth of a second's worth at a time and spaces them itself; while
// Redis cannot be reached it paces alone, at the full rate.
type SharedPace struct {
	client    redis.UniversalClient
	key       string
	interval  time.Duration
	tolerance time.Duration
	chunk     int
	local     *Pace
	outage    outage

	mu   sync.Mutex
	next time.Time // when the next booked event may go
	left int       // booked events not yet handed out
}

// NewSharedPace returns a pace of perSecond events (> 0) shared through
// Redis under key.
func NewSharedPace(client redis.UniversalClient, key string, perSecond float64, logger *slog.Logger) *SharedPace {
	interval, tolerance := paceShape(perSecond)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &SharedPace{
		client: client, key: key, interval: interval, tolerance: tolerance,
		chunk: max(int(math.Round(perSecond/50)), 1), local: NewPace(perSecond),
		outage: outage{logger: logger, what: "shared send rate unavailable: Redis unreachable, pacing this replica alone"},
	}
}

// Wait blocks until the caller's turn in the shared bucket.
func (p *SharedPace) Wait(ctx context.Context) error {
	if p.outage.skipping() {
		return p.local.Wait(ctx)
	}
	at, err := p.book(ctx)
	if errors.Is(err, errSkippingRedis) {
		return p.local.Wait(ctx)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.outage.failed(ctx, err, "key", p.key)
		return p.local.Wait(ctx)
	}
	return sleep.For(ctx, time.Until(at))
}

// errSkippingRedis is book's answer to a caller that waited for the lock
// while another found Redis unreachable.
var errSkippingRedis = errors.New("limits: Redis skipped after a failure")

// book takes the caller's turn: the next of the events this process has
// booked, booking another chunk in Redis when none is left.
func (p *SharedPace) book(ctx context.Context) (time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.left == 0 {
		// Asked again under the lock: the callers queued behind one that
		// found Redis silent would otherwise each wait out its timeout in
		// turn (a send pool's worth of half seconds), long enough to fail
		// their sends.
		if p.outage.skipping() {
			return time.Time{}, errSkippingRedis
		}
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		wait, err := paceLua.Run(rctx, p.client, []string{p.key}, p.interval.Microseconds(), p.tolerance.Microseconds(), p.chunk).Int64()
		cancel()
		if err != nil {
			return time.Time{}, err
		}
		p.next, p.left = time.Now().Add(time.Duration(wait)*time.Microsecond), p.chunk
	}
	at := p.next
	p.next, p.left = p.next.Add(p.interval), p.left-1
	return at, nil
}
