package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

// Redis killed under two replicas, then started again empty and flushed:
// while it is gone each replica counts rate limits in memory (/readyz
// says degraded, nothing answers 500 or 503) and paces pushes alone, a
// broadcast still completes under the cap; once it is back the limits are
// shared again; an operator's ban, which lives in the database, holds
// throughout.
func TestRedisRestartAndFlush(t *testing.T) {
	const (
		authLimit = 5
		tries     = 4 * authLimit
		pushRate  = 200
		devicesN  = 600
		banned    = "203.0.113.99"
	)
	awayFromWindowEdge(t, 24*time.Hour)
	_, rd, c := servers(t, harness.Options{
		FCMLatency: [2]time.Duration{time.Millisecond, 3 * time.Millisecond},
		Env: map[string]string{
			"HERALD_TRUSTED_PROXIES":   "127.0.0.1/32", // the harness's proxy: X-Forwarded-For names the client
			"HERALD_RATE_LIMIT_AUTH":   strconv.Itoa(authLimit),
			"HERALD_RATE_LIMIT_WINDOW": "24h",
			"HERALD_PUSH_RATE":         strconv.Itoa(pushRate),
		},
	})
	c.Prepare(t)
	tokens := c.SeedDevices(t, devicesN)
	rs := c.Start(t, 2)
	admin := c.Login(t, harness.OpsEmail)
	c.MustGQL(t, "banAddress", admin, `mutation($ip:String!){banAddress(ip:$ip){ip}}`, map[string]any{"ip": banned})
	testsupport.Eventually(t, pollWait, func() bool {
		return statuses(t, c, banned, 2)[http.StatusForbidden] == 2
	}, "the banned address is not refused 403 by both replicas")

	// Shared: the limit holds across the replicas.
	if got := statuses(t, c, "198.51.100.1", tries); got[http.StatusOK] != authLimit || got[http.StatusTooManyRequests] != tries-authLimit {
		t.Fatalf("with Redis, %d logins from one address through two replicas: %v; want %d allowed, the rest 429", tries, got, authLimit)
	}

	rd.Stop(t)
	// Local: each replica counts alone, and says so.
	got := statuses(t, c, "198.51.100.2", tries)
	if got[http.StatusOK] < authLimit || got[http.StatusOK] > 2*authLimit || got[http.StatusOK]+got[http.StatusTooManyRequests] != tries {
		t.Fatalf("without Redis, %d logins from one address through two replicas: %v; want %d to %d allowed (each replica counts alone), the rest 429",
			tries, got, authLimit, 2*authLimit)
	}
	for _, r := range rs {
		if d := readyz(t, r); d.status != http.StatusOK || d.degraded["rateLimiter"] == "" {
			t.Errorf("%s /readyz without Redis: %d, degraded %v; want 200 reporting the rate limiter degraded", r.Name, d.status, d.degraded)
		}
	}
	if got := statuses(t, c, banned, 2); got[http.StatusForbidden] != 2 {
		t.Errorf("without Redis, the banned address got %v; want 403 from both replicas", got)
	}
	// The push cap: a broadcast completes, paced by the replica alone.
	sendsBefore := len(c.FCM.Exchanges())
	job, _ := c.Broadcast(t, admin, "Without Redis")
	harness.ExpectCompleted(t, c.WaitFinished(t, admin, job, jobWait), devicesN)
	checkRate(t, c.FCM.Exchanges()[sendsBefore:], pushRate, "without Redis")

	rd.Start(t)
	rd.FlushAll(t)
	waitUndegraded(t, rs, admin, "after Redis came back")
	if got := statuses(t, c, "198.51.100.3", tries); got[http.StatusOK] != authLimit || got[http.StatusTooManyRequests] != tries-authLimit {
		t.Fatalf("with Redis back, %d logins from one address through two replicas: %v; want %d allowed, the rest 429", tries, got, authLimit)
	}
	if got := statuses(t, c, banned, 2); got[http.StatusForbidden] != 2 {
		t.Errorf("after Redis was flushed, the banned address got %v; want 403 from both replicas", got)
	}
	sendsBefore = len(c.FCM.Exchanges())
	job, _ = c.Broadcast(t, admin, "With Redis again")
	harness.ExpectCompleted(t, c.WaitFinished(t, admin, job, jobWait), devicesN)
	checkRate(t, c.FCM.Exchanges()[sendsBefore:], pushRate, "with Redis back")
	for _, tok := range tokens {
		if n := c.FCM.Delivered(tok); n != 2 {
			t.Fatalf("%s got %d pushes from the two broadcasts, want 2", tok, n)
		}
	}
	for _, r := range c.Replicas() {
		for _, e := range r.Logged("request", nil) {
			if s := fmt.Sprint(e["status"]); s == "500" || s == "503" {
				t.Errorf("%s answered %s: %v", r.Name, s, e)
			}
		}
	}
}

// statuses sends n logins (the operator's, right password) from client
// address ip through the proxy and counts the answers by status.
func statuses(t *testing.T, c *harness.Cluster, ip string, n int) map[int]int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": harness.OpsEmail, "password": harness.Password})
	client := &http.Client{Timeout: harness.HTTPWait} // every wait bounded
	out := map[int]int{}
	for range n {
		req, _ := http.NewRequest(http.MethodPost, c.Proxy.URL+"/api/v1/auth/login", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Forwarded-For", ip)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("login from %s: %v", ip, err)
		}
		resp.Body.Close()
		out[resp.StatusCode]++
	}
	return out
}

// The network to Redis fails in the ways a network does, under two
// replicas, through a proxy between Herald and its redis-server: silent
// (connections kept, every byte dropped, as a middlebox that drops
// packets without a reset), reset (connections broken and refused), and
// slow (200 ms added to every answer). While it is silent or broken,
// requests that use Redis (logins under the auth limit, users/me under the
// protected one) answer within their deadline, 200 or 429 counted by each
// replica alone (or 503 with Retry-After at the deadline; never a 500,
// never a hang), /readyz says degraded, and a
// broadcast completes under the push cap paced by its replica alone. Once
// the network heals the limits are shared again; slow is not down. The
// connections the silence dropped bytes of are closed, and no goroutine
// is left behind.
func TestRedisSilence(t *testing.T) {
	const (
		authLimit      = 5
		tries          = 4 * authLimit
		pushRate       = 200
		devicesN       = 600
		requestTimeout = 3 * time.Second
		// A request's wait is bounded well past its deadline (a loaded
		// machine), and fails clearly at that bound.
		answerWait = requestTimeout + 10*time.Second
	)
	awayFromWindowEdge(t, 24*time.Hour)
	pg := harness.StartPostgres(t)
	rd := harness.StartRedis(t)
	link := testsupport.NewTCPProxy(t, fmt.Sprintf("127.0.0.1:%d", rd.Port))
	c := harness.New(t, harness.Options{
		DatabaseURL: pg.CreateDatabase(t, "herald", heraldApp),
		RedisURL:    "redis://" + link.Addr + "/0",
		FCMLatency:  [2]time.Duration{time.Millisecond, 3 * time.Millisecond},
		Env: map[string]string{
			"HERALD_TRUSTED_PROXIES":      "127.0.0.1/32", // the harness's proxy: X-Forwarded-For names the client
			"HERALD_RATE_LIMIT_AUTH":      strconv.Itoa(authLimit),
			"HERALD_RATE_LIMIT_PROTECTED": "100000", // users/me is counted in Redis too
			"HERALD_RATE_LIMIT_WINDOW":    "24h",
			"HERALD_PUSH_RATE":            strconv.Itoa(pushRate),
			"HERALD_REQUEST_TIMEOUT":      requestTimeout.String(),
		},
	})
	c.Prepare(t)
	c.SeedDevices(t, devicesN)
	rs := c.Start(t, 2)
	admin := c.Login(t, harness.OpsEmail)
	ip := 0
	nextIP := func() string { ip++; return fmt.Sprintf("198.51.100.%d", ip) }
	// shared sends its requests one at a time: forty at once on a loaded
	// machine can keep Redis past its 500 ms bound, and the limiter then
	// rightly falls back.
	shared := func(when string) {
		t.Helper()
		if got := answersWithin(t, c, admin, nextIP(), tries, 1, answerWait, when); got[http.StatusOK] != authLimit || got[http.StatusTooManyRequests] != tries-authLimit {
			t.Fatalf("%s, %d logins from one address through two replicas: %v; want %d allowed, the rest 429 (shared)", when, tries, got, authLimit)
		}
	}
	alone := func(when string) {
		t.Helper()
		got := answersWithin(t, c, admin, nextIP(), tries, tries, answerWait, when)
		if got[http.StatusOK] < authLimit || got[http.StatusOK] > 2*authLimit || got[http.StatusOK]+got[http.StatusTooManyRequests]+got[http.StatusServiceUnavailable] != tries {
			t.Fatalf("%s, %d logins from one address through two replicas: %v; want %d to %d allowed (each replica counts alone), the rest 429 (or 503 at the deadline)",
				when, tries, got, authLimit, 2*authLimit)
		}
		for _, r := range rs {
			if d := readyz(t, r); d.status != http.StatusOK || d.degraded["rateLimiter"] == "" {
				t.Errorf("%s, %s /readyz: %d, degraded %v; want 200 reporting the rate limiter degraded", when, r.Name, d.status, d.degraded)
			}
		}
	}
	recovered := func(when string) {
		t.Helper()
		waitUndegraded(t, rs, admin, when)
	}

	shared("with Redis")
	// The goroutines are counted after the same work with Redis healthy (a
	// broadcast, forty requests at once), so that the pools it fills (HTTP
	// connections to FCM, idle client connections) count as before.
	sendsBefore := len(c.FCM.Exchanges())
	job, _ := c.Broadcast(t, admin, "With Redis")
	harness.ExpectCompleted(t, c.WaitFinished(t, admin, job, jobWait), devicesN)
	checkRate(t, c.FCM.Exchanges()[sendsBefore:], pushRate, "with Redis")
	answersWithin(t, c, admin, nextIP(), tries, tries, answerWait, "warming up")
	// Each idle keep-alive connection holds goroutines at the replica: a
	// client's connection to it (up to 32 per replica at the proxy, more
	// after slow answers than fast ones) one, its own connection to the
	// fake FCM two (a broadcast paced alone in the silence sends more at
	// once, and keeps up to 64 open: +21 and +43 seen). They are closed
	// before each count, so that what remains is what the faults left.
	settled := func(r *harness.Replica) float64 {
		c.Proxy.CloseIdleConnections()
		r.Client.CloseIdleConnections()
		c.FCM.CloseClientConnections()
		return r.Metric(t, "go_goroutines")
	}
	goroutinesBefore := map[string]float64{}
	for _, r := range rs {
		// Counted again until it stops falling (a closed connection's
		// goroutine ends a moment later).
		least := settled(r)
		testsupport.Eventually(t, pollWait, func() bool {
			n := settled(r)
			stable := n >= least
			least = min(least, n)
			return stable
		}, "%s: the goroutine count did not settle before the faults", r.Name)
		goroutinesBefore[r.Name] = least
	}
	openBefore, _ := link.OpenPipes()

	link.Silence()
	alone("Redis silent")
	sendsBefore = len(c.FCM.Exchanges())
	job, _ = c.Broadcast(t, admin, "Redis silent")
	harness.ExpectCompleted(t, c.WaitFinished(t, admin, job, jobWait), devicesN)
	checkRate(t, c.FCM.Exchanges()[sendsBefore:], pushRate, "Redis silent")
	open, tainted := link.OpenPipes()
	t.Logf("in the silence: %d connections to Redis open (%d before), %d of them corrupted; %d reads dropped", open, openBefore, tainted, link.Dropped())
	if link.Dropped() == 0 {
		t.Fatal("the silence dropped nothing: the test did not test")
	}
	link.Heal()
	recovered("after the silence")
	shared("after the silence")

	link.Cut()
	alone("Redis connections reset and refused")
	link.Restore(t)
	recovered("after the reset")
	shared("after the reset")

	link.Delay(200 * time.Millisecond)
	delayed := link.Delayed()
	shared("with 200 ms added to Redis's answers")
	if link.Delayed() == delayed {
		t.Fatal("no Redis answer was held back by the proxy's 200 ms: the latency was not applied")
	}
	for _, r := range rs {
		if d := readyz(t, r); d.status != http.StatusOK || len(d.degraded) != 0 {
			t.Errorf("with 200 ms added to Redis's answers, %s /readyz: %d, degraded %v; want 200, nothing degraded", r.Name, d.status, d.degraded)
		}
	}
	link.Delay(0)

	// Every connection the silence dropped bytes of is closed, and none is
	// piling up: each replica's pool holds at most its size (10 per CPU).
	testsupport.Eventually(t, pollWait, func() bool {
		_, tainted := link.OpenPipes()
		return tainted == 0
	}, "connections to Redis corrupted by the silence still open: %v", testsupport.Lazy(func() string { return fmt.Sprint(link.OpenPipes()) }))
	open, _ = link.OpenPipes()
	if most := 2 * 10 * runtime.NumCPU(); open > most {
		t.Errorf("%d connections to Redis open after the faults, more than two pools' worth (%d)", open, most)
	}
	// A handful of spare goroutines (timers, a connection being closed);
	// the five bursts after the count send 200 requests and a broadcast
	// its 600 pushes, so a leak per request or per push shows.
	const spareGoroutines = 10
	for _, r := range rs {
		var now float64
		testsupport.Eventually(t, pollWait, func() bool {
			now = settled(r)
			return now <= goroutinesBefore[r.Name]+spareGoroutines
		}, "%s: %v goroutines after the faults, %v before (spare %d)", r.Name, testsupport.Lazy(func() string { return fmt.Sprint(now) }), goroutinesBefore[r.Name], spareGoroutines)
		t.Logf("%s: %v goroutines after the faults, %v before", r.Name, now, goroutinesBefore[r.Name])
	}
	t.Logf("after the faults: %d connections to Redis open", open)
	for _, r := range c.Replicas() {
		for _, e := range r.Logged("request", map[string]string{"status": "500"}) {
			t.Errorf("%s answered 500: %v", r.Name, e)
		}
	}
}

// answersWithin sends n logins from client address ip and n users/me of
// bearer through the proxy, atOnce of each at a time; it fails the test
// for one not answered within wait, for a users/me answered neither 200
// nor 503 with Retry-After, and for a login answered neither 200, 429 nor
// 503 with Retry-After, and counts the logins' answers by status.
func answersWithin(t *testing.T, c *harness.Cluster, bearer, ip string, n, atOnce int, wait time.Duration, when string) map[int]int {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": harness.OpsEmail, "password": harness.Password})
	client := &http.Client{Timeout: wait}
	var (
		mu      sync.Mutex
		logins  = map[int]int{}
		slowest time.Duration
		wg      sync.WaitGroup
		slots   = make(chan struct{}, atOnce)
	)
	do := func(what string, req *http.Request, ok func(int) bool) {
		slots <- struct{}{}
		defer func() { <-slots }()
		start := time.Now()
		resp, err := client.Do(req)
		took := time.Since(start)
		mu.Lock()
		defer mu.Unlock()
		slowest = max(slowest, took)
		if err != nil {
			t.Errorf("%s: %s: no answer within %s: %v", when, what, wait, err)
			return
		}
		resp.Body.Close()
		if what == "login" {
			logins[resp.StatusCode]++
		}
		// 503 with Retry-After is the answer of a request whose deadline
		// passed (a loaded machine); anything else but ok is a failure.
		if !ok(resp.StatusCode) && (resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "") {
			t.Errorf("%s: %s answered %d after %s", when, what, resp.StatusCode, took.Round(time.Millisecond))
		}
	}
	for range n {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, c.Proxy.URL+"/api/v1/auth/login", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", ip)
			do("login", req, func(s int) bool { return s == http.StatusOK || s == http.StatusTooManyRequests })
		})
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodGet, c.Proxy.URL+"/api/v1/users/me", nil)
			req.Header.Set("Authorization", "Bearer "+bearer)
			do("users/me", req, func(s int) bool { return s == http.StatusOK })
		})
	}
	wg.Wait()
	t.Logf("%s: logins %v, the slowest answer of %d after %s", when, logins, 2*n, slowest.Round(time.Millisecond))
	return logins
}

// waitUndegraded waits until every replica counts in Redis again. The
// limiter tries Redis again on a request, once a second, so each replica
// is sent requests meanwhile.
func waitUndegraded(t *testing.T, rs []*harness.Replica, token, when string) {
	t.Helper()
	for _, r := range rs {
		testsupport.Eventually(t, pollWait, func() bool {
			req, _ := http.NewRequest(http.MethodGet, r.URL+"/api/v1/users/me", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			if resp, err := r.Client.Do(req); err == nil {
				resp.Body.Close()
			}
			d := readyz(t, r)
			return d.status == http.StatusOK && len(d.degraded) == 0
		}, "%s: %s /readyz still reports a degraded subsystem", when, r.Name)
	}
}

type readiness struct {
	status   int
	degraded map[string]string
}

func readyz(t *testing.T, r *harness.Replica) readiness {
	t.Helper()
	resp, err := r.Client.Get(r.URL + "/readyz")
	if err != nil {
		t.Fatalf("%s /readyz: %v", r.Name, err)
	}
	defer resp.Body.Close()
	var body struct {
		Degraded map[string]string `json:"degraded"`
	}
	json.NewDecoder(resp.Body).Decode(&body)
	return readiness{resp.StatusCode, body.Degraded}
}

// checkRate fails the test when the sends exceed the cap by more than 20%
// and a burst (a tenth of a second's worth) in any one-second window.
func checkRate(t *testing.T, sends []fcmtest.Exchange, rate int, when string) {
	t.Helper()
	times := harness.SendTimes(sends)
	limit := rate*12/10 + max(rate/10, 1)
	most, _ := harness.MostInWindow(times, time.Second)
	t.Logf("%s: %d sends, at most %d in one second (cap %d/s)", when, len(times), most, rate)
	if most > limit {
		t.Errorf("%s: %d sends within one second, over HERALD_PUSH_RATE=%d (allowed %d)", when, most, rate, limit)
	}
}

// awayFromWindowEdge waits, when a fixed rate-limit window of this length
// is about to end, until the next one has begun, so that no count the
// test makes is split across two windows.
func awayFromWindowEdge(t *testing.T, window time.Duration) {
	t.Helper()
	left := time.Until(time.Now().Truncate(window).Add(window))
	if left < 3*time.Minute {
		t.Logf("waiting %s for the next rate-limit window", left.Round(time.Second))
		time.Sleep(left + time.Second)
	}
}
