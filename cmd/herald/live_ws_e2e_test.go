package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// wsClient is a graphql-transport-ws client for the tests.
type wsClient struct {
	t testing.TB
	c *websocket.Conn
	// deadline, when set, bounds every read until it is cleared (see
	// expectClose); otherwise each read has wsReadWait.
	deadline time.Time
}

// wsReadWait bounds each read of the test client: a server that should
// answer, or close, and does not fails the test within a few seconds
// instead of leaving it to go test's timeout.
const wsReadWait = 10 * time.Second

// wsMsg is a received protocol message, or the close that ended the
// connection (code != 0).
type wsMsg struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Payload json.RawMessage `json:"payload"`
	code    int
	reason  string
}

// dialWS opens a WebSocket to /graphql offering subprotocols.
func dialWS(t testing.TB, h *herald, subprotocols ...string) *wsClient {
	t.Helper()
	d := websocket.Dialer{Subprotocols: subprotocols, HandshakeTimeout: 10 * time.Second}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(h.BaseURL, "http")+"/graphql", nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade answered %d", resp.StatusCode)
	}
	t.Cleanup(func() { c.Close() })
	return &wsClient{t: t, c: c}
}

func (w *wsClient) send(v any) {
	w.t.Helper()
	if err := w.c.WriteJSON(v); err != nil {
		w.t.Fatalf("send %v: %v", v, err)
	}
}

// read is the next message, or the close; a deadline of wsReadWait (or
// the wait's, when one is set).
func (w *wsClient) read() wsMsg {
	w.t.Helper()
	deadline := w.deadline
	if deadline.IsZero() {
		deadline = time.Now().Add(wsReadWait)
	}
	w.c.SetReadDeadline(deadline)
	_, raw, err := w.c.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return wsMsg{code: ce.Code, reason: ce.Text}
		}
		w.t.Fatalf("read: %v (nothing from the server within the deadline)", err)
	}
	var m wsMsg
	if err := json.Unmarshal(raw, &m); err != nil {
		w.t.Fatalf("message %s: %v", raw, err)
	}
	return m
}

// next is the next message that is not a server ping (answered with a
// pong, as graphql-ws clients do).
func (w *wsClient) next() wsMsg {
	w.t.Helper()
	for {
		m := w.read()
		if m.Type != "ping" {
			return m
		}
		w.send(map[string]string{"type": "pong"})
	}
}

// expectClose reads (answering pings) until the connection closes with
// code, for wsReadWait in all: a server that keeps pinging but never
// closes fails here at once instead of hanging.
func (w *wsClient) expectClose(what string, code int) {
	w.t.Helper()
	w.deadline = time.Now().Add(wsReadWait)
	defer func() { w.deadline = time.Time{} }()
	for {
		m := w.next()
		if m.code != 0 {
			if m.code != code {
				w.t.Fatalf("%s: closed with %d %q, want %d", what, m.code, m.reason, code)
			}
			return
		}
	}
}

// init sends connection_init with payload and expects connection_ack.
func (w *wsClient) init(payload any) {
	w.t.Helper()
	w.send(map[string]any{"type": "connection_init", "payload": payload})
	if m := w.next(); m.Type != "connection_ack" {
		w.t.Fatalf("connection_init answered %+v, want connection_ack", m)
	}
}

func (w *wsClient) subscribe(id, query string, vars map[string]any) {
	w.t.Helper()
	w.send(map[string]any{"type": "subscribe", "id": id, "payload": map[string]any{"query": query, "variables": vars}})
}

const jobUpdatedDoc = `subscription Job($id: ID!) { notificationJobUpdated(id: $id) { id status totalRecipients sent failed invalidTokens finishedAt } }`
const messengerEventsDoc = `subscription { messengerEvents { kind at subscriber { chatId username status } } }`

// followJob reads notificationJobUpdated results of subscription id until
// complete and returns them.
func (w *wsClient) followJob(id string) []map[string]any {
	w.t.Helper()
	var out []map[string]any
	for {
		m := w.next()
		switch {
		case m.code != 0:
			w.t.Fatalf("closed with %d %q while following the job", m.code, m.reason)
		case m.Type == "complete" && m.ID == id:
			return out
		case m.Type == "next" && m.ID == id:
			var p struct {
				Data   map[string]map[string]any `json:"data"`
				Errors []any                     `json:"errors"`
			}
			if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Errors) > 0 {
				w.t.Fatalf("next %s: %v", m.Payload, err)
			}
			out = append(out, p.Data["notificationJobUpdated"])
		default:
			w.t.Fatalf("unexpected %+v %s", m, m.Payload)
		}
	}
}

// Progress reaches a subscriber on one server from a broadcast that
// another server process, sharing the PostgreSQL database, works.
func TestSubscriptionProgressFromAnotherServer(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	const devicesN = 600
	fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
	gate := newPushGate(t, fake.URL)
	worker := startHerald(t, "postgres", pushEnv(t, fake, gate.URL, map[string]string{"HERALD_PUSH_RATE": "300", "HERALD_PUSH_BATCH_SIZE": "20"}))
	admin := newAdminToken(t, worker, "ops@example.com")
	seedDevices(t, worker.Env, devicesN, 3, func(email string) {
		expectOK(t, "signup "+email, call(t, worker, restDoor.name, opSignup, map[string]any{"email": email, "password": testPassword}), http.StatusCreated)
	})
	jobID, _ := broadcast(t, worker, admin, notify("Live", "from elsewhere", nil))
	waitJob(t, worker, admin, jobID, pollWait, func(j map[string]any) bool {
		return j["status"] == "running" && asInt(t, j["sent"]) > 0
	}, "running on the first server")
	// Held mid-way until the subscriber is in place.
	gate.Pause()

	// The second server, on the same database, never works this job: the
	// first holds its River job and its lease.
	watcher := startHerald(t, "postgres", pushEnv(t, fake, fake.URL, map[string]string{"HERALD_DATABASE_URL": worker.DBURL}))
	ws := dialWS(t, watcher, "graphql-transport-ws")
	ws.init(map[string]any{"token": admin})
	ws.subscribe("p", jobUpdatedDoc, map[string]any{"id": jobID})
	// The first result is the state at subscription: the subscriber is in
	// place, the job can go on.
	first := ws.next()
	if first.Type != "next" || first.ID != "p" {
		t.Fatalf("first message %+v %s", first, first.Payload)
	}
	var p0 struct {
		Data map[string]map[string]any `json:"data"`
	}
	json.Unmarshal(first.Payload, &p0)
	gate.Resume()
	updates := append([]map[string]any{p0.Data["notificationJobUpdated"]}, ws.followJob("p")...)
	if len(updates) < 2 {
		t.Fatalf("%d updates, want the state at subscription and more: %v", len(updates), updates)
	}
	for i := 1; i < len(updates); i++ {
		if asInt(t, updates[i]["sent"]) < asInt(t, updates[i-1]["sent"]) {
			t.Fatalf("sent went back: %v then %v", updates[i-1], updates[i])
		}
	}
	last := updates[len(updates)-1]
	if last["status"] != "completed" || asInt(t, last["sent"]) != devicesN || last["finishedAt"] == nil {
		t.Fatalf("last update %v, want completed with %d sent", last, devicesN)
	}
	if asInt(t, updates[0]["sent"]) == devicesN {
		t.Fatalf("the first update already shows the end (%v): nothing came live", updates[0])
	}
	if watcher.logsMention(t, `"broadcast working"`) {
		t.Fatal("the watching server worked the broadcast; the test needs it worked elsewhere")
	}
}

// Every limit and protocol rule closes the connection with its code;
// credentials are checked at connection_init; operations refused there are
// error messages.
func TestSubscriptionLimitsAndAuth(t *testing.T) {
	fake := telegramtest.NewServer(t, botToken)
	h := startHerald(t, "sqlite", sessionEnv(map[string]string{
		"HERALD_TELEGRAM_BOT_TOKEN":          botToken,
		"HERALD_TELEGRAM_API_URL":            fake.URL,
		"HERALD_TELEGRAM_WEBHOOK_URL":        webhookURL,
		"HERALD_TELEGRAM_WEBHOOK_SECRET":     webhookSecret,
		"HERALD_WS_MAX_SUBSCRIPTIONS":        "2",
		"HERALD_WS_MESSAGE_RATE":             "8",
		"HERALD_WS_PING_INTERVAL":            "300ms",
		"HERALD_WS_IDLE_TIMEOUT":             "1s",
		"HERALD_WS_INIT_TIMEOUT":             "1s",
		"HERALD_WS_MAX_CONNECTIONS_PER_USER": "2",
		"HERALD_WS_MAX_CONNECTIONS_PER_IP":   "4",
	}))
	admin := newAdminToken(t, h, "ops@example.com")
	user, _ := newUserToken(t, h, restDoor.name, "user@example.com")
	notifyKey, _ := createKey(t, h, graphQLDoor.name, admin, map[string]any{"name": "progress", "scopes": []string{"notifications:send"}})
	readKey, _ := createKey(t, h, graphQLDoor.name, admin, map[string]any{"name": "reader", "scopes": []string{"accounts:read"}})
	adminInit := map[string]any{"token": admin}

	t.Run("protocol", func(t *testing.T) {
		for _, c := range []struct {
			name string
			run  func(w *wsClient)
			code int
		}{
			{"no connection_init in time", func(*wsClient) {}, 4408},
			{"subscribe before connection_init", func(w *wsClient) { w.subscribe("1", messengerEventsDoc, nil) }, 4401},
			{"a second connection_init", func(w *wsClient) { w.init(adminInit); w.send(map[string]any{"type": "connection_init"}) }, 4429},
			{"not a protocol message", func(w *wsClient) { w.send(map[string]any{"kind": "hello"}) }, 4400},
			{"an unknown type", func(w *wsClient) { w.send(map[string]any{"type": "start", "id": "1"}) }, 4400},
			{"a subscription id in use", func(w *wsClient) {
				w.init(adminInit)
				w.subscribe("same", messengerEventsDoc, nil)
				w.subscribe("same", messengerEventsDoc, nil)
			}, 4409},
			{"more subscriptions than allowed", func(w *wsClient) {
				w.init(adminInit)
				for _, id := range []string{"a", "b", "c"} {
					w.subscribe(id, messengerEventsDoc, nil)
				}
			}, 4429},
			{"messages faster than the rate", func(w *wsClient) {
				w.init(adminInit)
				for range 20 {
					// The server may close before all are written.
					w.c.WriteJSON(map[string]string{"type": "ping"})
				}
			}, 4429},
			{"idle: pings never answered", func(w *wsClient) {
				w.init(adminInit)
				for {
					if m := w.read(); m.code != 0 {
						if m.code != 4408 {
							t.Fatalf("closed with %d %q, want 4408", m.code, m.reason)
						}
						return
					}
				}
			}, 0},
		} {
			t.Run(c.name, func(t *testing.T) {
				w := dialWS(t, h, "graphql-transport-ws")
				w.t = t
				c.run(w)
				if c.code != 0 {
					w.expectClose(c.name, c.code)
				}
			})
		}
		t.Run("without the subprotocol", func(t *testing.T) {
			dialWS(t, h).expectClose("no subprotocol", 4406)
		})
		t.Run("ping and pong", func(t *testing.T) {
			w := dialWS(t, h, "graphql-transport-ws")
			w.init(adminInit)
			w.send(map[string]any{"type": "ping", "payload": map[string]any{"n": 1}})
			sawPing := false
			for {
				m := w.read()
				if m.Type == "ping" {
					sawPing = true
					w.send(map[string]string{"type": "pong"})
					continue
				}
				if m.Type != "pong" || string(m.Payload) != `{"n":1}` {
					t.Fatalf("answer to ping: %+v %s", m, m.Payload)
				}
				break
			}
			// Answering the server's pings keeps the connection past the
			// idle timeout.
			deadline := time.Now().Add(1500 * time.Millisecond)
			for time.Now().Before(deadline) {
				m := w.read()
				if m.code != 0 {
					t.Fatalf("closed with %d %q while answering pings", m.code, m.reason)
				}
				if m.Type == "ping" {
					sawPing = true
					w.send(map[string]string{"type": "pong"})
				}
			}
			if !sawPing {
				t.Fatal("the server never pinged")
			}
		})
	})

	t.Run("connection_init credentials", func(t *testing.T) {
		for _, c := range []struct {
			name    string
			payload any
		}{
			{"none", nil},
			{"an empty payload", map[string]any{}},
			{"a malformed token", map[string]any{"token": "not-a-token"}},
			{"a token in another scheme", map[string]any{"authorization": "Basic " + admin}},
			{"an unknown API key", map[string]any{"apiKey": "hk_0000000000000000_nope"}},
			{"an API key without a live scope", map[string]any{"apiKey": readKey}},
		} {
			t.Run(c.name, func(t *testing.T) {
				w := dialWS(t, h, "graphql-transport-ws")
				w.send(map[string]any{"type": "connection_init", "payload": c.payload})
				w.expectClose(c.name, 4403)
			})
		}
		// Accepted: an access token as "authorization", an API key as
		// "apiKey" (its scope covers notificationJobUpdated only).
		w := dialWS(t, h, "graphql-transport-ws")
		w.init(map[string]any{"authorization": "Bearer " + admin})
		w.close()
		// A user without a live scope follows its own inbox, and nothing
		// else.
		u := dialWS(t, h, "graphql-transport-ws")
		u.init(map[string]any{"token": user})
		u.subscribe("m", messengerEventsDoc, nil)
		expectWSError(t, u.next(), "m", "INSUFFICIENT_PERMISSIONS")
		u.close()
		k := dialWS(t, h, "graphql-transport-ws")
		k.init(map[string]any{"apiKey": notifyKey})
		k.subscribe("m", messengerEventsDoc, nil)
		expectWSError(t, k.next(), "m", "INSUFFICIENT_PERMISSIONS")
		k.subscribe("j", jobUpdatedDoc, map[string]any{"id": "00000000-0000-7000-8000-000000000000"})
		expectWSError(t, k.next(), "j", "JOB_NOT_FOUND")
		k.subscribe("q", `query { version }`, nil)
		expectWSError(t, k.next(), "q", "GRAPHQL_VALIDATION_FAILED")
		// A completed id can be used again at once.
		k.subscribe("q", `query { version }`, nil)
		expectWSError(t, k.next(), "q", "GRAPHQL_VALIDATION_FAILED")
		k.close()

		// Over HTTP a subscription is refused, pointing to the WebSocket.
		status, body := h.graphql(t, messengerEventsDoc, nil, withBearer(admin))
		if status != http.StatusUnprocessableEntity || jsonPath(body, "errors") == nil || !strings.Contains(fmt.Sprint(body), "GRAPHQL_VALIDATION_FAILED") {
			t.Fatalf("a subscription over HTTP: %d %v", status, body)
		}

		// Revoking the key ends its connections within a ping interval.
		doomed, doomedID := createKey(t, h, graphQLDoor.name, admin, map[string]any{"name": "doomed", "scopes": []string{"notifications:send"}})
		d := dialWS(t, h, "graphql-transport-ws")
		d.init(map[string]any{"apiKey": doomed})
		expectOK(t, "revoke", gql(t, h, "revokeApiKey", apiKeyDocs["revokeApiKey"], map[string]any{"id": doomedID}, withBearer(admin)), http.StatusOK)
		d.expectClose("a revoked key", 4403)
	})

	t.Run("messengerEvents", func(t *testing.T) {
		w := dialWS(t, h, "graphql-transport-ws")
		w.init(adminInit)
		w.subscribe("ev", messengerEventsDoc, nil)
		// The subscription is in place once the server has the
		// subscribe; a ping round trip after it says so.
		w.send(map[string]string{"type": "ping"})
		if m := w.next(); m.Type != "pong" {
			t.Fatalf("answer to ping: %+v", m)
		}
		// The updates are posted while the client reads on and answers
		// the server's pings, as a real client does: one that stopped
		// answering for two ping intervals would be closed (4408).
		posted := make(chan error, 1)
		go func() {
			for _, u := range []telegram.Update{textUpdate(1, 701, "/start"), memberUpdate(2, 701, "kicked"), memberUpdate(3, 701, "member")} {
				a := rawDo(h, http.MethodPost, "/webhooks/telegram", u, withHeader(telegram.SecretTokenHeader, webhookSecret))
				if a.err == nil && a.status != http.StatusOK {
					a.err = fmt.Errorf("update %d: %d %s", u.UpdateID, a.status, a.raw)
				}
				if a.err != nil {
					posted <- a.err
					return
				}
			}
			posted <- nil
		}()
		var kinds []string
		for len(kinds) < 3 {
			m := w.next()
			if m.Type != "next" || m.ID != "ev" {
				t.Fatalf("unexpected %+v %s", m, m.Payload)
			}
			var p struct {
				Data struct {
					MessengerEvents struct {
						Kind       string
						Subscriber map[string]any
					}
				}
			}
			json.Unmarshal(m.Payload, &p)
			e := p.Data.MessengerEvents
			if e.Subscriber["chatId"] != "701" {
				t.Fatalf("event %s", m.Payload)
			}
			kinds = append(kinds, fmt.Sprintf("%s:%s", e.Kind, e.Subscriber["status"]))
		}
		if err := testsupport.Receive(t, posted, pollWait, "the updates to be posted"); err != nil {
			t.Fatal(err)
		}
		if want := "subscribe:subscribed,block:blocked,unblock:subscribed"; strings.Join(kinds, ",") != want {
			t.Fatalf("events %v, want %s", kinds, want)
		}
		w.send(map[string]any{"type": "complete", "id": "ev"})
		w.close()
	})
}

func (w *wsClient) close() {
	w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	w.c.Close()
}

// expectWSError checks m is the error message of subscription id with
// code.
func expectWSError(t testing.TB, m wsMsg, id, code string) {
	t.Helper()
	var errs []struct {
		Extensions map[string]any `json:"extensions"`
	}
	if m.Type != "error" || m.ID != id || json.Unmarshal(m.Payload, &errs) != nil || len(errs) == 0 || errs[0].Extensions["code"] != code {
		t.Fatalf("got %+v %s, want an error message for %s with %s", m, m.Payload, id, code)
	}
}

// At most HERALD_WS_MAX_CONNECTIONS_PER_USER connections per user or API
// key, and HERALD_WS_MAX_CONNECTIONS_PER_IP per address; one more closes
// with 4429, and closed connections free their places.
func TestSubscriptionConnectionLimits(t *testing.T) {
	h := startHerald(t, "sqlite", sessionEnv(map[string]string{
		"HERALD_WS_MAX_CONNECTIONS_PER_USER": "2",
		"HERALD_WS_MAX_CONNECTIONS_PER_IP":   "4",
	}))
	admin := newAdminToken(t, h, "ops@example.com")
	notifyKey, _ := createKey(t, h, graphQLDoor.name, admin, map[string]any{"name": "progress", "scopes": []string{"notifications:send"}})
	adminInit := map[string]any{"token": admin}
	{
		var open []*wsClient
		for range 2 {
			w := dialWS(t, h, "graphql-transport-ws")
			w.init(adminInit)
			open = append(open, w)
		}
		third := dialWS(t, h, "graphql-transport-ws")
		third.send(map[string]any{"type": "connection_init", "payload": adminInit})
		third.expectClose("a third connection of one user", 4429)
		for range 2 {
			w := dialWS(t, h, "graphql-transport-ws")
			w.init(map[string]any{"apiKey": notifyKey})
			open = append(open, w)
		}
		dialWS(t, h, "graphql-transport-ws").expectClose("a fifth connection from one address", 4429)
		for _, w := range open {
			w.close()
		}
		// Closed connections free their slots.
		eventually(t, func() bool {
			w := dialWS(t, h, "graphql-transport-ws")
			defer w.close()
			w.send(map[string]any{"type": "connection_init", "payload": adminInit})
			m := w.next()
			return m.Type == "connection_ack"
		}, "slots were not freed after the connections closed")
	}

	// A server shutting down closes its live connections with 1001 (the
	// client reconnects elsewhere) and does not wait for them.
	w := dialWS(t, h, "graphql-transport-ws")
	w.init(adminInit)
	w.subscribe("ev", messengerEventsDoc, nil)
	stopped := make(chan error, 1)
	go func() { stopped <- h.stop() }()
	w.expectClose("shutdown", 1001)
	if err := <-stopped; err != nil {
		t.Fatalf("stop: %v", err)
	}
}
