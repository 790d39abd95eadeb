package harness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// Answer is one GraphQL answer through the proxy.
type Answer struct {
	Status  int
	Header  http.Header
	Replica string // which replica answered
	Data    map[string]any
	Errors  []any
	Raw     string
}

// Code is the first error's extensions.code, "" when none.
func (a Answer) Code() string {
	if len(a.Errors) == 0 {
		return ""
	}
	code, _ := testsupport.JSONPath(a.Errors[0], "extensions", "code").(string)
	return code
}

var apiClient = &http.Client{Timeout: HTTPWait}

// GQL posts a GraphQL document through the proxy (with the bearer token
// when not empty) and decodes the answer, failing the test on a transport
// error or an answer that is not GraphQL's JSON.
func (c *Cluster) GQL(t *testing.T, bearer, query string, vars map[string]any) Answer {
	t.Helper()
	a, err := c.TryGQL(bearer, query, vars)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TryGQL is GQL returning its failure, for callers outside the test's
// goroutine.
func (c *Cluster) TryGQL(bearer, query string, vars map[string]any) (Answer, error) {
	body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
	req, _ := http.NewRequest(http.MethodPost, c.Proxy.URL+"/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("POST /graphql: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return Answer{}, fmt.Errorf("POST /graphql: %v", err)
	}
	a := Answer{Status: resp.StatusCode, Header: resp.Header, Replica: resp.Header.Get("X-Replica"), Raw: string(raw)}
	var m struct {
		Data   map[string]any `json:"data"`
		Errors []any          `json:"errors"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return a, fmt.Errorf("POST /graphql via %s: status %d, not JSON: %.300s", a.Replica, a.Status, raw)
	}
	a.Data, a.Errors = m.Data, m.Errors
	return a, nil
}

// MustGQL is GQL for operations that must succeed; it returns the data.
func (c *Cluster) MustGQL(t *testing.T, what, bearer, query string, vars map[string]any) map[string]any {
	t.Helper()
	a := c.GQL(t, bearer, query, vars)
	if a.Status != http.StatusOK || len(a.Errors) > 0 || a.Data == nil {
		t.Fatalf("%s (via %s): status %d: %.500s", what, a.Replica, a.Status, a.Raw)
	}
	return a.Data
}

// LoginQuery is the login mutation, with variables e and p.
const LoginQuery = `mutation($e:String!,$p:String!){login(email:$e,password:$p){accessToken}}`

// Login returns an access token of the account (password Password).
func (c *Cluster) Login(t *testing.T, email string) string {
	t.Helper()
	d := c.MustGQL(t, "login "+email, "", LoginQuery, map[string]any{"e": email, "p": Password})
	tok, _ := testsupport.JSONPath(d, "login", "accessToken").(string)
	if tok == "" {
		t.Fatalf("login %s: no access token in %v", email, d)
	}
	return tok
}

const jobFields = `id status totalRecipients sent failed invalidTokens`

// Broadcast queues sendNotificationToAll and returns the job id and its
// recipients.
func (c *Cluster) Broadcast(t *testing.T, admin, subject string) (string, int) {
	t.Helper()
	d := c.MustGQL(t, "sendNotificationToAll", admin,
		`mutation($n:NotificationInput!){sendNotificationToAll(notification:$n){status jobId totalRecipients}}`,
		map[string]any{"n": map[string]any{"subject": subject, "content": "to every device"}})
	id, _ := testsupport.JSONPath(d, "sendNotificationToAll", "jobId").(string)
	total, _ := testsupport.JSONPath(d, "sendNotificationToAll", "totalRecipients").(float64)
	if id == "" || testsupport.JSONPath(d, "sendNotificationToAll", "status") != "queued" {
		t.Fatalf("sendNotificationToAll: %v", d)
	}
	return id, int(total)
}

// Job reads a broadcast through the proxy.
func (c *Cluster) Job(t *testing.T, admin, id string) map[string]any {
	t.Helper()
	d := c.MustGQL(t, "notificationJob "+id, admin, `query($id:ID!){notificationJob(id:$id){`+jobFields+`}}`, map[string]any{"id": id})
	j, _ := d["notificationJob"].(map[string]any)
	if j == nil {
		t.Fatalf("notificationJob %s: %v", id, d)
	}
	return j
}

// Finished reports whether a job (a broadcast's or a messenger
// broadcast's) has ended.
func Finished(j map[string]any) bool { return j["status"] != "queued" && j["status"] != "running" }

// WaitFinished polls the job until it is finished, failing after limit.
func (c *Cluster) WaitFinished(t *testing.T, admin, id string, limit time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := c.Job(t, admin, id)
		if Finished(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("broadcast %s not finished after %s: %v", id, limit, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ExpectCompleted checks a finished broadcast's counters: completed, every
// recipient sent once, nothing failed.
func ExpectCompleted(t *testing.T, j map[string]any, total int) {
	t.Helper()
	want := map[string]any{"status": "completed", "totalRecipients": float64(total), "sent": float64(total), "failed": float64(0), "invalidTokens": float64(0)}
	for k, v := range want {
		if j[k] != v {
			t.Fatalf("broadcast %v: want %v", j, want)
		}
	}
}

// Deliveries counts the messages the fake FCM accepted for the broadcast
// job (its collapse key), per device token.
func (c *Cluster) Deliveries(job string) map[string]int {
	out := map[string]int{}
	for _, m := range c.FCM.Messages() {
		if m.CollapseKey == job {
			out[m.Token]++
		}
	}
	return out
}

// ExpectReachedAll fails the test (without stopping it) when one of
// tokens never got the broadcast job, and returns the pushes beyond one
// per token and how many tokens got more than one: after a crash or a
// fault, repeats are allowed up to a bound each test works out itself.
func (c *Cluster) ExpectReachedAll(t *testing.T, job string, tokens []string) (repeats, repeatedTokens int) {
	t.Helper()
	got := c.Deliveries(job)
	var missed []string
	for _, tok := range tokens {
		switch n := got[tok]; {
		case n == 0:
			missed = append(missed, tok)
		case n > 1:
			repeats += n - 1
			repeatedTokens++
		}
	}
	if len(missed) > 0 {
		t.Errorf("%d of %d devices never got the broadcast; first: %v", len(missed), len(tokens), missed[:min(len(missed), 10)])
	}
	return repeats, repeatedTokens
}

// AsInt returns a JSON number as an int, failing the test on anything else.
func AsInt(t *testing.T, v any) int {
	t.Helper()
	f, ok := v.(float64)
	if !ok || f != float64(int(f)) {
		t.Fatalf("%v (%T) is not a whole JSON number", v, v)
	}
	return int(f)
}

// SendTimes returns when the fake FCM received each of the exchanges,
// earliest first.
func SendTimes(exchanges []fcmtest.Exchange) []time.Time {
	var times []time.Time
	for _, e := range exchanges {
		times = append(times, e.Received)
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	return times
}

// MostInWindow returns the most of the sorted times that fall within one
// window, and the first of them.
func MostInWindow(times []time.Time, window time.Duration) (most int, from time.Time) {
	for i, j := 0, 0; i < len(times); i++ {
		for times[i].Sub(times[j]) >= window {
			j++
		}
		if n := i - j + 1; n > most {
			most, from = n, times[j]
		}
	}
	return most, from
}
