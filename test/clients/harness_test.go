// Package clients drives a real Herald with clients nobody here wrote: the
// npm packages of package.json (graphql-js, graphql-http's audits, jose,
// graphql-ws, standardwebhooks) and a headless Chromium through
// playwright-core. Each client is a script in this directory, run by node
// with the server's address in its environment; it exits non-zero, saying
// why, when Herald does not answer as the client expects.
//
// The tests need node and `npm ci` in this directory (.ci/run does both;
// see docs/clients.md, "Browsers (CORS)"), and skip, saying so, without
// them.
package clients

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

const (
	startWait = 30 * time.Second // the server answers /healthz
	nodeWait  = 3 * time.Minute  // one client script runs
	password  = "Secret123"
)

func TestMain(m *testing.M) { harness.Main(m) }

// needNode skips the test, saying why, unless node and this directory's
// node_modules are there.
func needNode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("client scripts not run: node is not installed")
	}
	if _, err := os.Stat("node_modules"); err != nil {
		t.Skip("client scripts not run: run `npm ci` in test/clients first")
	}
}

// server is one running herald binary on SQLite with its own SMTP fake.
type server struct {
	URL  string // http://127.0.0.1:PORT
	Env  map[string]string
	SMTP *mailtest.Server
	logs *testsupport.Buffer
	bin  string
}

// startServer starts `herald serve` on a fresh SQLite database; env is
// layered over light test defaults. It stops at the end of the test.
func startServer(t *testing.T, env map[string]string) *server {
	t.Helper()
	s := &server{SMTP: mailtest.NewServer(t), logs: &testsupport.Buffer{}, bin: harness.Binary(t)}
	s.Env = map[string]string{
		"HERALD_ADDR":               "127.0.0.1:0", // the bound address is read from the log
		"HERALD_DATABASE_URL":       "sqlite:" + filepath.Join(t.TempDir(), "herald.db"),
		"HERALD_SMTP_URL":           s.SMTP.URL(),
		"HERALD_MAIL_FROM":          "Herald <no-reply@herald.test>",
		"HERALD_LOG_FORMAT":         "json",
		"HERALD_ARGON2_MEMORY":      "1024",
		"HERALD_ARGON2_ITERATIONS":  "1",
		"HERALD_ARGON2_PARALLELISM": "1",
		"HERALD_JOB_POLL":           "50ms",
		"HERALD_SHUTDOWN_TIMEOUT":   "5s",
	}
	for k, v := range env {
		s.Env[k] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, s.bin, "serve")
	cmd.Env = s.envList()
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		testsupport.Receive(t, exited, 20*time.Second, "herald to stop")
		if t.Failed() {
			t.Logf("herald's log:\n%s", testsupport.Tail(s.logs.String(), 200))
		}
	})
	deadline := time.Now().Add(startWait)
	var err error
	for {
		if s.URL == "" {
			if addr := testsupport.ListenAddr(s.logs.String()); addr != "" {
				s.URL, s.Env["HERALD_ADDR"] = "http://"+addr, addr
			}
		}
		if s.URL != "" {
			var resp *http.Response
			resp, err = http.Get(s.URL + "/healthz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return s
				}
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("herald exited at start: %v\n%s", err, s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("herald did not answer /healthz within %s: %v\n%s", startWait, err, s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *server) envList() []string {
	out := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range s.Env {
		out = append(out, k+"="+v)
	}
	return out
}

// cli runs the binary with args against the server's database.
func (s *server) cli(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = s.envList()
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("herald %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// call sends one JSON request and decodes the JSON answer.
func (s *server) call(t *testing.T, method, path, bearer string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s %s: %d %q is not JSON", method, path, resp.StatusCode, raw)
	}
	return resp.StatusCode, out
}

// adminToken creates an operator with `herald admin create` and logs in.
func (s *server) adminToken(t *testing.T, email string) string {
	t.Helper()
	s.cli(t, password+"\n", "admin", "create", "--email", email)
	return s.login(t, email)
}

// userToken signs a user up, verifies them with the emailed code and logs
// them in.
func (s *server) userToken(t *testing.T, email string) string {
	t.Helper()
	if status, body := s.call(t, http.MethodPost, "/api/v1/auth/register", "", map[string]any{"email": email, "password": password}); status != http.StatusCreated {
		t.Fatalf("register %s: %d %v", email, status, body)
	}
	msg := s.SMTP.WaitForMessage(t, email, 20*time.Second)
	code, ok := mailtest.ExtractCode(msg.Text)
	if !ok {
		t.Fatalf("no code in the email to %s:\n%s", email, msg.Text)
	}
	if status, body := s.call(t, http.MethodPost, "/api/v1/auth/verify", "", map[string]any{"email": email, "code": code}); status != http.StatusOK {
		t.Fatalf("verify %s: %d %v", email, status, body)
	}
	return s.login(t, email)
}

func (s *server) login(t *testing.T, email string) string {
	t.Helper()
	status, body := s.call(t, http.MethodPost, "/api/v1/auth/login", "", map[string]any{"email": email, "password": password})
	tok, _ := testsupport.JSONPath(body, "data", "token").(string)
	if status != http.StatusOK || tok == "" {
		t.Fatalf("login %s: %d %v", email, status, body)
	}
	return tok
}

// runNode runs `node script` in this directory with env and the server's
// address as HERALD_URL; the test fails with the script's output when it
// exits non-zero. It returns the output.
func runNode(t *testing.T, s *server, script string, env map[string]string) string {
	t.Helper()
	needNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), nodeWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), "HERALD_URL="+s.URL)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("node %s did not finish within %s:\n%s", script, nodeWait, out)
	}
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, out)
	}
	return string(out)
}

// freePort is a TCP port of 127.0.0.1 free a moment ago, for a server
// whose address must be known before it starts (a WebAuthn origin names
// its port).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return port
}
