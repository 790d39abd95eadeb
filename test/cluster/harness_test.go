// Package cluster runs three replicas of the real herald binary on one
// fresh PostgreSQL database and one Redis, behind a round-robin reverse
// proxy started in the test, with a fake FCM (fcmtest), a fake Telegram
// (telegramtest) and a fake SMTP server (mailtest) shared by the replicas,
// and checks that they behave as one server (issue 9).
//
// The tests need HERALD_TEST_POSTGRES_URL and HERALD_TEST_REDIS_URL and
// skip, saying so, without them. They run one after the other (each
// cluster is two cores' worth of work on the CI machine, and they share
// Redis database 5, which each cluster empties first).
//
// Every wait is bounded: conditions are polled until a deadline. The
// deadlines are generous bounds for eventual conditions, never
// measurements of how long something took; the one stated bound, the
// takeover time (lease TTL + takeoverSlack), is what issue 9 promises.
package cluster

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

	"github.com/redis/go-redis/v9"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const (
	replicas = 3

	// leaseTTL is HERALD_PUSH_LEASE_TTL and HERALD_TELEGRAM_POLL_LEASE_TTL
	// of every replica: how long work stays owned by a replica that died.
	leaseTTL = 3 * time.Second
	// takeoverSlack is the "few seconds" past the lease TTL within which a
	// live replica must have taken over the work of a dead one.
	takeoverSlack = 7 * time.Second

	startWait = 30 * time.Second // a replica answers /healthz
	pollWait  = 20 * time.Second // any other eventual condition
	mailWait  = 20 * time.Second // an email arrives
	jobWait   = 60 * time.Second // a broadcast finishes
	stopWait  = 15 * time.Second // a replica exits after SIGTERM
	killWait  = 10 * time.Second // a replica is gone after SIGKILL
	httpWait  = 30 * time.Second // one HTTP exchange with a replica
	redisDB   = 5                // the Redis database of these tests
	botToken  = "123456:AAE-herald_cluster_token"
	project   = "herald-cluster"
	password  = "Secret123"
	opsEmail  = "ops@example.com"
	crowd     = "crowd@example.com"
	fcmLatLo  = 50 * time.Millisecond // the fake FCM's answer time, as FCM answers a server
	fcmLatHi  = 100 * time.Millisecond
)

// The binary, built once per test run (by the first test that needs it).
var (
	buildOnce sync.Once
	buildDir  string
	buildBin  string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// heraldBinary builds cmd/herald (go build, once) and returns its path.
func heraldBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "herald-cluster-")
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

// needBackends skips the test, saying why, unless PostgreSQL and Redis
// are configured, and returns the Redis URL of this package's database,
// emptied.
func needBackends(t *testing.T) string {
	t.Helper()
	if os.Getenv("HERALD_TEST_POSTGRES_URL") == "" {
		t.Skip("HERALD_TEST_POSTGRES_URL is not set: the cluster tests run three replicas on one PostgreSQL")
	}
	raw := os.Getenv("HERALD_TEST_REDIS_URL")
	if raw == "" {
		t.Skip("HERALD_TEST_REDIS_URL is not set: the cluster tests run three replicas on one Redis")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("HERALD_TEST_REDIS_URL: %v", err)
	}
	u.Path = fmt.Sprintf("/%d", redisDB)
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		t.Fatalf("HERALD_TEST_REDIS_URL: %v", err)
	}
	rc := redis.NewClient(opts)
	defer rc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := rc.FlushDB(ctx).Err(); err != nil {
		t.Fatalf("empty Redis database %d: %v", redisDB, err)
	}
	return u.String()
}

// cluster is one fresh PostgreSQL schema, one Redis database, the fakes,
// the proxy, and the replicas started on them.
type cluster struct {
	t     *testing.T
	bin   string
	env   map[string]string
	FCM   *fcmtest.Server
	Bot   *telegramtest.Server
	SMTP  *mailtest.Server
	proxy *proxy

	mu       sync.Mutex
	replicas []*replica
	seq      int
}

// newCluster prepares a cluster (nothing is started): a fresh database,
// the fakes, the proxy, and the replicas' configuration, extra over the
// defaults. The test's cleanup stops every replica still running.
func newCluster(t *testing.T, extra map[string]string) *cluster {
	t.Helper()
	redisURL := needBackends(t)
	c := &cluster{
		t:    t,
		bin:  heraldBinary(t),
		FCM:  fcmtest.NewServer(t, fcmtest.PlainHTTP(), fcmtest.Latency(fcmLatLo, fcmLatHi), fcmtest.Timeline()),
		Bot:  telegramtest.NewServer(t, botToken),
		SMTP: mailtest.NewServer(t),
	}
	c.proxy = newProxy(t)
	creds := filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(creds, c.FCM.CredentialsJSON(project), 0o600); err != nil {
		t.Fatal(err)
	}
	c.env = map[string]string{
		"HERALD_DATABASE_URL":            sqlstoretest.NewURL(t, "postgres"),
		"HERALD_REDIS_URL":               redisURL,
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
		"HERALD_PUSH_LEASE_TTL":          leaseTTL.String(),
		"HERALD_TELEGRAM_BOT_TOKEN":      botToken,
		"HERALD_TELEGRAM_API_URL":        c.Bot.URL,
		"HERALD_TELEGRAM_POLL_LEASE_TTL": leaseTTL.String(),
	}
	// metric reads each replica's /metrics on its API address.
	c.env["HERALD_METRICS_PUBLIC"] = "on"
	maps.Copy(c.env, extra)
	t.Cleanup(c.stopAll)
	return c
}

// cli runs a herald command (not serve) with the cluster's configuration
// and returns its standard output, failing the test if it fails.
func (c *cluster) cli(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, args...)
	cmd.Env = envList(c.env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("herald %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// prepare migrates the database with `herald migrate` (so replicas started
// afterwards have no migration to race on) and creates the operator
// account.
func (c *cluster) prepare(t *testing.T) {
	t.Helper()
	c.cli(t, "migrate")
	c.cli(t, "admin", "create", "--email", opsEmail, "--password", password)
}

// seedDevices imports n android devices of one account with `herald
// devices import` and returns their push tokens.
func (c *cluster) seedDevices(t *testing.T, n int) []string {
	t.Helper()
	c.cli(t, "admin", "create", "--email", crowd, "--password", password)
	var b strings.Builder
	tokens := make([]string, n)
	for i := range n {
		tokens[i] = fmt.Sprintf("cluster-token-%05d", i)
		fmt.Fprintf(&b, `{"email":%q,"platform":"android","pushToken":%q}`+"\n", crowd, tokens[i])
	}
	file := filepath.Join(t.TempDir(), "devices.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out := c.cli(t, "devices", "import", "--file", file)
	if want := fmt.Sprintf("imported %d, updated 0, rejected 0", n); strings.TrimSpace(out) != want {
		t.Fatalf("devices import printed %q, want %q", out, want)
	}
	return tokens
}

// replica is one `herald serve` process.
type replica struct {
	name   string // r1, r2, … in start order
	url    string // set once the replica logs the address it bound
	cmd    *exec.Cmd
	logs   *testsupport.Buffer
	exited chan struct{}
	client *http.Client
	rp     *httputil.ReverseProxy // the proxy's route to it
}

// launch starts n replicas at the same moment (nothing in between the
// process starts, no waiting for one before the next) and returns them;
// they are not yet in the proxy (see waitHealthy and start).
func (c *cluster) launch(t *testing.T, n int) []*replica {
	t.Helper()
	rs := make([]*replica, n)
	for i := range n {
		c.mu.Lock()
		c.seq++
		r := &replica{name: fmt.Sprintf("r%d", c.seq),
			logs: &testsupport.Buffer{}, exited: make(chan struct{}),
			client: &http.Client{Timeout: httpWait, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
		c.replicas = append(c.replicas, r)
		c.mu.Unlock()
		env := maps.Clone(c.env)
		env["HERALD_ADDR"] = "127.0.0.1:0" // waitHealthy reads the bound address from the log
		r.cmd = exec.Command(c.bin, "serve")
		r.cmd.Env = envList(env)
		r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
		rs[i] = r
	}
	for _, r := range rs {
		if err := r.cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", r.name, err)
		}
		go func() { r.cmd.Wait(); close(r.exited) }()
	}
	return rs
}

// waitHealthy waits until r answers /healthz with 200 and then adds it to
// the proxy; an error says why it did not (it exited, or never answered).
func (c *cluster) waitHealthy(r *replica) error {
	deadline := time.Now().Add(startWait)
	for {
		select {
		case <-r.exited:
			return fmt.Errorf("%s exited during start-up (%v); last log lines:\n%s", r.name, r.cmd.ProcessState, testsupport.Tail(r.logs.String(), 8))
		default:
		}
		if r.url == "" {
			if addr := testsupport.ListenAddr(r.logs.String()); addr != "" {
				r.url = "http://" + addr
			}
		}
		if r.url != "" {
			if resp, err := r.client.Get(r.url + "/healthz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					c.proxy.add(r)
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s does not answer /healthz after %s; last log lines:\n%s", r.name, startWait, testsupport.Tail(r.logs.String(), 8))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitAllHealthy runs waitHealthy for every replica of rs at once and
// returns the errors of those that did not come up.
func (c *cluster) waitAllHealthy(rs []*replica) []error {
	errs := make([]error, len(rs))
	var wg sync.WaitGroup
	for i, r := range rs {
		wg.Go(func() { errs[i] = c.waitHealthy(r) })
	}
	wg.Wait()
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil })
}

// start launches n replicas at once and waits until all are healthy and
// behind the proxy, failing the test otherwise.
func (c *cluster) start(t *testing.T, n int) []*replica {
	t.Helper()
	rs := c.launch(t, n)
	for _, err := range c.waitAllHealthy(rs) {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return rs
}

// kill takes r out of the proxy and sends it SIGKILL, and returns the
// moment just before the signal and the moment its exit was seen.
func (c *cluster) kill(t *testing.T, r *replica) (killAt, goneAt time.Time) {
	t.Helper()
	c.proxy.remove(r)
	killAt = time.Now()
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s: %v", r.name, err)
	}
	select {
	case <-r.exited:
	case <-time.After(killWait):
		t.Fatalf("%s still running %s after SIGKILL", r.name, killWait)
	}
	return killAt, time.Now()
}

// alive reports whether r's process is still running.
func (r *replica) alive() bool {
	select {
	case <-r.exited:
		return false
	default:
		return true
	}
}

// stopAll stops every replica still running (SIGTERM, then SIGKILL after
// stopWait), all at once, and shows their logs when the test failed.
func (c *cluster) stopAll() {
	c.mu.Lock()
	rs := slices.Clone(c.replicas)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, r := range rs {
		if r.cmd.Process == nil {
			continue
		}
		wg.Go(func() {
			r.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-r.exited:
			case <-time.After(stopWait):
				r.cmd.Process.Kill()
				select {
				case <-r.exited:
				case <-time.After(killWait):
				}
			}
		})
	}
	wg.Wait()
	if c.t.Failed() {
		for _, r := range rs {
			state := "running"
			if !r.alive() {
				state = r.cmd.ProcessState.String()
			}
			c.t.Logf("logs of %s (%s), requests left out:\n%s", r.name, state, testsupport.Tail(r.logsWithoutRequests(), 40))
		}
	}
}

// logEntry is one line of a replica's JSON log.
type logEntry map[string]any

func (e logEntry) msg() string { s, _ := e["msg"].(string); return s }

func (e logEntry) time() time.Time {
	s, _ := e["time"].(string)
	at, _ := time.Parse(time.RFC3339Nano, s)
	return at
}

// logEntries parses r's log; lines that are not JSON are skipped.
func (r *replica) logEntries() []logEntry {
	var out []logEntry
	for line := range strings.Lines(r.logs.String()) {
		var e logEntry
		if json.Unmarshal([]byte(line), &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// logged returns r's log entries with message msg whose attributes
// include every key and value of attrs.
func (r *replica) logged(msg string, attrs map[string]string) []logEntry {
	var out []logEntry
	for _, e := range r.logEntries() {
		if e.msg() != msg {
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

func (r *replica) logsWithoutRequests() string {
	var b strings.Builder
	for line := range strings.Lines(r.logs.String()) {
		if !strings.Contains(line, `"msg":"request"`) {
			b.WriteString(line)
		}
	}
	return b.String()
}

// live returns the replicas still running.
func (c *cluster) live() []*replica {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*replica
	for _, r := range c.replicas {
		if r.alive() {
			out = append(out, r)
		}
	}
	return out
}

// workersOf returns the replicas that logged "broadcast working" for job.
func (c *cluster) workersOf(job string) []*replica {
	c.mu.Lock()
	rs := slices.Clone(c.replicas)
	c.mu.Unlock()
	var out []*replica
	for _, r := range rs {
		if len(r.logged("broadcast working", map[string]string{"job_id": job})) > 0 {
			out = append(out, r)
		}
	}
	return out
}

func names(rs []*replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.name)
	}
	return out
}

// metric returns one sample of r's /metrics, such as
// `herald_emails_total{result="sent"}`; 0 when absent.
func (r *replica) metric(t *testing.T, sample string) float64 {
	t.Helper()
	resp, err := r.client.Get(r.url + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", r.name, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s /metrics: status %d, %v", r.name, resp.StatusCode, err)
	}
	for line := range strings.Lines(string(raw)) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && name == sample {
			var v float64
			if _, err := fmt.Sscan(value, &v); err != nil {
				t.Fatalf("%s metric %s: bad value %q", r.name, sample, value)
			}
			return v
		}
	}
	return 0
}

// proxy is a round-robin reverse proxy over the healthy replicas. Each
// answer carries the name of the replica that gave it in X-Replica.
type proxy struct {
	URL string

	mu   sync.Mutex
	pool []*replica
	next int
}

func newProxy(t *testing.T) *proxy {
	p := &proxy{}
	srv := httptest.NewServer(p)
	p.URL = srv.URL
	t.Cleanup(srv.Close)
	return p
}

func (p *proxy) add(r *replica) {
	u, _ := url.Parse(r.url)
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 32}
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Header.Set("X-Replica", r.name)
		return nil
	}
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, err error) {
		w.Header().Set("X-Replica", r.name)
		http.Error(w, "proxy: "+r.name+": "+err.Error(), http.StatusBadGateway)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r.rp = rp
	p.pool = append(p.pool, r)
}

func (p *proxy) remove(r *replica) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pool = slices.DeleteFunc(p.pool, func(x *replica) bool { return x == r })
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	p.mu.Lock()
	var r *replica
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

// answer is one GraphQL answer through the proxy.
type answer struct {
	Status  int
	Replica string // which replica answered
	Data    map[string]any
	Errors  []any
	Raw     string
}

var apiClient = &http.Client{Timeout: httpWait}

// gql posts a GraphQL document through the proxy (with the bearer token
// when not empty) and decodes the answer, failing the test on a transport
// error or an answer that is not GraphQL's JSON.
func (c *cluster) gql(t *testing.T, bearer, query string, vars map[string]any) answer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, c.proxy.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		t.Fatalf("POST /graphql: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST /graphql: %v", err)
	}
	a := answer{Status: resp.StatusCode, Replica: resp.Header.Get("X-Replica"), Raw: string(raw)}
	var m struct {
		Data   map[string]any `json:"data"`
		Errors []any          `json:"errors"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("POST /graphql via %s: status %d, not JSON: %.300s", a.Replica, a.Status, raw)
	}
	a.Data, a.Errors = m.Data, m.Errors
	return a
}

// mustGQL is gql for operations that must succeed; it returns the data.
func (c *cluster) mustGQL(t *testing.T, what, bearer, query string, vars map[string]any) map[string]any {
	t.Helper()
	a := c.gql(t, bearer, query, vars)
	if a.Status != http.StatusOK || len(a.Errors) > 0 || a.Data == nil {
		t.Fatalf("%s (via %s): status %d: %.500s", what, a.Replica, a.Status, a.Raw)
	}
	return a.Data
}

// login returns an access token of the account.
func (c *cluster) login(t *testing.T, email string) string {
	t.Helper()
	d := c.mustGQL(t, "login "+email, "", `mutation($e:String!,$p:String!){login(email:$e,password:$p){accessToken}}`,
		map[string]any{"e": email, "p": password})
	tok, _ := jsonPath(d, "login", "accessToken").(string)
	if tok == "" {
		t.Fatalf("login %s: no access token in %v", email, d)
	}
	return tok
}

const jobFields = `id status totalRecipients sent failed invalidTokens`

// broadcast queues sendNotificationToAll and returns the job id and its
// recipients.
func (c *cluster) broadcast(t *testing.T, admin, subject string) (string, int) {
	t.Helper()
	d := c.mustGQL(t, "sendNotificationToAll", admin,
		`mutation($n:NotificationInput!){sendNotificationToAll(notification:$n){status jobId totalRecipients}}`,
		map[string]any{"n": map[string]any{"subject": subject, "content": "to every device"}})
	id, _ := jsonPath(d, "sendNotificationToAll", "jobId").(string)
	total, _ := jsonPath(d, "sendNotificationToAll", "totalRecipients").(float64)
	if id == "" || jsonPath(d, "sendNotificationToAll", "status") != "queued" {
		t.Fatalf("sendNotificationToAll: %v", d)
	}
	return id, int(total)
}

// job reads a broadcast through the proxy.
func (c *cluster) job(t *testing.T, admin, id string) map[string]any {
	t.Helper()
	d := c.mustGQL(t, "notificationJob "+id, admin, `query($id:ID!){notificationJob(id:$id){`+jobFields+`}}`, map[string]any{"id": id})
	j, _ := d["notificationJob"].(map[string]any)
	if j == nil {
		t.Fatalf("notificationJob %s: %v", id, d)
	}
	return j
}

func finished(j map[string]any) bool { return j["status"] != "queued" && j["status"] != "running" }

// waitFinished polls the job until it is finished, failing after limit.
func (c *cluster) waitFinished(t *testing.T, admin, id string, limit time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := c.job(t, admin, id)
		if finished(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("broadcast %s not finished after %s: %v", id, limit, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// expectCompleted checks a finished broadcast's counters: completed, every
// recipient sent once, nothing failed.
func expectCompleted(t *testing.T, j map[string]any, total int) {
	t.Helper()
	want := map[string]any{"status": "completed", "totalRecipients": float64(total), "sent": float64(total), "failed": float64(0), "invalidTokens": float64(0)}
	for k, v := range want {
		if j[k] != v {
			t.Fatalf("broadcast %v: want %v", j, want)
		}
	}
}

// deliveries counts the messages the fake FCM accepted for the broadcast
// job (its collapse key), per device token.
func (c *cluster) deliveries(job string) map[string]int {
	out := map[string]int{}
	for _, m := range c.FCM.Messages() {
		if m.CollapseKey == job {
			out[m.Token]++
		}
	}
	return out
}

func envList(env map[string]string) []string {
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// jsonPath walks nested objects: jsonPath(data, "login", "accessToken").
var jsonPath = testsupport.JSONPath

// asInt returns a JSON number as an int, failing the test on anything else.
func asInt(t *testing.T, v any) int {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%v (%T) is not a whole JSON number", v, v)
	}
	return int(f)
}
