package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// sseStream is an open event stream, read event by event.
type sseStream struct {
	t      testing.TB
	resp   *http.Response
	events chan rawEvent // closed when the stream ends
}

// rawEvent is one event as it came: its data is parsed by the reader.
type rawEvent struct {
	id    string
	event string
	data  string
	err   string // a line the stream should not have
}

// openSSE opens path as an event stream and expects 200.
func openSSE(t testing.TB, h *herald, path string, opts ...reqOption) *sseStream {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.BaseURL+path, nil)
	for _, o := range opts {
		o(req)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("GET %s: %d %q, want an event stream", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s := &sseStream{t: t, resp: resp, events: make(chan rawEvent, 64)}
	go func() {
		defer close(s.events)
		var cur rawEvent
		have := false
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			field, value, _ := strings.Cut(line, ": ")
			switch {
			case line == "":
				if have {
					s.events <- cur
				}
				cur, have = rawEvent{}, false
			case strings.HasPrefix(line, ":"), field == "retry":
			case field == "id":
				cur.id, have = value, true
			case field == "event":
				cur.event, have = value, true
			case field == "data":
				cur.data, have = value, true
			default:
				s.events <- rawEvent{err: line}
				return
			}
		}
	}()
	return s
}

// next is the stream's next event, decoded; ok is false when the stream
// ended. It waits pollWait at most.
func (s *sseStream) next() (e sseEvent, ok bool) {
	s.t.Helper()
	raw := testsupport.Receive(s.t, s.events, pollWait, "the next event of the stream")
	if raw == (rawEvent{}) {
		return sseEvent{}, false // closed
	}
	if raw.err != "" {
		s.t.Fatalf("unexpected line %q in the event stream", raw.err)
	}
	e.event = raw.event
	if raw.id != "" {
		n, err := strconv.ParseInt(raw.id, 10, 64)
		if err != nil {
			s.t.Fatalf("event id %q", raw.id)
		}
		e.id = n
	}
	if err := json.Unmarshal([]byte(raw.data), &e.data); err != nil {
		s.t.Fatalf("event data %q: %v", raw.data, err)
	}
	return e, true
}

// expectEnd reads the stream to its end and returns its last event; the
// end must come within pollWait.
func (s *sseStream) expectEnd(what string) (last sseEvent) {
	s.t.Helper()
	for {
		e, ok := s.next()
		if !ok {
			return last
		}
		last = e
	}
}

// scheduledBroadcast schedules a broadcast an hour ahead with the admin's
// token and returns its job id.
func scheduledBroadcast(t testing.TB, h *herald, admin string) string {
	t.Helper()
	sendAt := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	r := restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("Later", "In an hour", nil), "sendAt": sendAt}, withBearer(admin))
	expectOK(t, "scheduled broadcast", r, http.StatusAccepted)
	id, _ := jsonPath(r.data, "jobId").(string)
	if id == "" {
		t.Fatalf("scheduled broadcast: %v", r.data)
	}
	return id
}

// probeSSE opens path and closes it at once, returning the status.
func probeSSE(t testing.TB, h *herald, path string, opts ...reqOption) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.BaseURL+path, nil)
	for _, o := range opts {
		o(req)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func eventsPath(jobID string) string { return "/api/v1/notifications/broadcasts/" + jobID + "/events" }

// Event streams as WebSocket connections are: every stream starts with the
// job's current state (a scheduled job's too, over SSE and over the
// GraphQL subscription); the credential is checked at every heartbeat, and
// a revoked key or an expired session ends the stream with an "error"
// event naming the code; streams are capped per caller and per address
// (TOO_MANY_STREAMS before the stream starts); a stream's lifetime is
// bounded.
func TestEventStreamsLikeWebSocketE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, map[string]string{
			"HERALD_SSE_HEARTBEAT":               "200ms",
			"HERALD_WS_MAX_CONNECTIONS_PER_USER": "2",
			"HERALD_WS_MAX_CONNECTIONS_PER_IP":   "3",
			"HERALD_TRUSTED_PROXIES":             "127.0.0.1/32",
		})
		admin := newAdminToken(t, h, "ops@example.com")
		job := scheduledBroadcast(t, h, admin)
		path := eventsPath(job)

		t.Run("a scheduled job's first event", func(t *testing.T) {
			s := openSSE(t, h, path, withBearer(admin))
			e, ok := s.next()
			if !ok || e.event != "progress" || e.data["id"] != job || e.data["status"] != "scheduled" || e.id != 0 {
				t.Fatalf("first event %+v (stream open: %v), want the scheduled state with id 0", e, ok)
			}
			// Over the GraphQL subscription too.
			w := dialWS(t, h, "graphql-transport-ws")
			w.init(map[string]any{"token": admin})
			w.subscribe("j", jobUpdatedDoc, map[string]any{"id": job})
			m := w.next()
			var p struct {
				Data map[string]map[string]any `json:"data"`
			}
			if m.Type != "next" || json.Unmarshal(m.Payload, &p) != nil || p.Data["notificationJobUpdated"]["status"] != "scheduled" {
				t.Fatalf("first subscription message %+v %s, want the scheduled state", m, m.Payload)
			}
			w.close()
		})

		t.Run("a revoked key ends its stream", func(t *testing.T) {
			key, keyID := createKey(t, h, restDoor.name, admin, map[string]any{"name": "doomed", "scopes": []string{"notifications:send"}})
			s := openSSE(t, h, path, withAPIKey(key))
			if e, ok := s.next(); !ok || e.event != "progress" {
				t.Fatalf("first event %+v (open: %v)", e, ok)
			}
			status, env, hdr := h.rest(t, http.MethodDelete, "/api/v1/api-keys/"+keyID, nil, withBearer(admin))
			expectOK(t, "revoke", envelopeResult(t, "revoke", status, env, hdr), http.StatusOK)
			last := s.expectEnd("the stream of a revoked key")
			if last.event != "error" || last.data["code"] != "TOKEN_INVALID" || last.data["message"] == "" {
				t.Fatalf("last event %+v, want an error event with TOKEN_INVALID", last)
			}
		})

		t.Run("the cap per caller and per address", func(t *testing.T) {
			ip := clientIPs()
			refused := func(what, per string, opts ...reqOption) {
				t.Helper()
				status, hdr, raw := h.do(t, http.MethodGet, path, nil, opts...)
				env := restEnvelope(t, what, hdr, raw)
				if status != http.StatusTooManyRequests || jsonPath(env, "error", "code") != "TOO_MANY_STREAMS" ||
					jsonPath(env, "error", "details", "per") != per || jsonPath(env, "error", "details", "limit") == nil || hdr.Get("Retry-After") != "1" {
					t.Fatalf("%s: %d %s, want 429 TOO_MANY_STREAMS per %s", what, status, raw, per)
				}
			}
			first := openSSE(t, h, path, withBearer(admin), from(ip))
			openSSE(t, h, path, withBearer(admin), from(ip))
			refused("a third stream of one user", "caller", withBearer(admin), from(ip))
			// The user's other sessions count with it; another caller has
			// places of its own.
			other := login(t, h, restDoor.name, "ops@example.com", testPassword).access
			refused("a third stream of one user, another session", "caller", withBearer(other), from(clientIPs()))
			key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "watcher", "scopes": []string{"notifications:send"}})
			openSSE(t, h, path, withAPIKey(key), from(ip))
			refused("a fourth stream from one address", "address", withAPIKey(key), from(ip))
			// A stream that ends frees its places.
			first.resp.Body.Close()
			eventually(t, func() bool { return probeSSE(t, h, path, withBearer(admin), from(ip)) == http.StatusOK },
				"the places of an ended stream were not freed")
		})
	})
}

// A stream lasts HERALD_SSE_MAX_DURATION at most, and ends then without an
// error event (EventSource reconnects with its Last-Event-ID); a stream
// whose session expires ends at the session's end with TOKEN_EXPIRED.
func TestEventStreamEndsE2E(t *testing.T) {
	h := startHerald(t, "sqlite", map[string]string{
		"HERALD_SSE_HEARTBEAT":     "200ms",
		"HERALD_SSE_MAX_DURATION":  "1s",
		"HERALD_REFRESH_TOKEN_TTL": "1h",
	})
	admin := newAdminToken(t, h, "ops@example.com")
	job := scheduledBroadcast(t, h, admin)
	s := openSSE(t, h, eventsPath(job), withBearer(admin))
	if last := s.expectEnd("a stream past its lifetime"); last.event != "progress" {
		t.Fatalf("last event %+v, want the progress event alone, no error", last)
	}

	// Sessions of two seconds, access tokens of an hour: the stream ends at
	// the session's end, though its token's own expiry is far.
	short := startHerald(t, "sqlite", map[string]string{
		"HERALD_SSE_HEARTBEAT":     "200ms",
		"HERALD_REFRESH_TOKEN_TTL": "2s",
		"HERALD_ACCESS_TOKEN_TTL":  "1h",
	})
	shortAdmin := newAdminToken(t, short, "ops@example.com")
	job = scheduledBroadcast(t, short, shortAdmin)
	s = openSSE(t, short, eventsPath(job), withBearer(shortAdmin))
	last := s.expectEnd("a stream whose session expired")
	if last.event != "error" || last.data["code"] != "TOKEN_EXPIRED" || jsonPath(last.data, "details", "tokenType") != "access" {
		t.Fatalf("last event %+v, want an error event with TOKEN_EXPIRED of the access token", last)
	}
	// And the token is refused from now on, as the session's.
	status, env, hdr := short.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(shortAdmin))
	expectError(t, "the token of an expired session", envelopeResult(t, "me", status, env, hdr), http.StatusUnauthorized, "TOKEN_EXPIRED")
}
