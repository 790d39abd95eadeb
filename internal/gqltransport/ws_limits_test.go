package gqltransport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/services"
)

// wsWait bounds each read of the test client, and each wait for a close:
// what the server should do now fails within a few seconds when it does
// not, instead of hanging until go test's timeout.
const wsWait = 5 * time.Second

// anyToken accepts every bearer as an operator holding every scope.
type anyToken struct{}

func (anyToken) VerifyAccessToken(_ context.Context, tok string) (auth.Principal, error) {
	return auth.Principal{Kind: auth.User, AccountID: "user-" + tok, SessionID: "s", Scopes: []string{auth.ScopeAdmin}}, nil
}

// wsServer serves the WebSocket door with lim over a resolver whose only
// live service is the messenger's event feed (messengerEvents stays open
// until the client completes it). The client address is the request's
// X-Test-IP header.
func wsServer(t *testing.T, lim WSLimits) string {
	t.Helper()
	bot, err := messenger.NewService(context.Background(), nil, messenger.Config{WebhookSecret: "test-secret"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := NewHandler(graph.NewSchema(&graph.Resolver{Version: "dev", Services: services.Services{Messenger: bot}}), testLimits, nopAdmission{})
	stopping := make(chan struct{})
	ws := h.NewWebSocket(WSConfig{Limits: lim, Authenticator: auth.NewAuthenticator(anyToken{}, nil), Stopping: stopping})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := &api.RequestInfo{ClientIP: netip.MustParseAddr("192.0.2.1")}
		if ip := r.Header.Get("X-Test-IP"); ip != "" {
			info.ClientIP = netip.MustParseAddr(ip)
		}
		ws.ServeHTTP(w, r.WithContext(api.WithInfo(r.Context(), info)))
	}))
	t.Cleanup(func() { close(stopping); srv.Close() })
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// testWS is a graphql-transport-ws client whose every read has a deadline
// of wsWait.
type testWS struct {
	t *testing.T
	c *websocket.Conn
}

type testMsg struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
	code    int             // the close code, when the connection closed
	reason  string
}

func dialTestWS(t *testing.T, url, ip string) *testWS {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{Subprotocol}, HandshakeTimeout: wsWait}
	hdr := http.Header{}
	if ip != "" {
		hdr.Set("X-Test-IP", ip)
	}
	c, _, err := d.Dial(url, hdr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return &testWS{t: t, c: c}
}

func (w *testWS) send(m testMsg) {
	w.t.Helper()
	if err := w.c.WriteJSON(m); err != nil {
		w.t.Fatalf("send %+v: %v", m, err)
	}
}

// read returns the next message, or the close (code != 0), by deadline
// (zero: wsWait from now).
func (w *testWS) read(deadline time.Time) testMsg {
	w.t.Helper()
	if deadline.IsZero() {
		deadline = time.Now().Add(wsWait)
	}
	w.c.SetReadDeadline(deadline)
	_, raw, err := w.c.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			return testMsg{code: ce.Code, reason: ce.Text}
		}
		w.t.Fatalf("read: %v (nothing from the server within its deadline)", err)
	}
	var m testMsg
	if err := json.Unmarshal(raw, &m); err != nil {
		w.t.Fatalf("message %s: %v", raw, err)
	}
	return m
}

// next is the next message that is not a ping; pings are answered.
func (w *testWS) next(deadline time.Time) testMsg {
	w.t.Helper()
	for {
		m := w.read(deadline)
		if m.Type != "ping" {
			return m
		}
		w.send(testMsg{Type: "pong"})
	}
}

// init sends connection_init and expects connection_ack.
func (w *testWS) init() {
	w.t.Helper()
	w.send(testMsg{Type: "connection_init", Payload: json.RawMessage(`{"token":"t1"}`)})
	if m := w.next(time.Time{}); m.Type != "connection_ack" {
		w.t.Fatalf("connection_init answered %+v, want connection_ack", m)
	}
}

// alive proves the connection is open and everything sent before was
// handled: the server answers messages in order, so a pong to this ping
// comes after any close an earlier message caused.
func (w *testWS) alive(what string) {
	w.t.Helper()
	w.send(testMsg{Type: "ping", Payload: json.RawMessage(`{"probe":1}`)})
	for {
		m := w.next(time.Time{})
		switch {
		case m.code != 0:
			w.t.Fatalf("%s: closed with %d %q, want the connection open", what, m.code, m.reason)
		case m.Type == "pong" && string(m.Payload) == `{"probe":1}`:
			return
		}
	}
}

// expectClose waits, answering pings, until the connection closes with
// code, for wsWait in all: a server that keeps pinging but never closes
// fails here instead of hanging.
func (w *testWS) expectClose(what string, code int) {
	w.t.Helper()
	deadline := time.Now().Add(wsWait)
	for {
		m := w.next(deadline)
		if m.code != 0 {
			if m.code != code {
				w.t.Fatalf("%s: closed with %d %q, want %d", what, m.code, m.reason, code)
			}
			return
		}
	}
}

func (w *testWS) subscribe(id string) {
	w.t.Helper()
	w.send(testMsg{Type: "subscribe", ID: id, Payload: json.RawMessage(`{"query":"subscription { messengerEvents { kind } }"}`)})
}

// Exactly MaxSubscriptions running subscriptions are allowed; one more
// closes the connection with 4429. Completed ones free their places.
func TestWSSubscriptionLimit(t *testing.T) {
	t.Parallel()
	url := wsServer(t, WSLimits{MaxSubscriptions: 3, PingInterval: time.Hour, MessageRate: -1})
	w := dialTestWS(t, url, "")
	w.init()
	for _, id := range []string{"a", "b", "c"} {
		w.subscribe(id)
	}
	w.alive("three subscriptions, at the limit")
	w.send(testMsg{Type: "complete", ID: "a"})
	w.subscribe("d")
	w.alive("a completed subscription's place taken again")
	w.subscribe("e")
	w.expectClose("a fourth running subscription", CloseTooMany)
}

// The per-address cap counts an IPv6 client's /64, as the rate limits and
// bans do; another /64 has its own.
func TestWSPerAddressCapCountsTheSlash64(t *testing.T) {
	t.Parallel()
	url := wsServer(t, WSLimits{MaxConnsPerIP: 2, PingInterval: time.Hour})
	for _, ip := range []string{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:fffe"} {
		dialTestWS(t, url, ip).alive("a connection from " + ip)
	}
	dialTestWS(t, url, "2001:db8:1:2:abcd::9").expectClose("a third connection from one /64", CloseTooMany)
	dialTestWS(t, url, "2001:db8:1:3::1").alive("a connection from the next /64")
}

// A connection whose pongs stop is closed with 4408 after two ping
// intervals without one, though the idle timeout is an hour away; one that
// answers stays open.
func TestWSMissingPongsClose(t *testing.T) {
	t.Parallel()
	const interval = 200 * time.Millisecond
	url := wsServer(t, WSLimits{PingInterval: interval, IdleTimeout: time.Hour})

	silent := dialTestWS(t, url, "")
	silent.init()
	// The silent client reads the server's pings and never answers.
	pings := 0
	for {
		m := silent.read(time.Time{})
		if m.code != 0 {
			if m.code != CloseInitTimeout {
				t.Fatalf("closed with %d %q, want 4408", m.code, m.reason)
			}
			break
		}
		if m.Type != "ping" {
			t.Fatalf("unexpected %+v", m)
		}
		if pings++; pings > 4 {
			t.Fatalf("%d pings unanswered and still open, want a close after two ping intervals", pings)
		}
	}
	// One that answers each ping stays open for many intervals.
	answering := dialTestWS(t, url, "")
	answering.init()
	for range 8 {
		m := answering.read(time.Time{})
		if m.code != 0 {
			t.Fatalf("a client answering pings was closed with %d %q", m.code, m.reason)
		}
		if m.Type == "ping" {
			answering.send(testMsg{Type: "pong"})
		}
	}
	answering.alive("a client answering pings")
}

// The server closes with the closing handshake (RFC 6455 §7.1.1): after its
// close frame it reads on until the client's, so a client still writing (a
// pong to a last ping, messages already in flight) is not reset, and reads
// the close code it branches on. Before, the socket closed at once: with the
// client's messages unread, the kernel reset the connection, and the
// client's next write failed with a broken pipe.
func TestWSCloseHandshake(t *testing.T) {
	t.Parallel()
	url := wsServer(t, WSLimits{})
	for i := range 20 {
		w := dialTestWS(t, url, "")
		// The client answers the close frame itself, below, after one
		// more message (gorilla's default handler answers at once).
		w.c.SetCloseHandler(func(int, string) error { return nil })
		// An invalid message closes the connection (4400); the pings
		// behind it are in flight when the server decides.
		raw := []string{`{"type":""}`}
		for range 20 {
			raw = append(raw, `{"type":"ping"}`)
		}
		for _, m := range raw {
			if err := w.c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				t.Fatalf("connection %d: write: %v (reset while the client was still writing)", i, err)
			}
		}
		if m := w.read(time.Time{}); m.code != CloseBadMessage {
			t.Fatalf("connection %d: got %+v, want the close 4400", i, m)
		}
		// Still open for the client's last words and its close frame.
		if err := w.c.WriteMessage(websocket.TextMessage, []byte(`{"type":"pong"}`)); err != nil {
			t.Fatalf("connection %d: a write after the server's close frame: %v (reset before the client answered it)", i, err)
		}
		if err := w.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(wsWait)); err != nil {
			t.Fatalf("connection %d: the client's close frame: %v", i, err)
		}
	}
}
