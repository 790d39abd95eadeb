package main

// A database that refuses connections at start: serve listens at once,
// answers 503 with Retry-After (and /healthz alive) while it waits with
// backoff, and takes over with the real handler on the same listener when
// the database answers; past HERALD_DATABASE_START_TIMEOUT, or at once
// for an error retrying cannot fix, it exits 1 saying why; a stop while
// it waits exits 0.

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// startingServer is `herald serve` run through run(), as main does, that
// may still be waiting for its database: h talks to its listener.
type startingServer struct {
	h      *herald
	cancel context.CancelFunc
	done   chan error
}

// launchStarting runs serve with env over testDefaults and waits for its
// listener (the "starting" log line), not for readiness. The test's
// cleanup stops it.
func launchStarting(t *testing.T, env map[string]string) *startingServer {
	t.Helper()
	h := &herald{
		SMTP:   mailtest.NewServer(t),
		stdout: &testsupport.Buffer{},
		stderr: &testsupport.Buffer{},
		Env:    testDefaults(),
		client: &http.Client{Timeout: 60 * time.Second},
	}
	h.Env["HERALD_SMTP_URL"] = h.SMTP.URL()
	h.Env["HERALD_ADDR"] = "127.0.0.1:0"
	maps.Copy(h.Env, env)
	h.DBURL = h.Env["HERALD_DATABASE_URL"]
	ctx, cancel := context.WithCancel(context.Background())
	s := &startingServer{h: h, cancel: cancel, done: make(chan error, 1)}
	go func() {
		s.done <- run(ctx, []string{"serve"}, func(k string) string { return h.Env[k] }, strings.NewReader(""), h.stdout, h.stderr)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(stopWait):
			t.Errorf("run did not return within %s of cancel", stopWait)
		}
		if t.Failed() {
			t.Logf("herald logs:\n%s", testsupport.Tail(h.logs(), 100))
		}
	})
	return s
}

// listening waits for the listener's address, failing if run returns
// first.
func (s *startingServer) listening(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(startWait)
	for {
		if addr := testsupport.StartingAddr(s.h.logs()); addr != "" {
			s.h.BaseURL = "http://" + addr
			return
		}
		select {
		case err := <-s.done:
			t.Fatalf("run returned %v before listening", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no listener after %s", startWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// result waits for run to return by itself (within stopWait).
func (s *startingServer) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return err
	case <-time.After(stopWait):
		t.Fatalf("run has not returned after %s", stopWait)
		return nil
	}
}

// retried waits for the log line of a failed attempt to reach the
// database.
func (s *startingServer) retried(t *testing.T) {
	t.Helper()
	eventually(t, func() bool { return s.h.logsMention(t, "database not reachable yet") }, "no attempt to reach the database was logged as retried")
}

// closedPostgresURL is a PostgreSQL URL at a loopback port nobody
// listens on.
func closedPostgresURL(t *testing.T) string {
	t.Helper()
	return "postgres://postgres@" + freeAddr(t) + "/test?sslmode=disable"
}

func TestStartWaitsForDatabase(t *testing.T) {
	t.Parallel()
	fresh := sqlstoretest.NewURL(t, "postgres")
	u, err := url.Parse(fresh)
	if err != nil {
		t.Fatal(err)
	}
	proxy := testsupport.NewTCPProxy(t, u.Host)
	proxy.Cut() // connections refused until restore
	s := launchStarting(t, map[string]string{
		"HERALD_DATABASE_URL":           withHostPort(fresh, proxy.Addr),
		"HERALD_DATABASE_START_TIMEOUT": "10m",
		// A starting server counts no limit, so its 503s carry no
		// X-RateLimit-* (apidoc/openapi.yaml says so); the contract check
		// expects them only while the global tier is on.
		"HERALD_RATE_LIMIT_GLOBAL": "0",
	})
	s.listening(t)
	s.retried(t)
	h := s.h

	// Waiting: alive, not ready, every route 503 with Retry-After.
	if status, _, raw := h.do(t, http.MethodGet, "/healthz", nil); status != http.StatusOK {
		t.Errorf("/healthz while waiting: %d %s, want 200", status, raw)
	}
	if status, hdr, raw := h.do(t, http.MethodGet, "/readyz", nil); status != http.StatusServiceUnavailable || hdr.Get("Retry-After") == "" {
		t.Errorf("/readyz while waiting: %d Retry-After %q %s, want 503 with Retry-After", status, hdr.Get("Retry-After"), raw)
	}
	for _, path := range []string{"/api/v1/users/me", "/api/v1/auth/login"} {
		method := http.MethodGet
		var body any
		if strings.HasSuffix(path, "login") {
			method, body = http.MethodPost, map[string]any{"email": "a@example.com", "password": goodPassword}
		}
		status, env, hdr := h.rest(t, method, path, body)
		if code := jsonPath(env, "error", "code"); status != http.StatusServiceUnavailable || code != "SERVICE_UNAVAILABLE" || hdr.Get("Retry-After") == "" || hdr.Get("X-Request-ID") == "" {
			t.Errorf("%s %s while waiting: %d %v Retry-After %q, want 503 SERVICE_UNAVAILABLE with Retry-After", method, path, status, code, hdr.Get("Retry-After"))
		}
	}
	select {
	case err := <-s.done:
		t.Fatalf("run returned %v while the database refused (HERALD_DATABASE_START_TIMEOUT=10m)", err)
	default:
	}

	// The database answers: migrations run, the real handler takes over
	// on the same listener.
	proxy.Restore(t)
	// Up to a capped backoff, then the migrations: startWait's bound.
	testsupport.Eventually(t, startWait, func() bool {
		a := rawDo(h, http.MethodGet, "/readyz", nil)
		return a.err == nil && a.status == http.StatusOK
	}, "/readyz not 200 after the database came back")
	if !h.logsMention(t, "database reachable") || !h.logsMention(t, "migrations applied") || !h.logsMention(t, "herald listening") {
		t.Error("the log does not say that the database became reachable, was migrated and the server listens")
	}
	signup(t, h, restDoor, "late@example.com", goodPassword)
	if status, env, _ := h.rest(t, http.MethodGet, "/api/v1/users/me", nil); status != http.StatusUnauthorized || jsonPath(env, "error", "code") != "AUTH_REQUIRED" {
		t.Errorf("users/me without a token once ready: %d %v, want 401 AUTH_REQUIRED", status, env)
	}

	s.cancel()
	if err := s.result(t); err != nil {
		t.Errorf("run after a stop = %v, want nil", err)
	}
}

// Past HERALD_DATABASE_START_TIMEOUT serve exits 1 with the reason.
func TestStartTimeoutExits(t *testing.T) {
	t.Parallel()
	s := launchStarting(t, map[string]string{
		"HERALD_DATABASE_URL":           closedPostgresURL(t),
		"HERALD_DATABASE_START_TIMEOUT": "3s",
	})
	err := s.result(t)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("run = %v (exit %d), want an error, exit 1", err, exitCode(err))
	}
	for _, want := range []string{"not reachable within HERALD_DATABASE_START_TIMEOUT (3s", "connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}
	if !s.h.logsMention(t, "database not reachable yet") {
		t.Error("no retry was logged before giving up")
	}
}

// A stop (SIGTERM, SIGINT: run's context) while serve waits ends it at
// once, exit 0.
func TestStartStopWhileWaiting(t *testing.T) {
	t.Parallel()
	s := launchStarting(t, map[string]string{
		"HERALD_DATABASE_URL":           closedPostgresURL(t),
		"HERALD_DATABASE_START_TIMEOUT": "10m",
	})
	s.listening(t)
	s.retried(t)
	s.cancel()
	if err := s.result(t); err != nil {
		t.Fatalf("run after a stop while waiting = %v, want nil", err)
	}
	if !s.h.logsMention(t, "stopped while waiting for the database") {
		t.Error("the log does not say the start was stopped")
	}
	if a := rawDo(s.h, http.MethodGet, "/healthz", nil); a.err == nil {
		t.Errorf("the listener still answers (%d) after run returned", a.status)
	}
}

// The same with the real binary and a real SIGTERM: exit status 0.
func TestStartSIGTERMWhileWaiting(t *testing.T) {
	t.Parallel()
	bin := buildHerald(t, t.TempDir())
	logs := &testsupport.Buffer{}
	cmd := exec.Command(bin, "serve")
	cmd.Env = []string{"HERALD_ENV=development", "HERALD_ADDR=127.0.0.1:0", "HERALD_LOG_FORMAT=json",
		"HERALD_DATABASE_URL=" + closedPostgresURL(t), "HERALD_DATABASE_START_TIMEOUT=10m"}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if t.Failed() {
			t.Logf("binary logs:\n%s", testsupport.Tail(logs.String(), 50))
		}
	})
	eventually(t, func() bool { return strings.Contains(logs.String(), "database not reachable yet") }, "the binary logged no retry")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("the binary after SIGTERM while waiting: %v, want exit status 0", err)
		}
	case <-time.After(stopWait):
		t.Fatalf("the binary had not exited %s after SIGTERM", stopWait)
	}
	if !strings.Contains(logs.String(), "stopped while waiting for the database") {
		t.Error("the log does not say the start was stopped")
	}
}

// An error that waiting cannot fix stops the start at once (exit 1),
// however long HERALD_DATABASE_START_TIMEOUT is, and is not retried.
func TestStartFailsFastOnPermanentErrors(t *testing.T) {
	t.Parallel()
	base := postgresBase(t)
	for _, tc := range []struct {
		name, url, want string
	}{
		{"no such database", withPath(base, "/herald_no_such_database"), `database "herald_no_such_database" does not exist`},
		{"no such role", withUser(base, "herald_no_such_role"), `role "herald_no_such_role" does not exist`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := launchStarting(t, map[string]string{"HERALD_DATABASE_URL": tc.url, "HERALD_DATABASE_START_TIMEOUT": "10m"})
			err := s.result(t)
			if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run = %v (exit %d), want exit 1 saying %s", err, exitCode(err), tc.want)
			}
			if s.h.logsMention(t, "database not reachable yet") {
				t.Error("the error was retried")
			}
		})
	}
}

// The test harnesses find a starting server's address by its first line.
func TestStartingMessageIsTheHarnesses(t *testing.T) {
	if startingMessage != testsupport.StartingMessage {
		t.Fatalf("serve logs %q at start, the harnesses look for %q", startingMessage, testsupport.StartingMessage)
	}
}
