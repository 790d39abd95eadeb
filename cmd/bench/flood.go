package main

// The login flood: users/me on one Herald alone, then the same while
// logins arrive faster than it can hash them (rate limits off, as many
// distinct addresses would achieve). Password hashing has its own bound,
// so cheap reads should keep at least half their throughput, and the
// logins beyond capacity should be refused at once with 503.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// floodClients is how many connections the flood's logins go out on: far
// more than hashing's slots and queue, so logins are offered at the set
// rate whatever Herald does with them.
const floodClients = 64

// openResult is what an open loop saw in its window.
type openResult struct {
	Offered   int                     // requests started in the window
	Dropped   int                     // not started: every client was busy
	Statuses  map[int]int             // of those that ended in the window
	Latencies map[int][]time.Duration // per status, sorted
	FirstErr  string
}

func (r openResult) ended() int {
	n := 0
	for _, c := range r.Statuses {
		n += c
	}
	return n
}

// openLoop starts requests at rate per second for warmup + window, each
// on the first free one of clients connections, whatever the answers
// take (a closed loop would slow down with the server). Requests that end
// inside the window are counted.
func openLoop(ctx context.Context, rate float64, clients int, warmup, window time.Duration, newOp func(i int) (op, func())) openResult {
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+window)
	res := openResult{Statuses: map[int]int{}, Latencies: map[int][]time.Duration{}}
	var mu sync.Mutex
	jobs := make(chan struct{})
	var wg sync.WaitGroup
	for i := range clients {
		o, cleanup := newOp(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cleanup()
			for range jobs {
				t0 := time.Now()
				status, err := o()
				t1 := time.Now()
				if t1.Before(from) || t1.After(until) {
					continue
				}
				mu.Lock()
				if err != nil {
					status = 0
					if res.FirstErr == "" {
						res.FirstErr = err.Error()
					}
				}
				res.Statuses[status]++
				res.Latencies[status] = append(res.Latencies[status], t1.Sub(t0))
				mu.Unlock()
			}
		}()
	}
	for n := 0; ctx.Err() == nil; n++ {
		next := start.Add(time.Duration(float64(n) / rate * float64(time.Second)))
		if !next.Before(until) {
			break
		}
		time.Sleep(time.Until(next))
		inWindow := !next.Before(from)
		select {
		case jobs <- struct{}{}:
			if inWindow {
				res.Offered++
			}
		default:
			if inWindow {
				res.Dropped++
			}
		}
	}
	close(jobs)
	wg.Wait()
	for s := range res.Latencies {
		slices.Sort(res.Latencies[s])
	}
	return res
}

// loginFloodMeasure: per round, the bare hashing rate at Herald's
// concurrency (the capacity), then one Herald on PostgreSQL serving
// users/me alone and then under logins offered at floodFactor times that
// capacity. The ratio is users/me under the flood over users/me alone.
func loginFloodMeasure(ctx context.Context, k *kit, o *options, b *board, pg *site) error {
	hc := k.hashCost()
	alone, under := &loadSeries{}, &loadSeries{}
	var logins []openResult
	var offered []float64
	for r := 1; r <= o.rounds; r++ {
		k.quiesce(ctx)
		capRes, err := hc.bareLoop(ctx, o.warmup, min(o.duration, 3*time.Second))
		if err != nil || capRes.PerSec() <= 0 {
			b.notes = append(b.notes, fmt.Sprintf("login flood round %d: the hashing capacity could not be measured: %v", r, err))
			continue
		}
		rate := o.floodFactor * capRes.PerSec()
		k.quiesce(ctx)
		p, err := k.start(ctx, pg, fmt.Sprintf("login-flood-r%d", r))
		if err != nil {
			return err
		}
		usersMe := func(i int) (op, func(), error) {
			rc := newRawConn(p.addr, usersMeRequest(pg.tokens)(p.addr, i), 60*time.Second)
			return rc.Do, rc.Close, nil
		}
		res, err := closedLoop(ctx, o.concurrency, o.warmup, o.duration, p.Pid(), usersMe)
		alone.add(b, "users/me alone", r, res, err)
		floodDone := make(chan openResult, 1)
		go func() {
			floodDone <- openLoop(ctx, rate, floodClients, o.warmup, o.duration, func(i int) (op, func()) {
				rc := newRawConn(p.addr, loginRequest(pg.users)(p.addr, i), 60*time.Second)
				return rc.Do, rc.Close
			})
		}()
		res, err = closedLoop(ctx, o.concurrency, o.warmup, o.duration, p.Pid(), usersMe)
		under.add(b, "users/me under the login flood", r, res, err)
		fl := <-floodDone
		p.stop()
		logins, offered = append(logins, fl), append(offered, rate)
		logf("  round %d: capacity %.1f hashes/s, %.1f logins/s offered: %s", r, capRes.PerSec(), rate, floodCell(fl, o.duration))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	b.loadRow(fmt.Sprintf("users/me under a login flood (%.0f× hashing capacity, median %.0f logins/s offered, %d hash slot(s) of argon2id m=%d MiB t=%d p=%d), %d clients: under the flood (Herald column) over alone on the same server (Ceiling column)",
		o.floodFactor, median(offered), hc.places, hc.memKiB/1024, hc.iterations, hc.lanes, o.concurrency), under, alone, " req/s", " req/s", true, 0.5)
	if len(logins) == 0 {
		return nil
	}
	var all openResult
	all.Statuses, all.Latencies = map[int]int{}, map[int][]time.Duration{}
	for _, l := range logins {
		all.Offered += l.Offered
		all.Dropped += l.Dropped
		for s, n := range l.Statuses {
			all.Statuses[s] += n
			all.Latencies[s] = append(all.Latencies[s], l.Latencies[s]...)
		}
		all.FirstErr = cmpOr(all.FirstErr, l.FirstErr)
	}
	for s := range all.Latencies {
		slices.Sort(all.Latencies[s])
	}
	target := "beyond capacity: 503 within the wait; no other failure, no client timeout"
	for s := range all.Statuses {
		if s != 200 && s != 503 {
			target += " MISSED"
			break
		}
	}
	b.rows = append(b.rows, row{
		measure: "logins during the flood, all rounds",
		herald:  floodCell(all, o.duration*time.Duration(len(logins))),
		ceiling: "–", ratio: "–", target: target,
	})
	return nil
}

// floodCell describes the logins of a flood: the rate of each answer, its
// share and its p99.
func floodCell(r openResult, window time.Duration) string {
	ended := r.ended()
	if ended == 0 {
		return "no login ended in the window"
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(r.Statuses)) {
		parts = append(parts, fmt.Sprintf("%s: %.0f %% (%.1f/s, p99 %s)", statusName(s), 100*float64(r.Statuses[s])/float64(ended),
			float64(r.Statuses[s])/window.Seconds(), ms(percentile(r.Latencies[s], 99))))
	}
	out := fmt.Sprintf("%d ended: %s", ended, strings.Join(parts, "; "))
	if r.Dropped > 0 {
		out += fmt.Sprintf("; %d not sent (all %d clients busy)", r.Dropped, floodClients)
	}
	if r.FirstErr != "" {
		out += " (first error: " + r.FirstErr + ")"
	}
	return out
}
