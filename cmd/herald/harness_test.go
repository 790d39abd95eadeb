package main

// The end-to-end harness: it starts the real server through run(), exactly
// as main does, on a free loopback port, against a fresh real database
// (SQLite, and PostgreSQL when HERALD_TEST_POSTGRES_URL is set; skipped
// otherwise) and a real SMTP server on loopback (mailtest). Tests talk to
// it over HTTP only.
//
// Reuse it for any feature test:
//
//	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
//		h := startHerald(t, d, map[string]string{"HERALD_RESEND_COOLDOWN": "1s"})
//		status, body := h.graphql(t, `{ version }`, nil, withBearer(token))
//		status, env, hdr := h.rest(t, "POST", "/api/v1/auth/register", map[string]any{...})
//		msg := h.SMTP.WaitForMessage(t, "a@example.com", mailWait)
//		if h.logsMention(t, secret) { ... }
//	})

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
	"go.opentelemetry.io/otel/trace"
)

// Generous bounds for things that happen in the background. They are
// deadlines for polling, never assertions about how long something took.
const (
	startWait = 60 * time.Second // server up (a loaded CI machine has taken 30 s)
	mailWait  = 20 * time.Second // an email arrives
	pollWait  = 20 * time.Second // any other eventual condition
	stopWait  = 60 * time.Second // a server or process stops once told to
)

// testDefaults is the configuration every harness server starts with;
// startHerald's env map is layered over it (and over nothing else: the
// process environment is never read, so tests are hermetic).
func testDefaults() map[string]string {
	return map[string]string{
		"HERALD_LOG_FORMAT":         "json",
		"HERALD_LOG_LEVEL":          "info",
		"HERALD_MAIL_FROM":          "Herald <no-reply@herald.test>",
		"HERALD_ARGON2_MEMORY":      "1024",
		"HERALD_ARGON2_ITERATIONS":  "1",
		"HERALD_ARGON2_PARALLELISM": "1",
		// Hashes wait rather than being shed on a loaded test machine;
		// the overload tests set their own bounds.
		"HERALD_HASH_QUEUE": "1000",
		"HERALD_HASH_WAIT":  "1m",
		// Every line is written at once, so a test reads a line as soon
		// as it is logged; TestE2EGracefulShutdown holds the batching.
		"HERALD_LOG_FLUSH_INTERVAL": "0",
		"HERALD_JOB_POLL":           "50ms",
		"HERALD_JOB_RETRY_BASE":     "50ms",
		"HERALD_JOB_RETRY_MAX":      "200ms",
		"HERALD_SHUTDOWN_TIMEOUT":   "10s",
		// The tests read the metrics on the API's address (h.metric);
		// production serves them there only when asked.
		"HERALD_METRICS_PUBLIC": "on",
		// Secrets are sealed in the database, as in production: every
		// test that signs a webhook or a token reads them through it.
		"HERALD_ENCRYPTION_KEY": testEncryptionKey,
	}
}

// testEncryptionKey is the harness servers' HERALD_ENCRYPTION_KEY.
const testEncryptionKey = "5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed5eed"

// herald is one running server and what it is wired to.
type herald struct {
	BaseURL string            // http://127.0.0.1:PORT
	DBURL   string            // HERALD_DATABASE_URL
	SMTP    *mailtest.Server  // the server's mail relay
	Env     map[string]string // the effective configuration

	stdout, stderr *testsupport.Buffer
	client         *http.Client
	cancel         context.CancelFunc
	done           chan error

	tracerProvider trace.TracerProvider

	mu      sync.Mutex
	stopped bool
	runErr  error
	db      *sqlstore.DB
}

// forEachDialect runs fn as a parallel subtest per database
// (sqlstoretest.Dialects); the subtest of one this run cannot reach is
// skipped.
func forEachDialect(t *testing.T, fn func(t *testing.T, d sqlstoretest.Dialect)) {
	t.Helper()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			sqlstoretest.Require(t, d)
			t.Parallel()
			fn(t, d)
		})
	}
}

// startHerald starts `herald serve` through run() with a fresh database of
// dialect d and its own SMTP server, waits until /readyz answers, and stops
// it when the test ends (failing the test if run does not return nil). env
// overrides testDefaults and the per-server values (HERALD_DATABASE_URL,
// HERALD_SMTP_URL, HERALD_ADDR); an empty value means "unset".
func startHerald(t testing.TB, d sqlstoretest.Dialect, env map[string]string) *herald {
	t.Helper()
	return startHeraldTraced(t, d, env, nil)
}

// startHeraldTraced is startHerald with the server's spans going to tp
// (nil: tracing as the variables say, which is off).
func startHeraldTraced(t testing.TB, d sqlstoretest.Dialect, env map[string]string, tp trace.TracerProvider) *herald {
	t.Helper()
	h := &herald{
		tracerProvider: tp,
		SMTP:           mailtest.NewServer(t),
		stdout:         &testsupport.Buffer{},
		stderr:         &testsupport.Buffer{},
		Env:            testDefaults(),
	}
	h.Env["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, d)
	h.Env["HERALD_SMTP_URL"] = h.SMTP.URL()
	for k, v := range env {
		h.Env[k] = v
	}
	h.DBURL = h.Env["HERALD_DATABASE_URL"]
	transport := http.DefaultTransport.(*http.Transport).Clone()
	h.client = &http.Client{Transport: transport, Timeout: 60 * time.Second}

	// Port 0 unless the test chose an address: launch reads the bound one
	// from the log, so no other test process can take it in between.
	if h.Env["HERALD_ADDR"] == "" {
		h.Env["HERALD_ADDR"] = "127.0.0.1:0"
	} else {
		h.BaseURL = "http://" + h.Env["HERALD_ADDR"]
	}
	if err := h.launch(t); err != nil {
		t.Fatalf("herald did not start: %v\nlogs:\n%s", err, h.logs())
	}
	t.Cleanup(func() {
		if err := h.stop(); err != nil {
			t.Errorf("run returned %v after cancel, want nil", err)
		}
		transport.CloseIdleConnections()
		if t.Failed() {
			t.Logf("herald logs (%s):\n%s", d, testsupport.Tail(h.logs(), 200))
		}
	})
	return h
}

// launch runs the server in a goroutine and waits for /readyz (/healthz
// answers alive while the server still opens its database); an error
// means run returned (or never became ready), and the server is stopped.
func (h *herald) launch(t testing.TB) error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	getenv := func(k string) string { return h.Env[k] }
	if h.tracerProvider != nil {
		env := &environment{getenv: getenv, stdin: strings.NewReader(""), stdout: h.stdout, stderr: h.stderr, tracerProvider: h.tracerProvider}
		go func() { done <- cmdServe(ctx, env, nil) }()
	} else {
		go func() { done <- run(ctx, []string{"serve"}, getenv, strings.NewReader(""), h.stdout, h.stderr) }()
	}
	deadline := time.Now().Add(startWait)
	for {
		select {
		case err := <-done:
			cancel()
			return fmt.Errorf("run returned before the server was ready: %v", err)
		default:
		}
		if h.BaseURL == "" {
			if addr := testsupport.ListenAddr(h.logs()); addr != "" {
				h.BaseURL, h.Env["HERALD_ADDR"] = "http://"+addr, addr
			}
		}
		var err error
		if h.BaseURL != "" {
			req, _ := http.NewRequest(http.MethodGet, h.BaseURL+"/readyz", nil)
			var resp *http.Response
			if resp, err = h.client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					h.cancel, h.done = cancel, done
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			cancel()
			select {
			case <-done:
			case <-time.After(stopWait):
				return fmt.Errorf("/readyz not answering 200 after %s (last error %v), and run did not return within %s of cancel", startWait, err, stopWait)
			}
			return fmt.Errorf("/readyz not answering 200 after %s (last error %v)", startWait, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stop cancels the server's context and waits for run to return, giving
// its error. It is idempotent; startHerald's cleanup calls it.
func (h *herald) stop() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return h.runErr
	}
	h.stopped = true
	if h.db != nil {
		h.db.Close()
		h.db = nil
	}
	h.cancel()
	select {
	case h.runErr = <-h.done:
	case <-time.After(stopWait):
		h.runErr = fmt.Errorf("run did not return within %s of cancel", stopWait)
	}
	return h.runErr
}

// logs returns everything the server wrote to stderr (its JSON log).
func (h *herald) logs() string { return h.stderr.String() }

// logsMention reports whether s appears anywhere in the log: in its raw
// text, or in any key or string value of a log line once decoded. The
// decoded form matters: the JSON handler escapes quotes, backslashes and
// control characters, so a raw search for such a string could never match.
func (h *herald) logsMention(t testing.TB, s string) bool {
	t.Helper()
	if strings.Contains(h.logs(), s) {
		return true
	}
	var mentions func(v any) bool
	mentions = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.Contains(v, s)
		case map[string]any:
			for k, e := range v {
				if strings.Contains(k, s) || mentions(e) {
					return true
				}
			}
		case []any:
			for _, e := range v {
				if mentions(e) {
					return true
				}
			}
		}
		return false
	}
	for _, line := range h.logLines(t) {
		if mentions(line) {
			return true
		}
	}
	return false
}

// logLines parses the JSON log, one object per line.
func (h *herald) logLines(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(h.logs()) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// reqOption adjusts a request before it is sent.
type reqOption func(*http.Request)

// withHeader sets one request header.
func withHeader(key, value string) reqOption {
	return func(r *http.Request) { r.Header.Set(key, value) }
}

// withBearer sets Authorization: Bearer token.
func withBearer(token string) reqOption { return withHeader("Authorization", "Bearer "+token) }

// do sends one request and returns the status, headers and body. body may
// be nil, []byte or string (sent as is), or anything else (sent as JSON);
// a body is sent as application/json unless an option says otherwise.
func (h *herald) do(t testing.TB, method, path string, body any, opts ...reqOption) (int, http.Header, []byte) {
	t.Helper()
	a := rawDo(h, method, path, body, opts...)
	if a.err != nil {
		t.Fatal(a.err)
	}
	return a.status, a.hdr, a.raw
}

// answer is a raw HTTP answer, or the error that prevented one.
type answer struct {
	status int
	hdr    http.Header
	raw    []byte
	err    error
}

// rawDo is do without t, for goroutines: it never fails the test but
// returns the error, to be reported from the test goroutine. Every
// exchange is also checked against apidoc/openapi.yaml (checkContract): an
// answer the document does not describe is returned as an error.
func rawDo(h *herald, method, path string, body any, opts ...reqOption) answer {
	var enc []byte
	switch b := body.(type) {
	case nil:
	case []byte:
		enc = b
	case string:
		enc = []byte(b)
	default:
		var err error
		if enc, err = json.Marshal(b); err != nil {
			return answer{err: fmt.Errorf("%s %s: encode request body: %v", method, path, err)}
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequest(method, h.BaseURL+path, rd)
	if err != nil {
		return answer{err: fmt.Errorf("%s %s: %v", method, path, err)}
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, o := range opts {
		o(req)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return answer{err: fmt.Errorf("%s %s: %v", method, path, err)}
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{err: fmt.Errorf("%s %s: read body: %v", method, path, err)}
	}
	a := answer{status: resp.StatusCode, hdr: resp.Header, raw: raw}
	a.err = checkContract(h, method, path, req.Header, enc, a)
	return a
}

// graphql posts {query, variables} to /graphql and decodes the answer,
// which must be a JSON object.
func (h *herald) graphql(t testing.TB, query string, vars map[string]any, opts ...reqOption) (int, map[string]any) {
	t.Helper()
	status, body, _ := h.graphqlHeader(t, query, vars, opts...)
	return status, body
}

// graphqlHeader is graphql that also returns the response headers.
func (h *herald) graphqlHeader(t testing.TB, query string, vars map[string]any, opts ...reqOption) (int, map[string]any, http.Header) {
	t.Helper()
	req := map[string]any{"query": query}
	if vars != nil {
		req["variables"] = vars
	}
	status, hdr, raw := h.do(t, http.MethodPost, "/graphql", req, opts...)
	return status, decodeObject(t, "POST /graphql", raw), hdr
}

// rest sends a request to a REST path and decodes the envelope, which every
// REST answer must be: a JSON object with a boolean "success".
func (h *herald) rest(t testing.TB, method, path string, body any, opts ...reqOption) (int, map[string]any, http.Header) {
	t.Helper()
	status, hdr, raw := h.do(t, method, path, body, opts...)
	return status, restEnvelope(t, method+" "+path, hdr, raw), hdr
}

// restEnvelope decodes a REST answer, which must be the envelope: a JSON
// object with a boolean "success", sent as application/json.
func restEnvelope(t testing.TB, what string, hdr http.Header, raw []byte) map[string]any {
	t.Helper()
	env := decodeObject(t, what, raw)
	if _, ok := env["success"].(bool); !ok {
		t.Fatalf("%s: answer is not the envelope (no boolean success): %s", what, raw)
	}
	if ct := hdr.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	return env
}

func decodeObject(t testing.TB, what string, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		t.Fatalf("%s: answer is not a JSON object (%v): %.500s", what, err, raw)
	}
	return m
}

// store opens the server's own database (the same URL) for tests that
// check what is not observable over the API. It is closed before the
// server stops.
func (h *herald) store(t testing.TB) *sqlstore.DB {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		t.Fatal("store: the server has stopped")
	}
	if h.db == nil {
		// The server's keys, so that the secrets it sealed read back.
		cfg, err := config.Load(func(k string) string { return h.Env[k] })
		if err != nil {
			t.Fatalf("the server's configuration: %v", err)
		}
		keys, err := encryptionKeys(cfg)
		if err != nil {
			t.Fatal(err)
		}
		db, err := sqlstore.Open(context.Background(), h.DBURL, sqlstore.Options{Keys: keys})
		if err != nil {
			t.Fatalf("open the server's database: %v", err)
		}
		h.db = db
	}
	return h.db
}

// account reads an account straight from the database.
func (h *herald) account(t testing.TB, email string) accounts.Account {
	t.Helper()
	a, err := h.store(t).AccountByEmail(context.Background(), email)
	if err != nil {
		t.Fatalf("account %s: %v", email, err)
	}
	return a
}

// expectNoAccount fails unless the database has no account with email:
// AccountByEmail must answer not found (any other error fails too).
func (h *herald) expectNoAccount(t testing.TB, email, why string) {
	t.Helper()
	a, err := h.store(t).AccountByEmail(context.Background(), email)
	switch {
	case err == nil:
		t.Errorf("%s: account %s (%q) exists, want none", why, a.ID, email)
	case !errors.Is(err, storage.ErrNotFound):
		t.Errorf("%s: look up %q: %v, want not found", why, email, err)
	}
}

// sendStats reads the bookkeeping of an account's code emails of purpose
// (verification or password reset).
func (h *herald) sendStats(t testing.TB, email string, purpose accounts.Purpose) accounts.SendStats {
	t.Helper()
	a := h.account(t, email)
	st, err := h.store(t).SendStats(context.Background(), a.ID, purpose, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatalf("%s send stats of %s: %v", purpose, email, err)
	}
	return st
}

// code waits for the n-th email to email (n from 1), checks it is a
// well-formed code email (a text part with the 6-digit code on a line of
// its own, an HTML part carrying the same code), and returns the code. The
// server mails a code before it stores it, so code also waits until the
// server has recorded a send of purpose (the code's: verification or
// password reset) that began after the previous email's arrival: from then
// on the code can be checked.
func (h *herald) code(t testing.TB, email string, n int, purpose accounts.Purpose) string {
	t.Helper()
	msgs := h.SMTP.WaitForMessages(t, email, n, mailWait)
	msg := msgs[n-1]
	if msg.ParseErr != nil {
		t.Fatalf("email %d to %s does not parse: %v", n, email, msg.ParseErr)
	}
	code, ok := mailtest.ExtractCode(msg.Text)
	if !ok {
		t.Fatalf("email %d to %s has no 6-digit code on a line of its own:\n%s", n, email, msg.Text)
	}
	if msg.HTML == "" || !strings.Contains(msg.HTML, code) {
		t.Fatalf("email %d to %s: HTML part missing or without the code:\n%s", n, email, msg.HTML)
	}
	// A send is recorded with the moment it began, after the previous
	// email arrived (sends of a purpose take turns): a record that recent
	// is this email's.
	var after time.Time
	if n > 1 {
		after = msgs[n-2].Received
	}
	eventually(t, func() bool {
		last := h.sendStats(t, email, purpose).LastSent
		return !last.IsZero() && !last.Before(after)
	}, "the server never recorded the %s code emailed to %s", purpose, email)
	return code
}

// metric returns the value of one sample of /metrics, such as
// `herald_emails_total{result="sent"}`, or 0 when it is absent.
func (h *herald) metric(t testing.TB, sample string) float64 {
	t.Helper()
	status, _, raw := h.do(t, http.MethodGet, "/metrics", nil)
	if status != http.StatusOK {
		t.Fatalf("GET /metrics: status %d", status)
	}
	for line := range strings.Lines(string(raw)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && name == sample {
			var v float64
			if _, err := fmt.Sscan(value, &v); err != nil {
				t.Fatalf("metric %s: bad value %q", sample, value)
			}
			return v
		}
	}
	return 0
}

// eventually polls cond every 10ms until it holds, failing the test after
// pollWait.
func eventually(t testing.TB, cond func() bool, format string, args ...any) {
	t.Helper()
	testsupport.Eventually(t, pollWait, cond, format, args...)
}

// freeAddr returns a loopback address with a port nobody listened on a
// moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// jsonPath walks nested objects: jsonPath(body, "data", "signup", "success").
// (A short name for the many call sites of the e2e tests.)
var jsonPath = testsupport.JSONPath

// asInt returns a JSON number as an int, failing on anything else or on a
// fraction.
func asInt(t testing.TB, v any) int {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%v (%T) is not a whole number", v, v)
	}
	return int(f)
}

// asStrings returns a JSON array of strings.
func asStrings(t testing.TB, v any) []string {
	t.Helper()
	arr, ok := v.([]any)
	if !ok {
		t.Fatalf("%v (%T) is not an array", v, v)
	}
	out := make([]string, len(arr))
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			t.Fatalf("element %d of %v is not a string", i, v)
		}
		out[i] = s
	}
	return out
}
