package main

// The real binary, killed with SIGKILL in the middle of a broadcast and
// started again, finishes the job with exactly one delivery per device; and
// the providers over TLS (APNs, and FCM over HTTP/2) through the real
// binary, the only place the server can be made to trust the fakes'
// certificates: SSL_CERT_FILE of its own process.

import (
	"bytes"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// pushGate is a reverse proxy between the server and a fake push provider
// that the test can pause: while paused, new requests are held (not
// forwarded) until Resume, or until their client goes away, in which case
// they are never forwarded.
type pushGate struct {
	URL string

	rp       *httputil.ReverseProxy
	mu       sync.Mutex
	resume   chan struct{} // non-nil while paused; closed by Resume
	held     atomic.Int64  // requests waiting at the gate
	inFlight atomic.Int64  // requests forwarded whose answer is not yet written back
}

func newPushGate(t testing.TB, target string) *pushGate {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	g := &pushGate{rp: httputil.NewSingleHostReverseProxy(u)}
	g.rp.Transport = &http.Transport{MaxIdleConnsPerHost: 128}
	srv := httptest.NewServer(g)
	g.URL = srv.URL
	t.Cleanup(func() {
		g.Resume()
		srv.Close()
	})
	return g
}

func (g *pushGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.admit(r) {
		return // the client went away while held: never forwarded
	}
	defer g.inFlight.Add(-1)
	g.rp.ServeHTTP(w, r)
}

// admit waits while the gate is paused and counts the request in flight,
// under the lock Pause takes, so that once paused, InFlight() == 0 means
// nothing can reach the target any more.
func (g *pushGate) admit(r *http.Request) bool {
	body := r.Body
	for {
		g.mu.Lock()
		wait := g.resume
		if wait == nil {
			g.inFlight.Add(1)
			g.mu.Unlock()
			return true
		}
		g.mu.Unlock()
		if body == r.Body {
			// Reading the whole body lets the server notice a client that
			// goes away (it watches the connection only once the body is
			// consumed).
			b, err := io.ReadAll(r.Body)
			if err != nil {
				return false
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		g.held.Add(1)
		select {
		case <-wait:
			g.held.Add(-1)
		case <-r.Context().Done():
			g.held.Add(-1)
			return false
		}
	}
}

// Pause holds every request that arrives from now on.
func (g *pushGate) Pause() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume == nil {
		g.resume = make(chan struct{})
	}
}

// Resume forwards the held requests and every later one.
func (g *pushGate) Resume() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.resume != nil {
		close(g.resume)
		g.resume = nil
	}
}

// Held counts requests waiting at the gate.
func (g *pushGate) Held() int { return int(g.held.Load()) }

// InFlight counts forwarded requests not yet answered.
func (g *pushGate) InFlight() int { return int(g.inFlight.Load()) }

// buildHerald builds the real binary into dir.
func buildHerald(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "herald")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Stderr = os.Stderr
	if out, err := cmd.Output(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// process is the real binary running `herald serve`.
type process struct {
	cmd    *exec.Cmd
	logs   *testsupport.Buffer
	exited chan struct{}
}

// startBinary runs bin with exactly env (and a fresh HERALD_ADDR), waits
// for /readyz, and returns a harness client for it (h's HTTP callers
// work on it; h.Env is env) and the process. The test's cleanup stops it.
func startBinary(t *testing.T, bin string, d sqlstoretest.Dialect, env map[string]string) (*herald, *process) {
	t.Helper()
	env = maps.Clone(env)
	env["HERALD_ADDR"] = freeAddr(t)
	p := &process{logs: &testsupport.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, "serve")
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(30 * time.Second):
			p.cmd.Process.Kill()
			select {
			case <-p.exited:
			case <-time.After(stopWait):
				t.Errorf("the binary had not exited %s after SIGKILL", stopWait)
			}
		}
		if t.Failed() {
			t.Logf("binary logs (%s):\n%s", d, testsupport.Tail(p.logs.String(), 100))
		}
	})
	h := &herald{BaseURL: "http://" + env["HERALD_ADDR"], DBURL: env["HERALD_DATABASE_URL"], Env: env,
		client: &http.Client{Timeout: 60 * time.Second}}
	deadline := time.Now().Add(startWait)
	for {
		select {
		case <-p.exited:
			t.Fatalf("the binary exited before it was ready:\n%s", p.logs.String())
		default:
		}
		if resp, err := h.client.Get(h.BaseURL + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return h, p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the binary is not ready after %s:\n%s", startWait, p.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *process) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	testsupport.Receive(t, p.exited, stopWait, "the binary's exit after SIGKILL")
}

// binaryEnv is the configuration of a binary under test: the harness
// defaults, no rate limits, a fresh database; nothing from this process's
// environment.
func binaryEnv(t *testing.T, d sqlstoretest.Dialect, extra map[string]string) map[string]string {
	env := testDefaults()
	maps.Copy(env, sessionEnv(nil))
	env["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, d)
	// These servers send no email: they log any, as production allows
	// only when asked.
	env["HERALD_MAIL_TO_LOG"] = "on"
	maps.Copy(env, extra)
	return env
}

func TestBinaryE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildHerald(t, t.TempDir())
	t.Run("BroadcastSurvivesKill", func(t *testing.T) {
		forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) { testBroadcastSurvivesKill(t, bin, d) })
	})
	t.Run("ProvidersOverTLS", func(t *testing.T) {
		forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) { testProvidersThroughBinary(t, bin, d) })
	})
	t.Run("WebhookSurvivesKill", func(t *testing.T) {
		forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) { testWebhookSurvivesKill(t, bin, d) })
	})
}

// SIGKILL mid-broadcast, then a restart: the job completes and every
// device got exactly one message. The gate makes exactly-once assertable:
// before the kill it stops forwarding, and the kill comes once every
// message the fake accepted is recorded (the job's sent equals what the
// fake got), so no send is in the window docs/operations.md documents (accepted
// by the provider, not yet recorded). The held sends never reach the fake;
// the restarted server sends them again.
func testBroadcastSurvivesKill(t *testing.T, bin string, d sqlstoretest.Dialect) {
	const devicesN = 6000
	fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
	gate := newPushGate(t, fake.URL)
	env := binaryEnv(t, d, nil)
	maps.Copy(env, pushEnv(t, fake, gate.URL, map[string]string{
		"HERALD_PUSH_RATE":      "2000",
		"HERALD_PUSH_LEASE_TTL": "2s",
		"HERALD_LOG_LEVEL":      "warn",
	}))
	if _, stderr, err := runHerald(t, env, "", "admin", "create", "--email", "ops@example.com", "--password", testPassword); err != nil {
		t.Fatalf("admin create: %v\n%s", err, stderr)
	}
	tokens := seedDevices(t, env, devicesN, 5, func(email string) {
		if _, stderr, err := runHerald(t, env, "", "admin", "create", "--email", email, "--password", testPassword); err != nil {
			t.Fatalf("create %s: %v\n%s", email, err, stderr)
		}
	})

	h, p := startBinary(t, bin, d, env)
	admin := login(t, h, restDoor.name, "ops@example.com", testPassword).access
	jobID, total := broadcast(t, h, admin, notify(pushSubject, pushContent, testData))
	if total != devicesN {
		t.Fatalf("totalRecipients %d, want %d", total, devicesN)
	}
	// Pause in the middle of a batch (500 devices): the kill then leaves
	// deliveries of one batch recorded, in flight and not yet sent.
	eventually(t, func() bool { return fake.TotalDelivered() >= 1250 }, "the broadcast never got going")
	gate.Pause()
	var atKill map[string]any
	eventually(t, func() bool {
		if gate.InFlight() != 0 || gate.Held() == 0 {
			return false
		}
		atKill = notificationJob(t, h, admin, jobID)
		return asInt(t, atKill["sent"]) == fake.TotalDelivered()
	}, "the job never recorded what the fake had received")
	delivered := fake.TotalDelivered()
	if atKill["status"] != "running" || delivered >= devicesN {
		t.Fatalf("at the kill: job %v, %d delivered; want a running job mid-way", atKill, delivered)
	}
	p.kill(t)
	// The held sends die with their connections; none may be forwarded.
	eventually(t, func() bool { return gate.Held() == 0 }, "sends still held after the kill")
	gate.Resume()
	if n := fake.TotalDelivered(); n != delivered {
		t.Fatalf("the fake got %d messages after the kill, want %d", n, delivered)
	}
	t.Logf("killed after %d of %d deliveries", delivered, devicesN)

	h2, _ := startBinary(t, bin, d, env)
	admin = login(t, h2, restDoor.name, "ops@example.com", testPassword).access
	job := waitJob(t, h2, admin, jobID, jobWait, func(j map[string]any) bool {
		return j["status"] != "queued" && j["status"] != "running"
	}, "finished after the restart")
	expectFinishedJob(t, job, "completed", devicesN, devicesN, 0, 0)
	if got := fake.TotalDelivered(); got != devicesN {
		t.Fatalf("the fake got %d messages, want %d", got, devicesN)
	}
	for _, tok := range tokens {
		if n := fake.Delivered(tok); n != 1 {
			t.Fatalf("%s got %d messages, want exactly 1", tok, n)
		}
	}
	for _, m := range fake.Messages() {
		if m.Title != pushSubject || m.Body != pushContent || !maps.Equal(m.Data, fcmData) {
			t.Fatalf("message to %s: %+v", m.Token, m)
		}
	}
}

// fakeRoots writes the certificates the TLS servers present as a PEM file,
// for SSL_CERT_FILE.
func fakeRoots(t *testing.T, serverURLs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, s := range serverURLs {
		u, _ := url.Parse(s)
		conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range conn.ConnectionState().PeerCertificates {
			pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: c.Raw})
		}
		conn.Close()
	}
	path := filepath.Join(t.TempDir(), "roots.pem")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Both providers over TLS through the binary's own wiring: APNs
// (HERALD_APNS_*) for ios and FCM (HTTP/2 over TLS, as in production) for
// android. Through APNs: a single send with the payload as APNs receives
// it, each dead-token answer, a retryable answer, a provider down, and a
// small broadcast.
func testProvidersThroughBinary(t *testing.T, bin string, d sqlstoretest.Dialect) {
	const keyID, teamID = "KEYID12345", "TEAMID1234"
	fake := apnstest.NewServer(t)
	fcmFake := fcmtest.NewServer(t)
	keyFile := filepath.Join(t.TempDir(), "AuthKey.p8")
	if err := os.WriteFile(keyFile, fake.NewKey(keyID, teamID), 0o600); err != nil {
		t.Fatal(err)
	}
	env := binaryEnv(t, d, map[string]string{
		"HERALD_APNS_KEY_FILE": keyFile,
		"HERALD_APNS_KEY_ID":   keyID,
		"HERALD_APNS_TEAM_ID":  teamID,
		"HERALD_APNS_TOPIC":    fake.Topic,
		"HERALD_APNS_ENDPOINT": fake.URL,
		"SSL_CERT_FILE":        fakeRoots(t, fake.URL, fcmFake.URL),
	})
	maps.Copy(env, pushEnv(t, fcmFake, fcmFake.URL, nil))
	if _, stderr, err := runHerald(t, env, "", "admin", "create", "--email", "ops@example.com", "--password", testPassword); err != nil {
		t.Fatalf("admin create: %v\n%s", err, stderr)
	}
	deadTokens := map[string]apnstest.Fault{
		"apns-bad":       apnstest.BadDeviceToken(),
		"apns-not-topic": apnstest.DeviceTokenNotForTopic(),
		"apns-gone":      apnstest.Unregistered(),
		"apns-expired":   apnstest.ExpiredToken(),
	}
	var lines []string
	for _, tok := range append(slices.Sorted(maps.Keys(deadTokens)), "apns-ok", "apns-down", "apns-flaky") {
		lines = append(lines, fmt.Sprintf(`{"email":"ops@example.com","platform":"ios","pushToken":%q}`, tok))
	}
	lines = append(lines, `{"email":"ops@example.com","platform":"android","pushToken":"fcm-tls"}`)
	file := filepath.Join(t.TempDir(), "ios.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o600)
	if out, stderr, err := runHerald(t, env, "", "devices", "import", "--file", file); err != nil || !strings.HasPrefix(out, "imported 8,") {
		t.Fatalf("import: %v\n%s%s", err, out, stderr)
	}

	h, _ := startBinary(t, bin, d, env)
	admin := login(t, h, restDoor.name, "ops@example.com", testPassword).access
	ids := map[string]string{}
	for _, dev := range adminDevices(t, h, admin, "", 100) {
		ids[dev["pushToken"].(string)] = dev["deviceId"].(string)
	}

	expectOK(t, "send through APNs", sendOne(t, h, admin, ids["apns-ok"], notify("Hello", "From APNs", testData)), http.StatusOK)
	msgs := fake.MessagesFor("apns-ok")
	if len(msgs) != 1 {
		t.Fatalf("APNs got %d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.Title != "Hello" || m.Body != "From APNs" || m.Topic != fake.Topic || m.PushType != "alert" {
		t.Fatalf("APNs got %+v", m)
	}
	// APNs keeps the data's JSON types, at the top level of the payload.
	if m.Payload["screen"] != "status" || m.Payload["n"] != float64(42) || m.Payload["urgent"] != true || jsonPath(m.Payload, "nested", "a") == nil {
		t.Fatalf("APNs payload %v, want the data keys with their JSON types", m.Payload)
	}

	// FCM as in production: OAuth token and sends over HTTP/2 and TLS.
	expectOK(t, "send through FCM over TLS", sendOne(t, h, admin, ids["fcm-tls"], notify("Hello", "From FCM", testData)), http.StatusOK)
	if fm := fcmFake.MessagesFor("fcm-tls"); len(fm) != 1 || fm[0].Proto != "HTTP/2.0" || fm[0].Title != "Hello" || !maps.Equal(fm[0].Data, fcmData) {
		t.Fatalf("FCM got %+v, want one HTTP/2 message with the title and data", fm)
	}
	if fcmFake.TokenRequests() == 0 || len(fake.MessagesFor("fcm-tls")) != 0 {
		t.Fatal("the android device was not routed to FCM with an OAuth token")
	}

	for tok, fault := range deadTokens {
		fake.Fail(tok, -1, fault)
		expectError(t, fault.Reason, sendOne(t, h, admin, ids[tok], notify("Hi", "there", nil)), 422, "INVALID_PUSH_TOKEN")
		expectError(t, fault.Reason+" again", sendOne(t, h, admin, ids[tok], notify("Hi", "again", nil)), 422, "INVALID_PUSH_TOKEN")
		if n := fake.Attempts(tok); n != 1 {
			t.Fatalf("%s: %d APNs calls, want 1 (the second send must not call the provider)", fault.Reason, n)
		}
	}
	fake.Fail("apns-flaky", 1, apnstest.ServiceUnavailable())
	expectOK(t, "a 503 then success", sendOne(t, h, admin, ids["apns-flaky"], notify("Hi", "retry", nil)), http.StatusOK)
	if a, n := fake.Attempts("apns-flaky"), fake.Delivered("apns-flaky"); a != 2 || n != 1 {
		t.Fatalf("flaky: %d attempts, %d delivered; want 2 and 1", a, n)
	}
	fake.Fail("apns-down", -1, apnstest.InternalServerError())
	expectError(t, "APNs keeps failing", sendOne(t, h, admin, ids["apns-down"], notify("Hi", "down", nil)), http.StatusBadGateway, "UPSTREAM_ERROR")
	fake.Fail("apns-down", 0, apnstest.Fault{})

	// The broadcast reaches the four devices whose tokens are alive.
	before := fake.TotalDelivered()
	fcmBefore := fcmFake.TotalDelivered()
	jobID, total := broadcast(t, h, admin, notify("All", "devices", nil))
	if total != 4 {
		t.Fatalf("totalRecipients %d, want 4 (four tokens are dead)", total)
	}
	job := waitJob(t, h, admin, jobID, jobWait, jobStatusIs("completed"), "completed")
	expectFinishedJob(t, job, "completed", 4, 4, 0, 0)
	if a, f := fake.TotalDelivered()-before, fcmFake.TotalDelivered()-fcmBefore; a != 3 || f != 1 {
		t.Fatalf("the broadcast reached APNs %d and FCM %d times, want 3 and 1", a, f)
	}
}
