package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	id    int64
	event string
	data  map[string]any
}

// readSSE parses an event stream until it ends.
func readSSE(t testing.TB, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	var have bool
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		field, value, _ := strings.Cut(line, ": ")
		switch {
		case line == "":
			if have {
				out = append(out, cur)
			}
			cur, have = sseEvent{}, false
		case strings.HasPrefix(line, ":"), field == "retry":
		case field == "id":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				t.Fatalf("event id %q", value)
			}
			cur.id, have = n, true
		case field == "event":
			cur.event = value
		case field == "data":
			if err := json.Unmarshal([]byte(value), &cur.data); err != nil {
				t.Fatalf("event data %q: %v", value, err)
			}
		default:
			t.Fatalf("unexpected line %q in the event stream", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A broadcast followed over SSE from its start: increasing event ids, the
// final state last, then the end; Last-Event-ID resumes (or, at the end,
// answers 204); the errors of the route.
func TestBroadcastEventsSSE(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		const devicesN = 300
		fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		gate := newPushGate(t, fake.URL)
		h := startHerald(t, d, pushEnv(t, fake, gate.URL, map[string]string{"HERALD_PUSH_RATE": "300", "HERALD_PUSH_BATCH_SIZE": "20"}))
		admin := newAdminToken(t, h, "ops@example.com")
		seedDevices(t, h.Env, devicesN, 3, func(email string) {
			expectOK(t, "signup "+email, call(t, h, restDoor.name, opSignup, map[string]any{"email": email, "password": testPassword}), http.StatusCreated)
		})
		// Sends are held until the stream is open (its answer's headers
		// come once the server follows the job), so the job is followed
		// from its start.
		gate.Pause()
		jobID, _ := broadcast(t, h, admin, notify("Live", "progress", nil))
		path := "/api/v1/notifications/broadcasts/" + jobID + "/events"

		req, _ := http.NewRequest(http.MethodGet, h.BaseURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := h.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("events: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		gate.Resume()
		events := readSSE(t, resp.Body)
		resp.Body.Close()
		if len(events) < 2 || asInt(t, events[0].data["sent"]) != 0 {
			t.Fatalf("%d events, want at least the first state and the final one", len(events))
		}
		for i, e := range events {
			if e.event != "progress" || e.data["id"] != jobID {
				t.Fatalf("event %d: %+v", i, e)
			}
			if i > 0 && e.id <= events[i-1].id {
				t.Fatalf("event %d has id %d after %d", i, e.id, events[i-1].id)
			}
		}
		last := events[len(events)-1]
		if last.data["status"] != "completed" || asInt(t, last.data["sent"]) != devicesN || last.data["finishedAt"] == nil {
			t.Fatalf("last event %v, want completed with %d sent", last.data, devicesN)
		}

		// Resuming: from the first event's id, only the final state is
		// newer; from the final one's, there is nothing left (204).
		status, hdr, raw := h.do(t, http.MethodGet, path, nil, withBearer(admin), withHeader("Last-Event-ID", strconv.FormatInt(events[0].id, 10)))
		if status != http.StatusOK || hdr.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("resume: %d %s", status, raw)
		}
		resumed := readSSE(t, strings.NewReader(string(raw)))
		if len(resumed) != 1 || resumed[0].id != last.id || resumed[0].data["status"] != "completed" {
			t.Fatalf("resumed stream %+v, want the final event (id %d) alone", resumed, last.id)
		}
		if status, _, raw := h.do(t, http.MethodGet, path, nil, withBearer(admin), withHeader("Last-Event-ID", strconv.FormatInt(last.id, 10))); status != http.StatusNoContent {
			t.Fatalf("after the final event: %d %s, want 204", status, raw)
		}

		user, _ := newUserToken(t, h, restDoor.name, "plain@example.com")
		for _, c := range []struct {
			name   string
			path   string
			opts   []reqOption
			status int
			code   string
		}{
			{"no credential", path, nil, http.StatusUnauthorized, "AUTH_REQUIRED"},
			{"a user without the scope", path, []reqOption{withBearer(user)}, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS"},
			{"an unknown job", "/api/v1/notifications/broadcasts/00000000-0000-7000-8000-000000000000/events", []reqOption{withBearer(admin)}, http.StatusNotFound, "JOB_NOT_FOUND"},
			{"a malformed Last-Event-ID", path, []reqOption{withBearer(admin), withHeader("Last-Event-ID", "soon")}, http.StatusBadRequest, "VALIDATION_ERROR"},
		} {
			status, hdr, raw := h.do(t, http.MethodGet, c.path, nil, c.opts...)
			env := restEnvelope(t, c.name, hdr, raw)
			if status != c.status || jsonPath(env, "error", "code") != c.code {
				t.Errorf("%s: %d %s, want %d %s", c.name, status, raw, c.status, c.code)
			}
		}
	})
}
