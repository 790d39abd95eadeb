package main

// A database outage under a running server: every way PostgreSQL can be
// unavailable (connections refused, connections cut, a connection that
// never answers, backends terminated by the administrator) is answered
// 503 SERVICE_UNAVAILABLE with Retry-After on both doors, never 500; the
// outage is logged once, and so is its end.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/jackc/pgx/v5"
)

// outageAnswers checks that a signed-in read and a signup are refused
// 503 SERVICE_UNAVAILABLE with Retry-After on both doors.
func outageAnswers(t *testing.T, h *herald, access, when string) {
	t.Helper()
	check := func(what string, status int, hdr http.Header, code string) {
		t.Helper()
		if status != http.StatusServiceUnavailable || code != "SERVICE_UNAVAILABLE" || hdr.Get("Retry-After") == "" {
			t.Errorf("%s, %s: status %d code %q Retry-After %q; want 503 SERVICE_UNAVAILABLE with Retry-After", when, what, status, code, hdr.Get("Retry-After"))
		}
	}
	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(access))
	check("REST users/me", status, hdr, envCode(env))
	status, env, hdr = h.rest(t, http.MethodPost, "/api/v1/auth/register", map[string]any{"email": "down-rest@example.com", "password": testPassword})
	check("REST register", status, hdr, envCode(env))
	status, body, hdr := h.graphqlHeader(t, `{ me { id } }`, nil, withBearer(access))
	check("GraphQL me", status, hdr, gqlCode(body))
	status, body, hdr = h.graphqlHeader(t, `mutation { signup(email: "down-gql@example.com", password: "`+testPassword+`") { success } }`, nil)
	check("GraphQL signup", status, hdr, gqlCode(body))
}

func envCode(env map[string]any) string {
	code, _ := jsonPath(env, "error", "code").(string)
	return code
}

func gqlCode(body map[string]any) string {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	code, _ := jsonPath(errs[0], "extensions", "code").(string)
	return code
}

// waitMeOK polls users/me until it answers 200.
func waitMeOK(t *testing.T, h *herald, access, when string) {
	t.Helper()
	deadline := time.Now().Add(pollWait)
	for {
		status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(access))
		if status == http.StatusOK {
			return
		}
		if status == http.StatusInternalServerError {
			t.Fatalf("%s: users/me answered 500: %v", when, env)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: users/me still answers %d %v after %s", when, status, env, pollWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func countLogs(h *herald, t *testing.T, msg string) (n int) {
	for _, l := range h.logLines(t) {
		if l["msg"] == msg {
			n++
		}
	}
	return n
}

func TestDatabaseOutage(t *testing.T) {
	base := sqlstoretest.NewURL(t, "postgres")
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testsupport.NewTCPProxy(t, u.Host)
	b := make([]byte, 4)
	rand.Read(b)
	app := "herald-outage-" + hex.EncodeToString(b)
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	u.Host = proxy.Addr
	h := startHerald(t, "postgres", map[string]string{"HERALD_DATABASE_URL": u.String()})
	access, _ := newUserToken(t, h, restDoor.name, "outage@example.com")
	waitMeOK(t, h, access, "before the outage")

	// Refused and broken connections.
	proxy.Cut()
	for range 3 {
		outageAnswers(t, h, access, "connections refused")
	}
	proxy.Restore(t)
	waitMeOK(t, h, access, "after connections came back")

	// A connection that never answers: the pool's acquire timeout.
	proxy.Blackhole(t)
	status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(access))
	if status != http.StatusServiceUnavailable || envCode(env) != "SERVICE_UNAVAILABLE" || hdr.Get("Retry-After") == "" {
		t.Errorf("hanging database: status %d %v Retry-After %q; want 503 with Retry-After", status, env, hdr.Get("Retry-After"))
	}
	proxy.Restore(t)
	waitMeOK(t, h, access, "after the hang")

	// The server's backends terminated by the administrator (SQLSTATE
	// 57P01, as in a restart or failover): never a 500, and back at once.
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var killed int
	if err := admin.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&killed); err != nil {
		t.Fatal(err)
	}
	if killed == 0 {
		t.Fatalf("no backend of %s to terminate", app)
	}
	for range 5 {
		status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(access))
		if status != http.StatusOK && status != http.StatusServiceUnavailable {
			t.Errorf("after pg_terminate_backend: status %d %v; want 200 or 503", status, env)
		}
	}
	waitMeOK(t, h, access, "after pg_terminate_backend")

	// Logged once per outage (three outages here at most), never per
	// request, and never as an internal error.
	deadline := time.Now().Add(pollWait)
	for countLogs(h, t, "database available again") < countLogs(h, t, "database unavailable: API requests that need it answer 503 SERVICE_UNAVAILABLE until it is back") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	down := countLogs(h, t, "database unavailable: API requests that need it answer 503 SERVICE_UNAVAILABLE until it is back")
	up := countLogs(h, t, "database available again")
	if down < 2 || down > 3 || up != down {
		t.Errorf("outage logged %d times and its end %d times; want one pair per outage (2 or 3)", down, up)
	}
	for _, l := range h.logLines(t) {
		if l["msg"] == "internal error" || l["msg"] == "panic serving request" {
			t.Errorf("log line during an outage: %v", l)
		}
		if l["msg"] == "request" && l["status"] == float64(500) {
			t.Errorf("a request answered 500: %v", l)
		}
	}
	if strings.Contains(h.logs(), `"level":"ERROR","msg":"internal error"`) {
		t.Error("internal errors logged")
	}
}

// lazy is testsupport.Lazy, under the short name this package's polls use.
type lazy = testsupport.Lazy

// startBehindProxy starts a server on a fresh PostgreSQL database reached
// through a testsupport.TCPProxy.
func startBehindProxy(t *testing.T, env map[string]string) (*herald, *testsupport.TCPProxy) {
	t.Helper()
	u, err := url.Parse(sqlstoretest.NewURL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	proxy := testsupport.NewTCPProxy(t, u.Host)
	u.Host = proxy.Addr
	if env == nil {
		env = map[string]string{}
	}
	env["HERALD_DATABASE_URL"] = u.String()
	return startHerald(t, "postgres", env), proxy
}

// withContext sends the request under ctx.
func withContext(ctx context.Context) reqOption {
	return func(r *http.Request) { *r = *r.WithContext(ctx) }
}

// A connection that goes silent (the network drops its packets without a
// reset) costs the requests caught in it their deadline, not forever:
// each answers 503 SERVICE_UNAVAILABLE with Retry-After on both doors.
// Once the network heals, requests succeed again without a restart, every
// connection the silence corrupted is closed, and the goroutines come
// back to their level before the fault.
func TestDatabaseSilence(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	const requestTimeout = 3 * time.Second
	h, proxy := startBehindProxy(t, map[string]string{
		"HERALD_REQUEST_TIMEOUT":        requestTimeout.String(),
		"HERALD_DATABASE_QUERY_TIMEOUT": "5s",
	})
	access, _ := newUserToken(t, h, restDoor.name, "silence@example.com")
	waitMeOK(t, h, access, "before the silence")
	goroutinesBefore := h.metric(t, "go_goroutines")

	proxy.Silence()
	// A request's wait is bounded well past its deadline (a loaded
	// machine), and fails clearly at that bound.
	const slack = 15 * time.Second
	requests := []struct {
		name string
		send func(ctx context.Context) (int, string, http.Header, error)
	}{
		{"REST users/me", func(ctx context.Context) (int, string, http.Header, error) {
			a := rawDo(h, http.MethodGet, "/api/v1/users/me", nil, withBearer(access), withContext(ctx))
			var env map[string]any
			json.Unmarshal(a.raw, &env)
			return a.status, envCode(env), a.hdr, a.err
		}},
		{"REST register", func(ctx context.Context) (int, string, http.Header, error) {
			a := rawDo(h, http.MethodPost, "/api/v1/auth/register", map[string]any{"email": "silent-rest@example.com", "password": testPassword}, withContext(ctx))
			var env map[string]any
			json.Unmarshal(a.raw, &env)
			return a.status, envCode(env), a.hdr, a.err
		}},
		{"GraphQL me", func(ctx context.Context) (int, string, http.Header, error) {
			a := rawDo(h, http.MethodPost, "/graphql", map[string]any{"query": `{ me { id } }`}, withBearer(access), withContext(ctx))
			var body map[string]any
			json.Unmarshal(a.raw, &body)
			return a.status, gqlCode(body), a.hdr, a.err
		}},
		{"GraphQL devices", func(ctx context.Context) (int, string, http.Header, error) {
			a := rawDo(h, http.MethodPost, "/graphql", map[string]any{"query": `{ devices { nodes { deviceId } } }`}, withBearer(access), withContext(ctx))
			var body map[string]any
			json.Unmarshal(a.raw, &body)
			return a.status, gqlCode(body), a.hdr, a.err
		}},
	}
	var wg sync.WaitGroup
	for _, r := range requests {
		for i := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout+slack)
				defer cancel()
				start := time.Now()
				status, code, hdr, err := r.send(ctx)
				t.Logf("%s #%d in the silence: %d %s after %s", r.name, i, status, code, time.Since(start).Round(time.Millisecond))
				if err != nil {
					t.Errorf("%s #%d in the silence: no answer within the %s deadline and %s more: %v", r.name, i, requestTimeout, slack, err)
					return
				}
				if status != http.StatusServiceUnavailable || code != "SERVICE_UNAVAILABLE" || hdr.Get("Retry-After") == "" {
					t.Errorf("%s #%d in the silence: status %d code %q Retry-After %q; want 503 SERVICE_UNAVAILABLE with Retry-After", r.name, i, status, code, hdr.Get("Retry-After"))
				}
			}()
		}
	}
	wg.Wait()
	open, tainted := proxy.OpenPipes()
	t.Logf("in the silence: %d connections to PostgreSQL open, %d of them corrupted; %v goroutines before", open, tainted, goroutinesBefore)
	if tainted == 0 {
		t.Fatal("the silence dropped nothing: the test did not test")
	}
	proxy.Heal()

	waitMeOK(t, h, access, "after the silence healed")
	if status, body := h.graphql(t, `{ me { id } }`, nil, withBearer(access)); status != http.StatusOK || body["errors"] != nil {
		t.Errorf("GraphQL me after the silence: %d %v", status, body)
	}
	// Every connection the silence dropped bytes of is closed: none is
	// left holding a pool slot, or a query waiting for an answer that
	// will never come. But River's LISTEN connection: River pings it every
	// 5 s without a deadline, and a ping this proxy dropped waits forever.
	// A real network never drops bytes from the middle of a stream: TCP
	// sends them again once it heals, or, if the path is gone for good,
	// TCP_USER_TIMEOUT closes the connection, which a proxy on loopback
	// (whose own kernel acknowledges everything) cannot show.
	admin, err := pgx.Connect(context.Background(), sqlstoretest.NewURL(t, "postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	var stuck []string
	// River's own queries (its fetch of available jobs) run under River's
	// timeouts, not Herald's query deadline: one caught in the silence
	// lets go of its connection only when River's wait ends, which took
	// more than pollWait once under the whole suite with -race.
	testsupport.Eventually(t, 3*pollWait, func() bool {
		stuck = stuck[:0]
		for _, port := range proxy.TaintedPorts() {
			var query string
			admin.QueryRow(context.Background(), `SELECT coalesce(query, '') FROM pg_stat_activity WHERE client_port = $1`, port).Scan(&query)
			if !strings.HasPrefix(query, "LISTEN") || !strings.Contains(query, "river_control") {
				stuck = append(stuck, fmt.Sprintf("port %d (%q)", port, query))
			}
		}
		return len(stuck) == 0
	}, "connections to PostgreSQL corrupted by the silence still open: %v", lazy(func() string { return fmt.Sprint(stuck) }))
	open, _ = proxy.OpenPipes()
	// No goroutine is left waiting on the silence.
	const spareGoroutines = 20
	var now float64
	eventually(t, func() bool {
		now = h.metric(t, "go_goroutines")
		return now <= goroutinesBefore+spareGoroutines
	}, "goroutines: %v after the silence, %v before (spare %d)", lazy(func() string { return fmt.Sprint(now) }), goroutinesBefore, spareGoroutines)
	t.Logf("after the silence: %d connections to PostgreSQL open; %v goroutines", open, now)
	for _, l := range h.logLines(t) {
		if l["msg"] == "internal error" || l["msg"] == "panic serving request" || (l["msg"] == "request" && l["status"] == float64(500)) {
			t.Errorf("during the silence: %v", l)
		}
	}
}

// With 200 ms added to every answer of PostgreSQL, requests still
// succeed: slow is not down.
func TestDatabaseLatency(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	h, proxy := startBehindProxy(t, nil)
	access, _ := newUserToken(t, h, restDoor.name, "latency@example.com")
	proxy.Delay(200 * time.Millisecond)
	for i := range 3 {
		if status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(access)); status != http.StatusOK {
			t.Errorf("REST users/me #%d with 200 ms latency: %d %v", i, status, env)
		}
		before := proxy.Delayed()
		if status, body := h.graphql(t, `{ me { id } devices { nodes { deviceId } } }`, nil, withBearer(access)); status != http.StatusOK || body["errors"] != nil {
			t.Errorf("GraphQL me #%d with 200 ms latency: %d %v", i, status, body)
		}
		// The devices come from the database: without an answer held back
		// by the proxy here, the test tested nothing.
		if proxy.Delayed() == before {
			t.Fatalf("GraphQL me #%d was answered with no database answer held back by the proxy's 200 ms: the latency was not applied", i)
		}
	}
	mustRegister(t, h, restDoor.name, access, "android", "latency-token", "slow")
}
