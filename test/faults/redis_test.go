package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
	// The limiter tries Redis again on a request (one a second), so the
	// replicas see requests meanwhile.
	for _, r := range rs {
		testsupport.Eventually(t, pollWait, func() bool {
			req, _ := http.NewRequest(http.MethodGet, r.URL+"/api/v1/users/me", nil)
			req.Header.Set("Authorization", "Bearer "+admin)
			if resp, err := r.Client.Do(req); err == nil {
				resp.Body.Close()
			}
			d := readyz(t, r)
			return d.status == http.StatusOK && len(d.degraded) == 0
		}, "%s /readyz still reports a degraded subsystem after Redis came back", r.Name)
	}
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
