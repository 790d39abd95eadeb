package main

// Webhooks end to end: a receiver started in the test, signatures checked
// by the reference Standard Webhooks library, endpoints managed with an
// API key on both doors.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// hookDelivery is one request a receiver got.
type hookDelivery struct {
	path   string
	header http.Header
	body   []byte
	at     time.Time
}

// id is the delivery's webhook-id; typ the payload's type.
func (d hookDelivery) id() string { return d.header.Get("webhook-id") }

func (d hookDelivery) typ() string {
	var p struct{ Type string }
	_ = json.Unmarshal(d.body, &p)
	return p.Type
}

// hookReceiver is a webhook receiver: it records every request and answers
// what answer says for the nth request to that path.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	got    []hookDelivery
	answer func(path string, n int, w http.ResponseWriter)
}

func newHookReceiver(t testing.TB, answer func(path string, n int, w http.ResponseWriter)) *hookReceiver {
	r := &hookReceiver{answer: answer}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, hookDelivery{path: req.URL.Path, header: req.Header.Clone(), body: body, at: time.Now()})
		n := 0
		for _, d := range r.got {
			if d.path == req.URL.Path {
				n++
			}
		}
		r.mu.Unlock()
		if r.answer != nil {
			r.answer(req.URL.Path, n, w)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// at returns the deliveries to path so far.
func (r *hookReceiver) at(path string) []hookDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookDelivery
	for _, d := range r.got {
		if d.path == path {
			out = append(out, d)
		}
	}
	return out
}

// waitFor polls until cond holds of the deliveries to path.
func (r *hookReceiver) waitFor(t testing.TB, path string, cond func([]hookDelivery) bool, what string) []hookDelivery {
	t.Helper()
	eventually(t, func() bool { return cond(r.at(path)) }, "receiver %s: %s; got %d deliveries", path, what, len(r.at(path)))
	return r.at(path)
}

// rescueWait bounds what waits for River to rescue the job of a killed
// process: its timeout, then the rescuer's next pass.
const rescueWait = 3 * time.Minute

// waitForLong is waitFor with rescueWait as its deadline.
func (r *hookReceiver) waitForLong(t testing.TB, path string, cond func([]hookDelivery) bool, what string) []hookDelivery {
	t.Helper()
	deadline := time.Now().Add(rescueWait)
	for !cond(r.at(path)) {
		if time.Now().After(deadline) {
			t.Fatalf("receiver %s: %s within %s; got %d deliveries", path, what, rescueWait, len(r.at(path)))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return r.at(path)
}

// ofType is the deliveries of one event type.
func ofType(ds []hookDelivery, typ string) []hookDelivery {
	var out []hookDelivery
	for _, d := range ds {
		if d.typ() == typ {
			out = append(out, d)
		}
	}
	return out
}

// verifyHook checks a delivery's signature with the reference library and
// returns its payload.
func verifyHook(t testing.TB, secret string, d hookDelivery) map[string]any {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	if err := wh.Verify(d.body, d.header); err != nil {
		t.Fatalf("delivery %s (%s) does not verify: %v\nheaders %v", d.id(), d.body, err, d.header)
	}
	var p map[string]any
	if err := json.Unmarshal(d.body, &p); err != nil {
		t.Fatal(err)
	}
	if _, err := time.Parse(time.RFC3339Nano, p["timestamp"].(string)); err != nil || p["type"] == "" || p["data"] == nil || len(p) != 3 {
		t.Fatalf("payload %s is not {type, timestamp, data}", d.body)
	}
	return p
}

func webhooksEnv(extra map[string]string) map[string]string {
	env := map[string]string{
		"HERALD_WEBHOOKS_ALLOW_INSECURE": "on",
		"HERALD_WEBHOOKS_ALLOW_PRIVATE":  "on",
		"HERALD_WEBHOOKS_RETRY_SCHEDULE": "100ms,100ms,100ms",
		"HERALD_REFRESH_REUSE_GRACE":     "1ms",
		"HERALD_RATE_LIMIT_AUTH":         "1000",
		// The tests poll (every 10 ms) for what a loaded machine may take
		// seconds to do: the global and API key tiers would refuse them.
		"HERALD_RATE_LIMIT_GLOBAL": "0",
		"HERALD_RATE_LIMIT_APIKEY": "0",
	}
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// createHook registers an endpoint over REST with the key and returns its
// id and secret.
func createHook(t testing.TB, h *herald, key, url string, types []string) (id, secret string) {
	t.Helper()
	status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/webhooks", map[string]any{"url": url, "description": "test receiver", "eventTypes": types}, withHeader("X-API-Key", key))
	r := envelopeResult(t, "create webhook", status, env, hdr)
	expectOK(t, "create webhook", r, http.StatusCreated)
	secret, _ = jsonPath(r.data, "secret").(string)
	id, _ = jsonPath(r.data, "endpoint", "id").(string)
	if !strings.HasPrefix(secret, "whsec_") || id == "" || jsonPath(r.data, "endpoint", "enabled") != true {
		t.Fatalf("created webhook: %v", r.data)
	}
	return id, secret
}

func hookREST(t testing.TB, h *herald, key, method, path string) result {
	t.Helper()
	status, env, hdr := h.rest(t, method, path, nil, withHeader("X-API-Key", key))
	return envelopeResult(t, method+" "+path, status, env, hdr)
}

const webhookDeliveriesDoc = `query D($id: ID!, $first: Int, $after: String) {
  webhookDeliveries(endpointId: $id, first: $first, after: $after) { nodes { id eventId eventType attempt statusCode success durationMs error createdAt } pageInfo { endCursor hasNextPage } }
}`

func TestWebhooksE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		rcv := newHookReceiver(t, func(path string, n int, w http.ResponseWriter) {
			switch {
			case path == "/flaky" && n == 1:
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusServiceUnavailable)
			case path == "/flaky" && n == 2:
				w.WriteHeader(http.StatusInternalServerError)
			case path == "/gone":
				w.WriteHeader(http.StatusGone)
			default:
				w.WriteHeader(http.StatusOK)
			}
		})
		h := startHerald(t, d, webhooksEnv(nil))
		admin := newAdminToken(t, h, "ops@example.com")
		key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
		other, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "sender", "scopes": []string{"notifications:send"}})
		r := hookREST(t, h, other, http.MethodGet, "/api/v1/webhooks")
		expectError(t, "a key without webhooks:manage", r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		if r.details["scope"] != "webhooks:manage" {
			t.Fatalf("403 details %v", r.details)
		}
		allID, secret := createHook(t, h, key, rcv.srv.URL+"/all", webhooks.Catalogue)

		// Every change of today's API, once each.
		email := "ann@example.com"
		newVerifiedUser(t, h, restDoor.name, email)
		expectError(t, "signup again", call(t, h, restDoor.name, opSignup, map[string]any{"email": email, "password": testPassword}), http.StatusConflict, "EMAIL_ALREADY_EXISTS")
		expectOK(t, "request reset", call(t, h, restDoor.name, opRequestReset, map[string]any{"email": email}), http.StatusOK)
		code := h.code(t, email, 2, accounts.PurposeReset)
		expectOK(t, "reset", call(t, h, restDoor.name, opResetPass, map[string]any{"email": email, "code": code, "newPassword": newPassword}), http.StatusOK)
		tok := login(t, h, restDoor.name, email, newPassword)
		expectOK(t, "refresh", call(t, h, restDoor.name, opRefresh, map[string]any{"refreshToken": tok.refresh}), http.StatusOK)
		time.Sleep(20 * time.Millisecond) // past the 1ms grace: the old token again is a reuse
		expectError(t, "refresh reuse", call(t, h, restDoor.name, opRefresh, map[string]any{"refreshToken": tok.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
		tok = login(t, h, restDoor.name, email, newPassword)
		dev := mustRegister(t, h, restDoor.name, tok.access, "android", "push-token-1", "Phone")
		expectOK(t, "remove device", removeDevice(t, h, restDoor.name, tok.access, dev["deviceId"].(string)), http.StatusOK)
		mustRegister(t, h, restDoor.name, tok.access, "android", "push-token-2", "Tablet")
		jobID, _ := broadcast(t, h, admin, notify("Hello", "World", nil))
		waitJob(t, h, admin, jobID, pollWait, jobStatusIs("completed"), "the broadcast completes")

		want := []string{webhooks.UserCreated, webhooks.UserVerified, webhooks.UserPasswordReset, webhooks.SessionReuseDetected,
			webhooks.DeviceRegistered, webhooks.DeviceRemoved, webhooks.BroadcastCompleted}
		got := rcv.waitFor(t, "/all", func(ds []hookDelivery) bool {
			return !slices.ContainsFunc(want, func(typ string) bool { return len(ofType(ds, typ)) == 0 })
		}, "an event of each type")
		byType := map[string]map[string]any{}
		for _, dl := range got {
			p := verifyHook(t, secret, dl)
			byType[dl.typ()] = p["data"].(map[string]any)
		}
		if byType[webhooks.UserCreated]["email"] != email || byType[webhooks.DeviceRemoved]["deviceId"] != dev["deviceId"] ||
			byType[webhooks.BroadcastCompleted]["jobId"] != jobID || byType[webhooks.UserPasswordReset]["sessionsRevoked"] != true {
			t.Fatalf("event data: %v", byType)
		}
		// Exactly one event per change in the outbox: the failed signup
		// wrote none (user.created twice: the admin, then ann);
		// device.registered twice, for two devices.
		db := h.store(t)
		for typ, n := range map[string]int{webhooks.UserCreated: 2, webhooks.UserVerified: 1, webhooks.UserPasswordReset: 1, webhooks.SessionReuseDetected: 1,
			webhooks.DeviceRegistered: 2, webhooks.DeviceRemoved: 1, webhooks.BroadcastCompleted: 1} {
			evs, err := db.WebhookEvents(t.Context(), typ)
			if err != nil || len(evs) != n {
				t.Fatalf("%s: %d events in the outbox (%v), want %d", typ, len(evs), err, n)
			}
		}
		for _, raw := range got {
			if strings.Contains(string(raw.body), testPassword) || strings.Contains(string(raw.body), newPassword) || strings.Contains(string(raw.body), code) || strings.Contains(string(raw.body), "push-token") {
				t.Fatalf("a payload holds a secret: %s", raw.body)
			}
		}

		// A ping through the GraphQL door, then a rotation: both secrets
		// sign for the overlap.
		pr := gql(t, h, "sendWebhookPing", `mutation P($id: ID!) { sendWebhookPing(endpointId: $id) }`, map[string]any{"id": allID}, withHeader("X-API-Key", key))
		expectOK(t, "ping", pr, http.StatusOK)
		pingID, _ := pr.data.(string)
		ping := rcv.waitFor(t, "/all", func(ds []hookDelivery) bool {
			return slices.ContainsFunc(ds, func(d hookDelivery) bool { return d.id() == pingID })
		}, "the ping")
		verifyHook(t, secret, ping[len(ping)-1])
		rot := hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/rotate-secret")
		expectOK(t, "rotate", rot, http.StatusOK)
		newSecret, _ := jsonPath(rot.data, "secret").(string)
		if newSecret == secret || jsonPath(rot.data, "endpoint", "previousSecretExpiresAt") == nil {
			t.Fatalf("rotated: %v", rot.data)
		}
		pr = gql(t, h, "sendWebhookPing", `mutation P($id: ID!) { sendWebhookPing(endpointId: $id) }`, map[string]any{"id": allID}, withHeader("X-API-Key", key))
		pingID, _ = pr.data.(string)
		ds := rcv.waitFor(t, "/all", func(ds []hookDelivery) bool {
			return slices.ContainsFunc(ds, func(d hookDelivery) bool { return d.id() == pingID })
		}, "the ping after the rotation")
		rotated := ds[slices.IndexFunc(ds, func(d hookDelivery) bool { return d.id() == pingID })]
		if n := len(strings.Fields(rotated.header.Get("webhook-signature"))); n != 2 {
			t.Fatalf("%d signatures after a rotation, want 2: %q", n, rotated.header.Get("webhook-signature"))
		}
		verifyHook(t, secret, rotated)
		verifyHook(t, newSecret, rotated)

		// Redelivery: the same event, the same webhook-id.
		created := ofType(got, webhooks.UserCreated)[0]
		expectOK(t, "redeliver", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/events/"+created.id()+"/redeliver"), http.StatusAccepted)
		rcv.waitFor(t, "/all", func(ds []hookDelivery) bool {
			return len(slices.DeleteFunc(slices.Clone(ds), func(d hookDelivery) bool { return d.id() != created.id() })) == 2
		}, "the redelivery")
		expectError(t, "redeliver an unknown event", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/events/msg_nothing/redeliver"), http.StatusNotFound, "WEBHOOK_EVENT_NOT_FOUND")
		expectError(t, "an unknown endpoint", hookREST(t, h, key, http.MethodGet, "/api/v1/webhooks/ep_nothing"), http.StatusNotFound, "WEBHOOK_NOT_FOUND")

		// Retries: 503 with Retry-After 1, then 500, then 200. 410
		// disables its endpoint after one attempt.
		flakyID, flakySecret := createHook(t, h, key, rcv.srv.URL+"/flaky", []string{webhooks.UserCreated})
		goneID, _ := createHook(t, h, key, rcv.srv.URL+"/gone", []string{webhooks.UserCreated})
		newVerifiedUser(t, h, graphQLDoor.name, "bob@example.com")
		flaky := rcv.waitFor(t, "/flaky", func(ds []hookDelivery) bool { return len(ds) >= 3 }, "three attempts")
		for _, dl := range flaky {
			verifyHook(t, flakySecret, dl)
			if dl.id() != flaky[0].id() {
				t.Fatalf("retries carry another webhook-id: %s, %s", dl.id(), flaky[0].id())
			}
		}
		if gap := flaky[1].at.Sub(flaky[0].at); gap < 900*time.Millisecond {
			t.Fatalf("the retry came %s after a Retry-After of 1 s", gap)
		}
		// The receiver has the third delivery a moment before the attempt
		// is recorded.
		var attempts result
		var nodes []any
		eventually(t, func() bool {
			attempts = gql(t, h, "webhookDeliveries", webhookDeliveriesDoc, map[string]any{"id": flakyID, "first": 2}, withHeader("X-API-Key", key))
			expectOK(t, "webhookDeliveries", attempts, http.StatusOK)
			nodes, _ = jsonPath(attempts.data, "nodes").([]any)
			return len(nodes) > 0 && jsonPath(nodes[0], "attempt") == float64(3)
		}, "the third attempt was never recorded")
		if len(nodes) != 2 || jsonPath(nodes[0], "statusCode") != float64(200) || jsonPath(nodes[0], "attempt") != float64(3) ||
			jsonPath(nodes[1], "statusCode") != float64(500) || jsonPath(attempts.data, "pageInfo", "hasNextPage") != true {
			t.Fatalf("first page of attempts: %v", attempts.data)
		}
		after, _ := jsonPath(attempts.data, "pageInfo", "endCursor").(string)
		rest := hookREST(t, h, key, http.MethodGet, "/api/v1/webhooks/"+flakyID+"/deliveries?first=10&after="+after)
		expectOK(t, "deliveries page 2", rest, http.StatusOK)
		if nodes, _ := jsonPath(rest.data, "nodes").([]any); len(nodes) != 1 || jsonPath(nodes[0], "statusCode") != float64(503) || jsonPath(nodes[0], "attempt") != float64(1) {
			t.Fatalf("second page of attempts: %v", rest.data)
		}
		eventually(t, func() bool {
			r := hookREST(t, h, key, http.MethodGet, "/api/v1/webhooks/"+goneID)
			reason, _ := jsonPath(r.data, "disabledReason").(string)
			return jsonPath(r.data, "enabled") == false && strings.Contains(reason, "410")
		}, "the endpoint answering 410 is disabled")
		newVerifiedUser(t, h, restDoor.name, "cy@example.com")
		rcv.waitFor(t, "/flaky", func(ds []hookDelivery) bool { return len(ds) >= 4 }, "the next event")
		if n := len(rcv.at("/gone")); n != 1 {
			t.Fatalf("the disabled endpoint got %d deliveries, want its one", n)
		}
		if h.metric(t, `herald_webhook_deliveries_total{outcome="success"}`) < 1 || h.metric(t, `herald_webhook_deliveries_total{outcome="retry"}`) < 2 ||
			h.metric(t, `herald_webhook_deliveries_total{outcome="disabled"}`) != 1 {
			t.Fatal("herald_webhook_deliveries_total does not count the attempts")
		}

		// Enable, disable, delete; list.
		expectOK(t, "enable", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+goneID+"/enable"), http.StatusOK)
		list := hookREST(t, h, key, http.MethodGet, "/api/v1/webhooks")
		if l, _ := list.data.([]any); len(l) != 3 || strings.Contains(string(mustMarshal(t, list.data)), "whsec_") {
			t.Fatalf("list: %v", list.data)
		}
		expectOK(t, "delete", hookREST(t, h, key, http.MethodDelete, "/api/v1/webhooks/"+goneID), http.StatusOK)
		expectError(t, "delete twice", hookREST(t, h, key, http.MethodDelete, "/api/v1/webhooks/"+goneID), http.StatusNotFound, "WEBHOOK_NOT_FOUND")
	})
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Without HERALD_WEBHOOKS_ALLOW_PRIVATE, an endpoint on a private address,
// a zoned one or an odd port is refused at registration, without saying
// what its name resolved to; one that got in anyway (its name resolved
// elsewhere then) is refused when the delivery dials, its attempt
// recorded as unreachable, and no log line holds its URL.
func TestWebhooksRefusePrivateAddressesE2E(t *testing.T) {
	sqlstoretest.Require(t, "sqlite")
	rcv := newHookReceiver(t, nil)
	h := startHerald(t, "sqlite", webhooksEnv(map[string]string{"HERALD_WEBHOOKS_ALLOW_PRIVATE": "off"}))
	admin := newAdminToken(t, h, "ops@example.com")
	key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
	for _, url := range []string{rcv.srv.URL + "/x", "http://localhost:9/x", "http://localhost/x", "http://169.254.169.254/latest/meta-data", "http://[::1]/x", "http://10.0.0.1/x",
		"http://[fd00:ec2::254]/", "https://[::1%25lo]:18099/hook", "https://[fe80::1%25eth0]/", "https://[fd00:ec2::254%25eth0]/",
		"https://[64:ff9b::a9fe:a9fe%25eth0]/", "https://[fc00::1%25x]/", "https://[::7f00:1]/", "https://[64:ff9b:1::a00:1]/", "https://1.1.1.1:6379/"} {
		status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/webhooks", map[string]any{"url": url, "eventTypes": []string{webhooks.UserCreated}}, withHeader("X-API-Key", key))
		r := envelopeResult(t, "create "+url, status, env, hdr)
		expectError(t, "create "+url, r, http.StatusBadRequest, "VALIDATION_ERROR")
		if r.details["field"] != "url" {
			t.Fatalf("%s: details %v", url, r.details)
		}
		if answer := string(mustMarshal(t, env)); strings.Contains(answer, "127.0.0.1") || strings.Contains(answer, "::ffff") {
			t.Fatalf("%s: the refusal tells what the name resolved to: %s", url, answer)
		}
	}
	status, env, _ := h.rest(t, http.MethodPost, "/api/v1/webhooks", map[string]any{"url": "http://localhost/x", "eventTypes": []string{webhooks.UserCreated}}, withHeader("X-API-Key", key))
	if status != http.StatusBadRequest || !strings.Contains(string(mustMarshal(t, env)), "not a public address") {
		t.Fatalf("localhost: %d %v", status, env)
	}
	gr := gql(t, h, "createWebhookEndpoint", `mutation C($in: CreateWebhookEndpointInput!) { createWebhookEndpoint(input: $in) { secret } }`,
		map[string]any{"in": map[string]any{"url": "http://127.0.0.1:1/", "eventTypes": []string{webhooks.UserCreated}}}, withHeader("X-API-Key", key))
	expectError(t, "GraphQL create on loopback", gr, http.StatusBadRequest, "VALIDATION_ERROR")

	// An endpoint whose address became private after registration.
	now := time.Now().UTC()
	secret, _ := webhooks.NewSecret()
	if err := h.store(t).CreateWebhookEndpoint(t.Context(), webhooks.Endpoint{ID: "ep_rebound", URL: rcv.srv.URL + "/rebound?token=s3cr3t-query", EventTypes: []string{webhooks.UserCreated}, Secret: secret, CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	newVerifiedUser(t, h, restDoor.name, "dan@example.com")
	for _, door := range []string{restDoor.name, graphQLDoor.name} {
		eventually(t, func() bool {
			var nodes []any
			if door == restDoor.name {
				r := hookREST(t, h, key, http.MethodGet, "/api/v1/webhooks/ep_rebound/deliveries")
				nodes, _ = jsonPath(r.data, "nodes").([]any)
			} else {
				r := gql(t, h, "webhookDeliveries", webhookDeliveriesDoc, map[string]any{"id": "ep_rebound"}, withHeader("X-API-Key", key))
				nodes, _ = jsonPath(r.data, "nodes").([]any)
			}
			return len(nodes) > 0 && jsonPath(nodes[0], "statusCode") == nil && jsonPath(nodes[0], "error") == webhooks.ErrorUnreachable
		}, "%s: the delivery to a private address is refused at dial time, as unreachable", door)
	}
	if n := len(rcv.at("/rebound")); n != 0 {
		t.Fatalf("the receiver on a private address got %d requests", n)
	}
	if !h.logsMention(t, "ep_rebound") {
		t.Fatal("no log line names the endpoint")
	}
	if h.logsMention(t, "s3cr3t-query") || h.logsMention(t, "/rebound") {
		t.Fatal("a log line holds the endpoint's URL")
	}
}

// One receiver that answers only after most of the timeout, with 40
// events queued, does not delay another endpoint's: the fast one has all
// its events before the slow one has answered more than two rounds of
// its deliveries in flight (HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY), and
// the slow one never has more than that in flight. Its parked events are
// all delivered once it answers.
func TestWebhookSlowReceiverDelaysNoOtherE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		const concurrency, slowEvents, fastEvents = 2, 40, 10
		release := make(chan struct{})
		var once sync.Once
		releaseSlow := func() { once.Do(func() { close(release) }) }
		var slowAnswered, slowInFlight, slowMaxInFlight atomic.Int32
		rcv := newHookReceiver(t, func(path string, _ int, w http.ResponseWriter) {
			if path == "/slow" {
				n := slowInFlight.Add(1)
				for m := slowMaxInFlight.Load(); n > m && !slowMaxInFlight.CompareAndSwap(m, n); m = slowMaxInFlight.Load() {
				}
				select {
				case <-release:
				case <-time.After(webhooks.Timeout - time.Second): // most of the timeout
				}
				slowInFlight.Add(-1)
				slowAnswered.Add(1)
			}
			w.WriteHeader(http.StatusOK)
		})
		defer releaseSlow() // before the receiver and Herald stop
		h := startHerald(t, d, webhooksEnv(map[string]string{"HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY": strconv.Itoa(concurrency)}))
		admin := newAdminToken(t, h, "ops@example.com")
		key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
		slowID, _ := createHook(t, h, key, rcv.srv.URL+"/slow", []string{webhooks.UserDeleted})
		fastID, _ := createHook(t, h, key, rcv.srv.URL+"/fast", []string{webhooks.UserDeleted})
		// The events are written as a ping writes them (its event and
		// job in one transaction), straight into the store: fifty API
		// calls under -race can take longer than the slow receiver holds
		// an answer, which would blur the count below.
		db := h.store(t)
		inserter := river.NewWorkers() // never started: the server works the jobs
		river.AddWorker(inserter, &webhooks.DeliveryWorker{})
		if _, err := jobs.Open(db, jobs.Config{Workers: inserter}); err != nil {
			t.Fatal(err)
		}
		ping := func(id string) {
			ev, err := webhooks.NewEvent(webhooks.Ping, time.Now(), map[string]any{"endpointId": id})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.SendWebhookEvent(t.Context(), id, ev); err != nil {
				t.Fatal(err)
			}
		}
		for range slowEvents {
			ping(slowID)
		}
		answeredBefore := slowAnswered.Load()
		for range fastEvents {
			ping(fastID)
		}
		rcv.waitFor(t, "/fast", func(ds []hookDelivery) bool { return len(ds) == fastEvents }, "every event of the fast receiver")
		// Without the per-endpoint limit the slow receiver's 40 take all
		// 20 workers, and the fast events wait until 20 have answered.
		// With it, they pass the slow ones in flight: allowing a second
		// round of those keeps a loaded machine (-race) from failing it.
		if n := slowAnswered.Load() - answeredBefore; n > 2*concurrency {
			t.Fatalf("the fast receiver's %d events arrived only after the slow one had answered %d more", fastEvents, n)
		}
		held, parked, err := h.store(t).WebhookSlots(t.Context(), slowID)
		if err != nil || held > concurrency || parked < slowEvents-2*concurrency {
			t.Fatalf("the slow endpoint: %d slots held, %d parked (%v)", held, parked, err)
		}
		releaseSlow()
		rcv.waitFor(t, "/slow", func(ds []hookDelivery) bool { return len(ds) == slowEvents }, "every event of the slow receiver, once it answers")
		if m := slowMaxInFlight.Load(); m > concurrency {
			t.Fatalf("the slow receiver had %d deliveries in flight at once, want at most %d", m, concurrency)
		}
	})
}

// Deleting an account leaves nothing readable about it in the outbox
// (its user.created with the email is gone, and so are its other events),
// only user.deleted with its id; and an event is redelivered only to an
// endpoint it was sent to.
func TestWebhooksAccountDeletionE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		rcv := newHookReceiver(t, nil)
		h := startHerald(t, d, webhooksEnv(nil))
		admin := newAdminToken(t, h, "ops@example.com")
		key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
		allID, _ := createHook(t, h, key, rcv.srv.URL+"/all", webhooks.Catalogue)
		deletedOnly, _ := createHook(t, h, key, rcv.srv.URL+"/deleted", []string{webhooks.UserDeleted})

		const email = "zoe.private@example.com"
		newVerifiedUser(t, h, restDoor.name, email)
		tok := login(t, h, restDoor.name, email, testPassword)
		mustRegister(t, h, restDoor.name, tok.access, "android", "push-token-zoe", "Zoe's phone")
		newVerifiedUser(t, h, restDoor.name, "yan@example.com")
		zoe := h.account(t, email).ID
		got := rcv.waitFor(t, "/all", func(ds []hookDelivery) bool {
			return len(ofType(ds, webhooks.UserCreated)) == 2 && len(ofType(ds, webhooks.DeviceRegistered)) == 1
		}, "the two signups and the device")
		var zoeCreated, yanCreated string
		for _, dl := range ofType(got, webhooks.UserCreated) {
			if strings.Contains(string(dl.body), email) {
				zoeCreated = dl.id()
			} else {
				yanCreated = dl.id()
			}
		}

		expectOK(t, "delete zoe", adminOp(t, h, restDoor.name, "deleteUser", map[string]any{"userId": zoe}, withBearer(admin)), http.StatusOK)
		rcv.waitFor(t, "/deleted", func(ds []hookDelivery) bool { return len(ds) == 1 }, "user.deleted")
		db := h.store(t)
		mentions := 0
		for _, typ := range append(slices.Clone(webhooks.Catalogue), webhooks.Ping) {
			evs, err := db.WebhookEvents(t.Context(), typ)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				body := string(ev.Payload)
				if strings.Contains(body, email) || strings.Contains(body, "Zoe") || strings.Contains(body, "zoe.private") {
					t.Fatalf("the outbox still holds %s", body)
				}
				if strings.Contains(body, zoe) {
					mentions++
					if typ != webhooks.UserDeleted {
						t.Fatalf("an event about the deleted account stays: %s", body)
					}
				}
			}
		}
		if mentions != 1 {
			t.Fatalf("%d events name the deleted account, want its user.deleted", mentions)
		}
		// Its user.created is gone: no redelivery of the email.
		expectError(t, "redeliver the deleted account's signup", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/events/"+zoeCreated+"/redeliver"),
			http.StatusNotFound, "WEBHOOK_EVENT_NOT_FOUND")
		// An endpoint that does not subscribe to user.created never gets
		// one, on either door.
		r := hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+deletedOnly+"/events/"+yanCreated+"/redeliver")
		expectError(t, "redeliver to an endpoint without the type", r, http.StatusConflict, "WEBHOOK_EVENT_NOT_SUBSCRIBED")
		gr := gql(t, h, "redeliverWebhookEvent", `mutation R($ep: ID!, $ev: ID!) { redeliverWebhookEvent(endpointId: $ep, eventId: $ev) }`,
			map[string]any{"ep": deletedOnly, "ev": yanCreated}, withHeader("X-API-Key", key))
		expectError(t, "GraphQL redeliver to an endpoint without the type", gr, http.StatusConflict, "WEBHOOK_EVENT_NOT_SUBSCRIBED")
		// Nor does an endpoint created after the event, though it does.
		lateID, _ := createHook(t, h, key, rcv.srv.URL+"/late", []string{webhooks.UserCreated})
		expectError(t, "redeliver to an endpoint younger than the event", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+lateID+"/events/"+yanCreated+"/redeliver"),
			http.StatusConflict, "WEBHOOK_EVENT_NOT_SUBSCRIBED")
		// A ping goes again to its endpoint, to no other.
		pr := hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/ping")
		expectOK(t, "ping", pr, http.StatusAccepted)
		pingID, _ := jsonPath(pr.data, "eventId").(string)
		expectOK(t, "redeliver the ping", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/events/"+pingID+"/redeliver"), http.StatusAccepted)
		expectError(t, "redeliver a ping to another endpoint", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+deletedOnly+"/events/"+pingID+"/redeliver"),
			http.StatusConflict, "WEBHOOK_EVENT_NOT_SUBSCRIBED")
		expectOK(t, "redeliver to an endpoint with the type", hookREST(t, h, key, http.MethodPost, "/api/v1/webhooks/"+allID+"/events/"+yanCreated+"/redeliver"), http.StatusAccepted)
		rcv.waitFor(t, "/all", func(ds []hookDelivery) bool {
			return len(slices.DeleteFunc(slices.Clone(ds), func(d hookDelivery) bool { return d.id() != yanCreated })) == 2
		}, "the redelivery")
		if n := len(rcv.at("/late")); n != 0 {
			t.Fatalf("the late endpoint got %d deliveries", n)
		}
		for _, dl := range rcv.at("/deleted") {
			if dl.typ() != webhooks.UserDeleted {
				t.Fatalf("the user.deleted endpoint got %s", dl.body)
			}
		}
	})
}

// An endpoint whose every attempt fails for HERALD_WEBHOOKS_DISABLE_AFTER
// (five days in production, shortened here) is disabled, and a log line
// says so.
func TestWebhookEndpointDisabledAfterFailingE2E(t *testing.T) {
	sqlstoretest.Require(t, "sqlite")
	rcv := newHookReceiver(t, func(_ string, _ int, w http.ResponseWriter) { w.WriteHeader(http.StatusBadGateway) })
	h := startHerald(t, "sqlite", webhooksEnv(map[string]string{
		"HERALD_WEBHOOKS_RETRY_SCHEDULE": "200ms,200ms,200ms,200ms,200ms,200ms",
		"HERALD_WEBHOOKS_DISABLE_AFTER":  "500ms",
	}))
	admin := newAdminToken(t, h, "ops@example.com")
	key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
	id, _ := createHook(t, h, key, rcv.srv.URL+"/down", []string{webhooks.UserCreated})
	newVerifiedUser(t, h, restDoor.name, "eve@example.com")
	eventually(t, func() bool {
		r := hookREST(t, h, key, http.MethodGet, "/api/v1/webhooks/"+id)
		reason, _ := jsonPath(r.data, "disabledReason").(string)
		return jsonPath(r.data, "enabled") == false && strings.Contains(reason, "every attempt failed")
	}, "the failing endpoint is disabled")
	if !h.logsMention(t, "webhook endpoint disabled: every attempt failed") {
		t.Fatal("no log line says the endpoint was disabled")
	}
	n := len(rcv.at("/down"))
	if n < 2 || n > 6 {
		t.Fatalf("%d attempts before the endpoint was disabled", n)
	}
	// Nothing more is sent to it.
	newVerifiedUser(t, h, restDoor.name, "fay@example.com")
	time.Sleep(300 * time.Millisecond)
	if got := len(rcv.at("/down")); got != n {
		t.Fatalf("a disabled endpoint got %d more deliveries", got-n)
	}
}

// SIGKILL while a delivery is in flight (the change committed, its event
// and job with it; the receiver has the request but Herald has not
// recorded an answer), then a restart: the event is delivered again, with
// the same webhook-id, and recorded as delivered.
func testWebhookSurvivesKill(t *testing.T, bin string, d sqlstoretest.Dialect) {
	release := make(chan struct{})
	var once sync.Once
	rcv := newHookReceiver(t, func(_ string, n int, w http.ResponseWriter) {
		if n == 1 {
			<-release // held until Herald is dead
		}
		w.WriteHeader(http.StatusOK)
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	env := binaryEnv(t, d, webhooksEnv(map[string]string{"HERALD_LOG_LEVEL": "warn"}))
	if _, stderr, err := runHerald(t, env, "", "admin", "create", "--email", "ops@example.com", "--password", testPassword); err != nil {
		t.Fatalf("admin create: %v\n%s", err, stderr)
	}
	h, p := startBinary(t, bin, d, env)
	admin := login(t, h, restDoor.name, "ops@example.com", testPassword).access
	key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
	id, secret := createHook(t, h, key, rcv.srv.URL+"/crash", []string{webhooks.UserCreated})
	expectOK(t, "signup", call(t, h, restDoor.name, opSignup, map[string]any{"email": "gus@example.com", "password": testPassword}), http.StatusCreated)
	first := rcv.waitFor(t, "/crash", func(ds []hookDelivery) bool { return len(ds) == 1 }, "the delivery in flight")[0]
	p.kill(t)
	once.Do(func() { close(release) })

	h2, _ := startBinary(t, bin, d, env)
	// River rescues the job of the dead process once its timeout has
	// passed (about a minute), and it is delivered again.
	again := rcv.waitForLong(t, "/crash", func(ds []hookDelivery) bool { return len(ds) >= 2 }, "the delivery after the restart")
	if again[1].id() != first.id() {
		t.Fatalf("the redelivery has webhook-id %s, the first %s", again[1].id(), first.id())
	}
	p2 := verifyHook(t, secret, again[1])
	if p2["type"] != webhooks.UserCreated || jsonPath(p2, "data", "email") != "gus@example.com" {
		t.Fatalf("payload %v", p2)
	}
	eventually(t, func() bool {
		r := hookREST(t, h2, key, http.MethodGet, "/api/v1/webhooks/"+id+"/deliveries")
		nodes, _ := jsonPath(r.data, "nodes").([]any)
		return len(nodes) > 0 && jsonPath(nodes[0], "success") == true
	}, "the delivery is recorded after the restart")
}
