package faults

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/herald-vpn/herald/test/harness"
)

const (
	pollWait = harness.PollWait
	jobWait  = 4 * time.Minute // a 50,000-device broadcast finishes, outages included
	// heraldApp is the application_name of Herald's connections to the
	// suite's PostgreSQL: what pg_terminate_backend picks.
	heraldApp = "herald-faults"
)

var jsonPath = testsupport.JSONPath

// servers starts the suite's own PostgreSQL (with a database for Herald,
// reached as heraldApp) and Redis, and a cluster on them with extra over
// the harness's configuration.
func servers(t *testing.T, o harness.Options) (*harness.Postgres, *harness.Redis, *harness.Cluster) {
	t.Helper()
	pg := harness.StartPostgres(t)
	rd := harness.StartRedis(t)
	o.DatabaseURL = pg.CreateDatabase(t, "herald", heraldApp)
	o.RedisURL = rd.URL()
	return pg, rd, harness.New(t, o)
}

// outcome is one answer a prober got.
type outcome struct {
	What       string // "users/me" or "login"
	At         time.Time
	Status     int
	Code       string // the error's code, if any
	RetryAfter string
	Err        string // a transport error instead of an answer
}

// prober asks the cluster, over and over until stopped, for the caller's
// own account (REST users/me) and for a login (GraphQL), as a client
// would during an outage, and keeps every answer.
type prober struct {
	c      *harness.Cluster
	bearer string
	stop   chan struct{}
	done   chan struct{}

	mu  sync.Mutex
	out []outcome
}

func startProber(t *testing.T, c *harness.Cluster, bearer string) *prober {
	p := &prober{c: c, bearer: bearer, stop: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	t.Cleanup(p.Stop)
	return p
}

func (p *prober) run() {
	defer close(p.done)
	client := &http.Client{Timeout: harness.HTTPWait}
	for {
		select {
		case <-p.stop:
			return
		default:
		}
		p.record(p.me(client))
		p.record(p.login())
		time.Sleep(25 * time.Millisecond)
	}
}

func (p *prober) me(client *http.Client) outcome {
	o := outcome{What: "users/me", At: time.Now()}
	req, _ := http.NewRequest(http.MethodGet, p.c.Proxy.URL+"/api/v1/users/me", nil)
	req.Header.Set("Authorization", "Bearer "+p.bearer)
	resp, err := client.Do(req)
	if err != nil {
		o.Err = err.Error()
		return o
	}
	defer resp.Body.Close()
	var env map[string]any
	json.NewDecoder(resp.Body).Decode(&env)
	o.Status, o.RetryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	o.Code, _ = jsonPath(env, "error", "code").(string)
	return o
}

func (p *prober) login() outcome {
	o := outcome{What: "login", At: time.Now()}
	a, err := p.c.TryGQL("", harness.LoginQuery, map[string]any{"e": harness.OpsEmail, "p": harness.Password})
	if err != nil {
		o.Err = err.Error()
		return o
	}
	o.Status, o.Code, o.RetryAfter = a.Status, a.Code(), a.Header.Get("Retry-After")
	return o
}

func (p *prober) record(o outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out = append(p.out, o)
}

// Outcomes returns every answer so far.
func (p *prober) Outcomes() []outcome {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]outcome(nil), p.out...)
}

// Unavailable counts the 503 answers to what since from.
func (p *prober) Unavailable(what string, from time.Time) int {
	n := 0
	for _, o := range p.Outcomes() {
		if o.What == what && o.Status == http.StatusServiceUnavailable && !o.At.Before(from) {
			n++
		}
	}
	return n
}

// Stop ends the probing and waits for the last exchange.
func (p *prober) Stop() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	select {
	case <-p.done:
	case <-time.After(2 * harness.HTTPWait):
	}
}

// check fails the test for any answer but 200 and 503
// SERVICE_UNAVAILABLE with Retry-After (a 500 above all), and for a
// transport error (the proxy never drops a request), and returns how many
// of each status it saw.
func (p *prober) check(t *testing.T) map[string]int {
	t.Helper()
	seen := map[string]int{}
	var bad []string
	for _, o := range p.Outcomes() {
		seen[fmt.Sprintf("%s %d", o.What, o.Status)]++
		switch {
		case o.Err != "":
			bad = append(bad, fmt.Sprintf("%s at %s: %s", o.What, o.At.Format("15:04:05.000"), o.Err))
		case o.Status == http.StatusOK:
		case o.Status == http.StatusServiceUnavailable && o.Code == "SERVICE_UNAVAILABLE" && o.RetryAfter != "":
		default:
			bad = append(bad, fmt.Sprintf("%s at %s: status %d code %q Retry-After %q", o.What, o.At.Format("15:04:05.000"), o.Status, o.Code, o.RetryAfter))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%d answers were neither 200 nor 503 SERVICE_UNAVAILABLE with Retry-After; first: %s", len(bad), strings.Join(bad[:min(len(bad), 10)], "; "))
	}
	return seen
}

// receiver is a webhook endpoint in the test: it checks each delivery's
// Standard Webhooks signature and keeps the events by webhook-id. While
// failing, it answers 503 and keeps nothing.
type receiver struct {
	URL    string
	secret string

	mu      sync.Mutex
	failing bool
	events  map[string]receivedEvent // by webhook-id
	bad     []string
}

type receivedEvent struct {
	Type  string
	Data  map[string]any
	Times int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{events: map[string]receivedEvent{}}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	return r
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil || r.failing {
		http.Error(w, "failing", http.StatusServiceUnavailable)
		return
	}
	id, ts := req.Header.Get("Webhook-Id"), req.Header.Get("Webhook-Timestamp")
	sec, _ := strconv.ParseInt(ts, 10, 64)
	want, err := webhooks.Sign(r.secret, id, time.Unix(sec, 0), body)
	if err != nil || id == "" || !strings.Contains(" "+req.Header.Get("Webhook-Signature")+" ", " "+want+" ") {
		r.bad = append(r.bad, fmt.Sprintf("webhook-id %q: signature %q does not match", id, req.Header.Get("Webhook-Signature")))
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var ev struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		r.bad = append(r.bad, fmt.Sprintf("webhook-id %q: body is not JSON: %.200s", id, body))
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	e := r.events[id]
	e.Type, e.Data, e.Times = ev.Type, ev.Data, e.Times+1
	r.events[id] = e
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) setFailing(on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failing = on
}

// byType returns the events received of type typ, by webhook-id.
func (r *receiver) byType(typ string) map[string]receivedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]receivedEvent{}
	for id, e := range r.events {
		if e.Type == typ {
			out[id] = e
		}
	}
	return out
}

func (r *receiver) badDeliveries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

// subscribeReceiver registers r for the event types and keeps the secret.
func subscribeReceiver(t *testing.T, c *harness.Cluster, admin string, r *receiver, types ...string) {
	t.Helper()
	d := c.MustGQL(t, "createWebhookEndpoint", admin,
		`mutation($i:CreateWebhookEndpointInput!){createWebhookEndpoint(input:$i){secret endpoint{id}}}`,
		map[string]any{"i": map[string]any{"url": r.URL + "/hook", "eventTypes": types}})
	r.mu.Lock()
	r.secret, _ = jsonPath(d, "createWebhookEndpoint", "secret").(string)
	r.mu.Unlock()
	if r.secret == "" {
		t.Fatalf("createWebhookEndpoint: no secret in %v", d)
	}
}

// query runs a GraphQL read that may meet an outage: ok is false for a 503
// SERVICE_UNAVAILABLE (try again), and the test fails on anything else
// but success. It returns the data's field.
func query(t *testing.T, c *harness.Cluster, bearer, doc string, vars map[string]any, field string) (map[string]any, bool) {
	t.Helper()
	a := c.GQL(t, bearer, doc, vars)
	if a.Status == http.StatusServiceUnavailable && a.Code() == "SERVICE_UNAVAILABLE" {
		return nil, false
	}
	v, _ := a.Data[field].(map[string]any)
	if a.Status != http.StatusOK || len(a.Errors) > 0 || v == nil {
		t.Fatalf("%s: status %d: %.500s", field, a.Status, a.Raw)
	}
	return v, true
}

// waitFinished polls a job (notificationJob or messengerBroadcast, by
// field) until it has ended, through outages, failing after limit.
func waitFinished(t *testing.T, c *harness.Cluster, admin, field, id string, limit time.Duration) map[string]any {
	t.Helper()
	doc := `query($id:ID!){` + field + `(id:$id){status totalRecipients sent failed}}`
	if field == "notificationJob" {
		doc = `query($id:ID!){notificationJob(id:$id){status totalRecipients sent failed invalidTokens}}`
	}
	var j map[string]any
	testsupport.Eventually(t, limit, func() bool {
		v, ok := query(t, c, admin, doc, map[string]any{"id": id}, field)
		if ok {
			j = v
		}
		return ok && harness.Finished(j)
	}, "%s %s never finished: %v", field, id, j)
	return j
}

// progressWatcher follows a broadcast's progress stream (Server-Sent
// Events) as EventSource would: when a stream ends before the final
// state, or cannot start, it connects again with Last-Event-ID.
type progressWatcher struct {
	done chan struct{}

	mu         sync.Mutex
	versions   []int64 // the event ids, in the order received
	last       map[string]any
	reconnects int
	problems   []string
}

func watchProgress(t *testing.T, c *harness.Cluster, bearer, job string) *progressWatcher {
	w := &progressWatcher{done: make(chan struct{})}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		defer close(w.done)
		lastID := ""
		for attempt := 0; ; attempt++ {
			select {
			case <-stop:
				return
			default:
			}
			if attempt > 0 {
				w.mu.Lock()
				w.reconnects++
				w.mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
			finished, id := w.stream(c, bearer, job, lastID, stop)
			if id != "" {
				lastID = id
			}
			if finished {
				return
			}
		}
	}()
	return w
}

// stream reads one connection's events; finished is true once the final
// state has come (or the server says the client has it).
func (w *progressWatcher) stream(c *harness.Cluster, bearer, job, lastID string, stop chan struct{}) (finished bool, id string) {
	req, _ := http.NewRequest(http.MethodGet, c.Proxy.URL+"/api/v1/notifications/broadcasts/"+job+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req) // no timeout: the stream lasts
	if err != nil {
		return false, ""
	}
	defer resp.Body.Close()
	go func() { <-stop; resp.Body.Close() }()
	switch resp.StatusCode {
	case http.StatusNoContent:
		return true, ""
	case http.StatusOK:
	default:
		if resp.StatusCode != http.StatusServiceUnavailable {
			w.problem(fmt.Sprintf("the stream answered %d", resp.StatusCode))
		}
		return false, ""
	}
	var data string
	buf := make([]byte, 0, 64<<10)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(buf, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "" && data != "":
			var j map[string]any
			if err := json.Unmarshal([]byte(data), &j); err != nil {
				w.problem("an event's data is not JSON: " + data)
			}
			v, _ := strconv.ParseInt(id, 10, 64)
			w.mu.Lock()
			w.versions = append(w.versions, v)
			w.last = j
			w.mu.Unlock()
			data = ""
			if harness.Finished(j) {
				return true, id
			}
		}
	}
	return false, id
}

func (w *progressWatcher) problem(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.problems = append(w.problems, s)
}

// check waits (bounded) for the final state and fails the test unless it
// came, with event ids that only grow; it returns the final state.
func (w *progressWatcher) check(t *testing.T, limit time.Duration) map[string]any {
	t.Helper()
	testsupport.Receive(t, w.done, limit, "the progress stream's final state")
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := 1; i < len(w.versions); i++ {
		if w.versions[i] <= w.versions[i-1] {
			t.Errorf("progress event ids went from %d to %d; they only grow", w.versions[i-1], w.versions[i])
		}
	}
	if len(w.problems) > 0 {
		t.Errorf("the progress stream: %v", w.problems)
	}
	if !harness.Finished(w.last) {
		t.Fatalf("the progress stream ended without the final state: last %v", w.last)
	}
	t.Logf("progress stream: %d events, %d reconnections", len(w.versions), w.reconnects)
	return w.last
}
