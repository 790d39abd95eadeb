// Package limits implements Herald's tiered, fixed-window rate limits with
// abuse blocking, backed by Redis (shared between instances) or by process
// memory (tests, single instance, and fallback when Redis is unreachable).
//
// One request is described by a list of Checks, one per tier that applies.
// A Backend admits the request only if every check fits, and then charges all
// of them; a refused request is charged to no tier. Both backends implement
// the same algorithm and give the same answers for the same inputs.
//
// It also paces Herald's own outgoing sends, so callers wait instead of
// being refused: Pace and SharedPace (a rate with a burst, for push) and
// ChatPace and SharedChatPace (a gap per chat and overall, for Telegram),
// each in-process or shared between instances through Redis.
package limits

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// TierBlocked is the Decision.Tier reported while a client IP is blocked.
const TierBlocked = "blocked"

// ErrInvalidCheck reports a Check that can never be evaluated (programming
// error), as opposed to a backend failure.
var ErrInvalidCheck = errors.New("limits: invalid check")

// Tier is one rate limit: Limit units per fixed Window. Limit 0 disables it.
type Tier struct {
	Name   string
	Limit  int
	Window time.Duration
}

// Check charges Cost units of Tier to Subject (client IP, user id, admin id,
// API key...). Cost <= 0 counts as 1 so the zero value means "one request".
type Check struct {
	Tier    Tier
	Subject string
	Cost    int
}

// Decision is the answer for one request.
type Decision struct {
	Allowed bool
	// Tier is the refusing tier, TierBlocked when the IP is blocked, or the
	// tier closest to exhaustion when allowed ("" if no tier applied).
	Tier      string
	Limit     int
	Remaining int
	// Window is the length of Tier's window (BlockFor when blocked), for the
	// "window" detail of a refusal.
	Window time.Duration
	// Reset is the end of Tier's current window (block end when blocked).
	Reset time.Time
	// RetryAfter is > 0 only when refused: whole seconds, at least 1s.
	RetryAfter time.Duration
	// Blocked is true when refused because the IP is (or just got) blocked.
	Blocked bool
	// BanDue is true when this refusal caused a block that brings the number
	// of blocks within BanWindow to at least BanAfterBlocks.
	BanDue bool
}

// AbusePolicy configures blocking of abusive client IPs. Zero fields take
// the defaults of DefaultAbusePolicy.
type AbusePolicy struct {
	// An IP with more than RefusalsBeforeBlock refusals within
	// RefusalWindow (sliding) is blocked for BlockFor.
	RefusalsBeforeBlock int
	RefusalWindow       time.Duration
	BlockFor            time.Duration
	// A block that is at least the BanAfterBlocks-th within BanWindow
	// (sliding) sets Decision.BanDue.
	BanAfterBlocks int
	BanWindow      time.Duration
}

// DefaultAbusePolicy returns the thresholds from the spec.
func DefaultAbusePolicy() AbusePolicy {
	return AbusePolicy{
		RefusalsBeforeBlock: 20,
		RefusalWindow:       10 * time.Minute,
		BlockFor:            15 * time.Minute,
		BanAfterBlocks:      3,
		BanWindow:           24 * time.Hour,
	}
}

func (p AbusePolicy) withDefaults() AbusePolicy {
	d := DefaultAbusePolicy()
	if p.RefusalsBeforeBlock <= 0 {
		p.RefusalsBeforeBlock = d.RefusalsBeforeBlock
	}
	// Durations below 1ms would vanish in the millisecond arithmetic.
	if p.RefusalWindow < time.Millisecond {
		p.RefusalWindow = d.RefusalWindow
	}
	if p.BlockFor < time.Millisecond {
		p.BlockFor = d.BlockFor
	}
	if p.BanAfterBlocks <= 0 {
		p.BanAfterBlocks = d.BanAfterBlocks
	}
	if p.BanWindow < time.Millisecond {
		p.BanWindow = d.BanWindow
	}
	return p
}

// Backend evaluates requests against tiers.
type Backend interface {
	// Allow checks every check atomically: if all fit, charges all;
	// otherwise charges none. abuseKey is the client IP used for block
	// tracking ("" = no abuse tracking).
	Allow(ctx context.Context, abuseKey string, checks []Check) (Decision, error)
}

// planned is an enabled, validated check with its current window, all in
// Unix milliseconds so both backends compute identical windows.
type planned struct {
	name    string
	subject string
	limit   int64
	cost    int64
	window  int64 // ms
	start   int64 // ms, aligned to window
}

func (p planned) end() int64 { return p.start + p.window }

// maxInline is how many checks are planned without heap allocation.
const maxInline = 8

// buildPlan drops disabled tiers, normalises costs and aligns windows.
func buildPlan(nowMs int64, checks []Check, buf []planned) ([]planned, error) {
	for _, c := range checks {
		if c.Tier.Limit == 0 {
			continue
		}
		if c.Tier.Limit < 0 || c.Tier.Window < time.Millisecond || c.Tier.Name == "" {
			return nil, fmt.Errorf("%w: tier %q limit %d window %s", ErrInvalidCheck, c.Tier.Name, c.Tier.Limit, c.Tier.Window)
		}
		cost := int64(c.Cost)
		if cost <= 0 {
			cost = 1
		}
		w := c.Tier.Window.Milliseconds()
		buf = append(buf, planned{
			name:    c.Tier.Name,
			subject: c.Subject,
			limit:   int64(c.Tier.Limit),
			cost:    cost,
			window:  w,
			start:   nowMs - floorMod(nowMs, w),
		})
	}
	return buf, nil
}

// floorMod keeps windows aligned for pre-1970 clocks too (fake clocks).
func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}

// outcome is what a backend observed atomically; decide turns it into a
// Decision so both backends report identically.
type outcome struct {
	status     int64   // one of the status* constants
	blockUntil int64   // ms, for statusBlocked / statusJustBlocked
	banDue     bool    // for statusJustBlocked
	counts     []int64 // per planned check, before charging
}

// Status codes shared with the Redis script.
const (
	statusAllowed     = 0
	statusRefused     = 1
	statusBlocked     = 2 // IP was already blocked
	statusJustBlocked = 3 // this refusal tipped the IP into a block
)

func decide(nowMs int64, plan []planned, o outcome, policy AbusePolicy) Decision {
	switch o.status {
	case statusBlocked, statusJustBlocked:
		return Decision{
			Tier:       TierBlocked,
			Window:     policy.BlockFor,
			Reset:      time.UnixMilli(o.blockUntil),
			RetryAfter: retryAfter(o.blockUntil - nowMs),
			Blocked:    true,
			BanDue:     o.status == statusJustBlocked && o.banDue,
		}
	case statusRefused:
		// The refusing tier that resets last decides: retrying earlier is
		// pointless. Ties keep the first check's order.
		best := -1
		for i, p := range plan {
			if o.counts[i]+p.cost <= p.limit {
				continue
			}
			if best < 0 || p.end() > plan[best].end() {
				best = i
			}
		}
		p := plan[best]
		return Decision{
			Tier:       p.name,
			Limit:      int(p.limit),
			Remaining:  int(max(0, p.limit-o.counts[best])),
			Window:     time.Duration(p.window) * time.Millisecond,
			Reset:      time.UnixMilli(p.end()),
			RetryAfter: retryAfter(p.end() - nowMs),
		}
	}
	if len(plan) == 0 {
		return Decision{Allowed: true}
	}
	// Closest to exhaustion: fewest units left; on a tie the one that
	// stays exhausted longer.
	best := 0
	bestRem := plan[0].limit - o.counts[0] - plan[0].cost
	for i := 1; i < len(plan); i++ {
		rem := plan[i].limit - o.counts[i] - plan[i].cost
		if rem < bestRem || (rem == bestRem && plan[i].end() > plan[best].end()) {
			best, bestRem = i, rem
		}
	}
	p := plan[best]
	return Decision{
		Allowed:   true,
		Tier:      p.name,
		Limit:     int(p.limit),
		Remaining: int(bestRem),
		Window:    time.Duration(p.window) * time.Millisecond,
		Reset:     time.UnixMilli(p.end()),
	}
}

// retryAfter rounds up to whole seconds (Retry-After has no fractions) and
// never returns less than 1s so clients always back off.
func retryAfter(ms int64) time.Duration {
	s := (ms + 999) / 1000
	if s < 1 {
		s = 1
	}
	return time.Duration(s) * time.Second
}
