// Package harness runs the real herald binary as a test would run it in
// production: replicas of `herald serve` behind a round-robin reverse
// proxy, with a fake FCM (fcmtest), a fake Telegram (telegramtest) and a
// fake SMTP server (mailtest) shared by the replicas, and the CLI for
// migrations, accounts and device imports. test/cluster (several replicas
// on one database) and test/faults (the same under faults of PostgreSQL
// and Redis servers it starts itself, see Postgres and Redis) both build
// on it. Production code does not import it.
//
// Every wait is bounded: conditions are polled until a deadline, and the
// deadlines are generous bounds for eventual conditions, never
// measurements.
package harness

import (
	"bytes"
	"context"
	"encoding/json"
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
	"syscall"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const (
	// LeaseTTL is HERALD_PUSH_LEASE_TTL and HERALD_TELEGRAM_POLL_LEASE_TTL
	// of every replica: how long work stays owned by a replica that died.
	LeaseTTL = 3 * time.Second

	StartWait = 30 * time.Second // a replica answers /healthz
	PollWait  = 20 * time.Second // any other eventual condition
	StopWait  = 15 * time.Second // a replica exits after SIGTERM
	KillWait  = 10 * time.Second // a replica is gone after SIGKILL
	HTTPWait  = 30 * time.Second // one HTTP exchange with a replica

	BotToken  = "123456:AAE-herald_cluster_token"
	Project   = "herald-cluster"
	Password  = "Secret123"
	OpsEmail  = "ops@example.com"
	CrowdMail = "crowd@example.com" // the account SeedDevices imports devices to

	fcmLatLo = 50 * time.Millisecond // the fake FCM's answer time, as FCM answers a server
	fcmLatHi = 100 * time.Millisecond
)

// The binary, built once per test process (by the first test that needs
// it) and removed by Main.
var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

// Main runs the tests of a package that uses the harness and removes the
// binary afterwards: func TestMain(m *testing.M) { harness.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// Binary builds cmd/herald (go build, once, without -race) and returns its
// path.
func Binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "herald-harness-")
		if buildErr != nil {
			return
		}
		buildBin = filepath.Join(buildDir, "herald")
		cmd := exec.Command("go", "build", "-o", buildBin, "github.com/herald-vpn/herald/cmd/herald")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBin
}

// Options says what a cluster runs on.
type Options struct {
	DatabaseURL string
	RedisURL    string            // "" for none
	FCMLatency  [2]time.Duration  // the fake FCM's answer time; zero: 50–100 ms, as FCM answers a server
	Env         map[string]string // over the defaults
}

// Cluster is one database, one Redis, the fakes, the proxy, and the
// replicas started on them.
type Cluster struct {
	T     *testing.T
	Bin   string
	Env   map[string]string
	FCM   *fcmtest.Server
	Bot   *telegramtest.Server
	SMTP  *mailtest.Server
	Proxy *Proxy

	// ReplicaEnv, when set, adds to the configuration of the replica it
	// names ("r1", "r2", … in launch order): what differs between them,
	// such as HERALD_TEST_CLOCK_OFFSET.
	ReplicaEnv func(name string) map[string]string

	mu       sync.Mutex
	replicas []*Replica
	seq      int
}

// New prepares a cluster (nothing is started): the fakes, the proxy, and
// the replicas' configuration. The test's cleanup stops every replica
// still running.
func New(t *testing.T, o Options) *Cluster {
	t.Helper()
	lat := o.FCMLatency
	if lat == [2]time.Duration{} {
		lat = [2]time.Duration{fcmLatLo, fcmLatHi}
	}
	c := &Cluster{
		T:    t,
		Bin:  Binary(t),
		FCM:  fcmtest.NewServer(t, fcmtest.PlainHTTP(), fcmtest.Latency(lat[0], lat[1]), fcmtest.Timeline()),
		Bot:  telegramtest.NewServer(t, BotToken),
		SMTP: mailtest.NewServer(t),
	}
	c.Proxy = NewProxy(t)
	creds := filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(creds, c.FCM.CredentialsJSON(Project), 0o600); err != nil {
		t.Fatal(err)
	}
	c.Env = map[string]string{
		"HERALD_DATABASE_URL":            o.DatabaseURL,
		"HERALD_SMTP_URL":                c.SMTP.URL(),
		"HERALD_MAIL_FROM":               "Herald <no-reply@herald.test>",
		"HERALD_LOG_FORMAT":              "json",
		"HERALD_LOG_LEVEL":               "info",
		"HERALD_SHUTDOWN_TIMEOUT":        "5s",
		"HERALD_ARGON2_MEMORY":           "1024",
		"HERALD_ARGON2_ITERATIONS":       "1",
		"HERALD_ARGON2_PARALLELISM":      "1",
		"HERALD_JOB_POLL":                "50ms",
		"HERALD_JOB_RETRY_BASE":          "50ms",
		"HERALD_JOB_RETRY_MAX":           "200ms",
		"HERALD_RATE_LIMIT_GLOBAL":       "0", // every client is the proxy's address
		"HERALD_RATE_LIMIT_AUTH":         "0",
		"HERALD_RATE_LIMIT_PROTECTED":    "0",
		"HERALD_RATE_LIMIT_ADMIN":        "0",
		"HERALD_FCM_CREDENTIALS_FILE":    creds,
		"HERALD_FCM_ENDPOINT":            c.FCM.URL,
		"HERALD_PUSH_RATE":               "0",
		"HERALD_PUSH_LEASE_TTL":          LeaseTTL.String(),
		"HERALD_TELEGRAM_BOT_TOKEN":      BotToken,
		"HERALD_TELEGRAM_API_URL":        c.Bot.URL,
		"HERALD_TELEGRAM_POLL_LEASE_TTL": LeaseTTL.String(),
		// Metric reads each replica's /metrics on its API address.
		"HERALD_METRICS_PUBLIC": "on",
	}
	if o.RedisURL != "" {
		c.Env["HERALD_REDIS_URL"] = o.RedisURL
	}
	maps.Copy(c.Env, o.Env)
	t.Cleanup(c.StopAll)
	return c
}

// CLI runs a herald command (not serve) with the cluster's configuration
// and returns its standard output, failing the test if it fails.
func (c *Cluster) CLI(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Env = EnvList(c.Env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("herald %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// Prepare migrates the database with `herald migrate` (so replicas started
// afterwards have no migration to race on) and creates the operator
// account.
func (c *Cluster) Prepare(t *testing.T) {
	t.Helper()
	c.CLI(t, "migrate")
	c.CLI(t, "admin", "create", "--email", OpsEmail, "--password", Password)
}

// SeedDevices imports n android devices of one account (CrowdMail) with
// `herald devices import` and returns their push tokens.
func (c *Cluster) SeedDevices(t *testing.T, n int) []string {
	t.Helper()
	c.CLI(t, "admin", "create", "--email", CrowdMail, "--password", Password)
	var b strings.Builder
	tokens := make([]string, n)
	for i := range n {
		tokens[i] = fmt.Sprintf("cluster-token-%05d", i)
		fmt.Fprintf(&b, `{"email":%q,"platform":"android","pushToken":%q}`+"\n", CrowdMail, tokens[i])
	}
	file := filepath.Join(t.TempDir(), "devices.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := c.CLI(t, "devices", "import", "--file", file)
	if want := fmt.Sprintf("imported %d, updated 0, rejected 0", n); strings.TrimSpace(out) != want {
		t.Fatalf("devices import printed %q, want %q", out, want)
	}
	return tokens
}

// Replica is one `herald serve` process.
type Replica struct {
	Name   string // r1, r2, … in start order
	URL    string // set once the replica logs the address it bound
	Cmd    *exec.Cmd
	Logs   *testsupport.Buffer
	Exited chan struct{}
	Client *http.Client
	rp     *httputil.ReverseProxy // the proxy's route to it
}

// Launch starts n replicas at the same moment (nothing in between the
// process starts, no waiting for one before the next) and returns them;
// they are not yet in the proxy (see WaitHealthy and Start).
func (c *Cluster) Launch(t *testing.T, n int) []*Replica {
	t.Helper()
	rs := make([]*Replica, n)
	for i := range n {
		c.mu.Lock()
		c.seq++
		r := &Replica{Name: fmt.Sprintf("r%d", c.seq),
			Logs: &testsupport.Buffer{}, Exited: make(chan struct{}),
			Client: &http.Client{Timeout: HTTPWait, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
		c.replicas = append(c.replicas, r)
		c.mu.Unlock()
		env := maps.Clone(c.Env)
		if c.ReplicaEnv != nil {
			maps.Copy(env, c.ReplicaEnv(r.Name))
		}
		env["HERALD_ADDR"] = "127.0.0.1:0" // WaitHealthy reads the bound address from the log
		r.Cmd = exec.Command(c.Bin, "serve")
		r.Cmd.Env = EnvList(env)
		r.Cmd.Stdout, r.Cmd.Stderr = r.Logs, r.Logs
		r.Cmd.SysProcAttr = dieWithParent()
		rs[i] = r
	}
	for _, r := range rs {
		if err := r.Cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", r.Name, err)
		}
		go func() { r.Cmd.Wait(); close(r.Exited) }()
	}
	return rs
}

// Listening waits until r has logged the address it bound and sets r.URL;
// an error says why it did not.
func (r *Replica) Listening(limit time.Duration) error {
	return r.listening(limit, testsupport.ListenAddr)
}

// Answering is Listening for a replica that may still wait for its
// database: its listener is open, and answers 503 until then.
func (r *Replica) Answering(limit time.Duration) error {
	return r.listening(limit, testsupport.StartingAddr)
}

func (r *Replica) listening(limit time.Duration, addrOf func(string) string) error {
	deadline := time.Now().Add(limit)
	for r.URL == "" {
		if addr := addrOf(r.Logs.String()); addr != "" {
			r.URL = "http://" + addr
			return nil
		}
		select {
		case <-r.Exited:
			return fmt.Errorf("%s exited during start-up (%v); last log lines:\n%s", r.Name, r.Cmd.ProcessState, testsupport.Tail(r.Logs.String(), 8))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s logged no listening address after %s; last log lines:\n%s", r.Name, limit, testsupport.Tail(r.Logs.String(), 8))
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// WaitHealthy waits until r answers /healthz with 200 and then adds it to
// the proxy; an error says why it did not (it exited, or never answered).
func (c *Cluster) WaitHealthy(r *Replica) error {
	deadline := time.Now().Add(StartWait)
	if err := r.Listening(StartWait); err != nil {
		return err
	}
	for {
		select {
		case <-r.Exited:
			return fmt.Errorf("%s exited during start-up (%v); last log lines:\n%s", r.Name, r.Cmd.ProcessState, testsupport.Tail(r.Logs.String(), 8))
		default:
		}
		if resp, err := r.Client.Get(r.URL + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				c.Proxy.Add(r)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer /healthz after %s; last log lines:\n%s", r.Name, StartWait, testsupport.Tail(r.Logs.String(), 8))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WaitAllHealthy runs WaitHealthy for every replica of rs at once and
// returns the errors of those that did not come up.
func (c *Cluster) WaitAllHealthy(rs []*Replica) []error {
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = c.WaitHealthy(r) })
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// Start launches n replicas at once and waits until all are healthy and
// behind the proxy, failing the test otherwise.
func (c *Cluster) Start(t *testing.T, n int) []*Replica {
	t.Helper()
	rs := c.Launch(t, n)
	for _, err := range c.WaitAllHealthy(rs) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return rs
}

// Kill takes r out of the proxy and sends it SIGKILL, and returns the
// moment just before the signal and the moment its exit was seen.
func (c *Cluster) Kill(t *testing.T, r *Replica) (killAt, goneAt time.Time) {
	t.Helper()
	c.Proxy.Remove(r)
	killAt = time.Now()
	if err := r.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", r.Name, err)
	}
	select {
	case <-r.Exited:
	case <-time.After(KillWait):
		t.Fatalf("%s still running %s after SIGKILL", r.Name, KillWait)
	}
	return killAt, time.Now()
}

// Alive reports whether r's process is still running.
func (r *Replica) Alive() bool {
	select {
	case <-r.Exited:
		return false
	default:
		return true
	}
}

// StopAll stops every replica still running (SIGTERM, then SIGKILL after
// StopWait), all at once, and shows their logs when the test failed.
func (c *Cluster) StopAll() {
	c.mu.Lock()
	rs := slices.Clone(c.replicas)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		if r.Cmd.Process == nil {
			continue
		}
		wg.Go(func() {
			r.Cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-r.Exited:
			case <-time.After(StopWait):
				r.Cmd.Process.Kill()
				select {
				case <-r.Exited:
				case <-time.After(KillWait):
				}
			}
		})
	}
	wg.Wait()
	if c.T.Failed() {
		for _, r := range rs {
			state := "running"
			if !r.Alive() {
				state = r.Cmd.ProcessState.String()
			}
			c.T.Logf("logs of %s (%s), requests left out:\n%s", r.Name, state, testsupport.Tail(r.LogsWithoutRequests(), 40))
		}
	}
}

// LogEntry is one line of a replica's JSON log.
type LogEntry map[string]any

// Msg is the entry's message.
func (e LogEntry) Msg() string { s, _ := e["msg"].(string); return s }

// Time is when the entry was written.
func (e LogEntry) Time() time.Time {
	s, _ := e["time"].(string)
	at, _ := time.Parse(time.RFC3339Nano, s)
	return at
}

// LogEntries parses r's log; lines that are not JSON are skipped.
func (r *Replica) LogEntries() []LogEntry {
	var out []LogEntry
	for line := range strings.Lines(r.Logs.String()) {
		var e LogEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// Logged returns r's log entries with message msg whose attributes
// include every key and value of attrs.
func (r *Replica) Logged(msg string, attrs map[string]string) []LogEntry {
	var out []LogEntry
	for _, e := range r.LogEntries() {
		if e.Msg() != msg {
			continue
		}
		match := true
		for k, v := range attrs {
			match = match && fmt.Sprint(e[k]) == v
		}
		if match {
			out = append(out, e)
		}
	}
	return out
}

// LogsWithoutRequests is r's log without its request lines.
func (r *Replica) LogsWithoutRequests() string {
	var b strings.Builder
	for line := range strings.Lines(r.Logs.String()) {
		if !strings.Contains(line, `"msg":"request"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Replicas returns every replica launched, in start order.
func (c *Cluster) Replicas() []*Replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.replicas)
}

// Live returns the replicas still running.
func (c *Cluster) Live() []*Replica {
	return slices.DeleteFunc(c.Replicas(), func(r *Replica) bool { return !r.Alive() })
}

// Poller returns the live replica that holds the Telegram polling lease,
// by its log: the last "telegram polling lease taken" not followed by
// "telegram polling lease lost" on that replica; nil when none.
func (c *Cluster) Poller() *Replica {
	var best *Replica
	var bestAt time.Time
	for _, r := range c.Live() {
		var taken, lost time.Time
		for _, e := range r.LogEntries() {
			switch e.Msg() {
			case "telegram polling lease taken":
				taken = e.Time()
			case "telegram polling lease lost":
				lost = e.Time()
			}
		}
		if !taken.IsZero() && taken.After(lost) && taken.After(bestAt) {
			best, bestAt = r, taken
		}
	}
	return best
}

// WorkersOf returns the replicas that logged "broadcast working" for job.
func (c *Cluster) WorkersOf(job string) []*Replica {
	return slices.DeleteFunc(c.Replicas(), func(r *Replica) bool {
		return len(r.Logged("broadcast working", map[string]string{"job_id": job})) == 0
	})
}

// Names lists the replicas' names.
func Names(rs []*Replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// Metric returns one sample of r's /metrics, such as
// `herald_emails_total{result="sent"}`; 0 when absent.
func (r *Replica) Metric(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := r.Client.Get(r.URL + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", r.Name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s /metrics: status %d, %v", r.Name, resp.StatusCode, err)
	}
	for line := range strings.Lines(string(raw)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && name == sample {
			var v float64
			if _, err := fmt.Sscan(value, &v); err != nil {
				t.Fatalf("%s metric %s: bad value %q", r.Name, sample, value)
			}
			return v
		}
	}
	return 0
}

// Proxy is a round-robin reverse proxy over the healthy replicas. Each
// answer carries the name of the replica that gave it in X-Replica.
type Proxy struct {
	URL string

	mu   sync.Mutex
	pool []*Replica
	next int
}

// NewProxy starts a proxy with no replica; the test's cleanup closes it.
func NewProxy(t *testing.T) *Proxy {
	p := &Proxy{}
	srv := httptest.NewServer(p)
	p.URL = srv.URL
	t.Cleanup(srv.Close)
	return p
}

// Add routes to r too.
func (p *Proxy) Add(r *Replica) {
	u, _ := url.Parse(r.URL)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 32}
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Header.Set("X-Replica", r.Name)
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		w.Header().Set("X-Replica", r.Name)
		http.Error(w, "proxy: "+r.Name+": "+err.Error(), http.StatusBadGateway)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.rp = rp
	p.pool = append(p.pool, r)
}

// CloseIdleConnections closes the proxy's idle connections to every
// replica it routes to, so that a count of a replica's goroutines does not
// depend on how many connections the last burst of requests left open.
func (p *Proxy) CloseIdleConnections() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.pool {
		if tr, ok := r.rp.Transport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
	}
}

// Remove stops routing to r.
func (p *Proxy) Remove(r *Replica) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pool = slices.DeleteFunc(p.pool, func(x *Replica) bool { return x == r })
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p.mu.Lock()
	var r *Replica
	if len(p.pool) > 0 {
		r = p.pool[p.next%len(p.pool)]
		p.next++
	}
	p.mu.Unlock()
	if r == nil {
		http.Error(w, "proxy: no replica", http.StatusBadGateway)
		return
	}
	r.rp.ServeHTTP(w, req)
}

// EnvList turns a configuration into a process environment.
func EnvList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}
