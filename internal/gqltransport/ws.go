package gqltransport

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/gorilla/websocket"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/trace"
)

// Subprotocol is the WebSocket subprotocol of GraphQL subscriptions: the
// graphql-transport-ws protocol of the graphql-ws library.
const Subprotocol = "graphql-transport-ws"

// Close codes of the protocol, and the reasons Herald sends with them.
const (
	CloseBadMessage        = 4400 // a message that is not the protocol's
	CloseUnauthorized      = 4401 // subscribe before connection_ack
	CloseForbidden         = 4403 // connection_init refused: credentials, scope, expiry
	CloseSubprotocol       = 4406 // the client did not offer graphql-transport-ws
	CloseInitTimeout       = 4408 // no connection_init in time; nothing received for the idle timeout; or no pong for two ping intervals
	CloseDuplicateID       = 4409 // a subscribe whose id is in use
	CloseTooMany           = 4429 // a second connection_init, or over a limit
	CloseInternal          = 4500
	closeGoingAway         = websocket.CloseGoingAway // the server shuts down
	wsMaxMessage           = 64 << 10
	wsWriteTimeout         = 10 * time.Second
	wsCloseWait            = time.Second
	defaultInitTimeout     = 10 * time.Second
	defaultPingInterval    = 30 * time.Second
	defaultIdleTimeout     = 90 * time.Second
	defaultMaxSubs         = 20
	defaultMessageRate     = 10
	defaultMaxConnsPerUser = 10
	defaultMaxConnsPerIP   = 50
)

// WSLimits bound WebSocket connections; zero values are the defaults.
type WSLimits struct {
	// MaxSubscriptions is the most operations running at once on one
	// connection; one more closes it with 4429.
	MaxSubscriptions int
	// MessageRate is how many messages a client may send per second (and
	// in a burst); faster closes with 4429. Negative: no cap.
	MessageRate int
	// PingInterval is how often the server sends a protocol ping. A
	// connection from which no pong arrives for two intervals is closed
	// with 4408, whatever IdleTimeout says: a dead peer holds its places
	// under the caps no longer than that.
	PingInterval time.Duration
	// IdleTimeout: a connection from which nothing (not even a pong)
	// arrives for this long is closed with 4408.
	IdleTimeout time.Duration
	// InitTimeout: connection_init must arrive within it, else 4408.
	InitTimeout time.Duration
	// MaxConnsPerUser and MaxConnsPerIP bound the open connections of one
	// user (or API key) and of one client address (an IPv6 client's /64,
	// as the rate limits count it) on this replica; one more closes with
	// 4429.
	MaxConnsPerUser int
	MaxConnsPerIP   int
}

func (l WSLimits) withDefaults() WSLimits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxSubscriptions, defaultMaxSubs)
	def(&l.MessageRate, defaultMessageRate)
	def(&l.MaxConnsPerUser, defaultMaxConnsPerUser)
	def(&l.MaxConnsPerIP, defaultMaxConnsPerIP)
	defDur(&l.PingInterval, defaultPingInterval)
	defDur(&l.IdleTimeout, defaultIdleTimeout)
	defDur(&l.InitTimeout, defaultInitTimeout)
	return l
}

// WSConfig is what the WebSocket door needs besides the GraphQL handler.
type WSConfig struct {
	Limits        WSLimits
	Authenticator *auth.Authenticator
	// Stopping is closed when the server shuts down: connections are
	// closed with 1001 and clients reconnect elsewhere.
	Stopping <-chan struct{}
}

// WebSocket serves GraphQL subscriptions over WebSocket
// (graphql-transport-ws).
type WebSocket struct {
	h        *Handler
	cfg      WSConfig
	upgrader websocket.Upgrader

	conns limits.Slots // open connections per address and per caller
}

// NewWebSocket returns the WebSocket door over h.
func (h *Handler) NewWebSocket(cfg WSConfig) *WebSocket {
	cfg.Limits = cfg.Limits.withDefaults()
	return &WebSocket{h: h, cfg: cfg, upgrader: websocket.Upgrader{
		Subprotocols: []string{Subprotocol},
		// Credentials travel in connection_init, never in cookies, so a
		// page of another origin gains nothing a script could not do
		// with the same credentials: any origin may connect.
		CheckOrigin: func(*http.Request) bool { return true },
	}}
}

// IsUpgrade reports whether r asks for a WebSocket.
func IsUpgrade(r *http.Request) bool { return websocket.IsWebSocketUpgrade(r) }

// ServeHTTP upgrades the request (charged one global unit, as any
// request) and serves the connection until it closes.
func (s *WebSocket) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if _, err := s.h.adm.Admit(ctx, w, nil); err != nil {
		api.WriteError(w, r, err)
		return
	}
	c, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered
	}
	defer c.Close()
	x := &wsConn{s: s, c: c, lim: s.cfg.Limits, subs: map[string]*wsSub{}}
	if c.Subprotocol() != Subprotocol {
		x.close(CloseSubprotocol, "Subprotocol not acceptable")
		x.drain()
		return
	}
	ipKey := limits.AddressSlot(api.Info(ctx).ClientIP)
	if !s.conns.Take(ipKey, s.cfg.Limits.MaxConnsPerIP) {
		x.close(CloseTooMany, "Too many connections from this address")
		x.drain()
		return
	}
	x.slotsMu.Lock()
	x.ipKey = ipKey
	x.slotsMu.Unlock()
	defer x.releaseSlots()
	// The connection's operations end with it (or at shutdown); the
	// request's context carries its info (logger, client address).
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	x.ctx = cctx
	go func() {
		select {
		case <-s.cfg.Stopping:
			x.close(closeGoingAway, "Server shutting down")
		case <-cctx.Done():
		}
	}()
	x.serve()
	cancel()
	x.wg.Wait()
}

// wsConn is one connection.
type wsConn struct {
	s   *WebSocket
	c   *websocket.Conn
	lim WSLimits
	ctx context.Context // of the connection; an operation's is below it

	writeMu sync.Mutex
	closed  bool // under writeMu: a close frame was sent

	initDone bool            // connection_init received (and acknowledged)
	authCtx  context.Context // ctx with the connection's authentication
	// cred is the credential of connection_init, checked again at every
	// ping.
	cred atomic.Pointer[auth.Credential]

	slotsMu  sync.Mutex // guards the three below
	released bool
	ipKey    string // the address's slot, counted
	userKey  string // the caller's slot (Principal.Subject), counted

	// pongDue closes the connection when no pong arrives for two ping
	// intervals; each pong pushes it back.
	pongDue *time.Timer

	mu   sync.Mutex
	subs map[string]*wsSub
	wg   sync.WaitGroup

	tokens float64 // the message-rate bucket
	filled time.Time
}

// message is one protocol message.
type message struct {
	Type    string          `json:"type"`
	ID      string          `json:"id,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// write sends v, one writer at a time.
func (x *wsConn) write(v any) error {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.closed {
		return errWSClosed
	}
	x.c.SetWriteDeadline(time.Now().Add(wsWriteTimeout))
	return x.c.WriteJSON(v)
}

var errWSClosed = errors.New("connection closed")

// close sends a close frame with code and reason and closes the
// connection; the first close wins.
func (x *wsConn) close(code int, reason string) {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	if x.closed {
		return
	}
	x.closed = true
	// The slots are free before the client learns of the close, so a
	// client that reconnects at once finds them free.
	x.releaseSlots()
	x.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(wsCloseWait))
	// The closing handshake (RFC 6455 §7.1.1): the read loop reads on,
	// discarding, until the client's close frame answers or wsCloseWait
	// passes, and then the socket closes. Closing it at once reset a
	// client that was still writing (a pong to the last ping), and a reset
	// can lose the close frame, and the code the client branches on.
	x.c.SetReadDeadline(time.Now().Add(wsCloseWait))
}

func (x *wsConn) isClosed() bool {
	x.writeMu.Lock()
	defer x.writeMu.Unlock()
	return x.closed
}

// drain reads, discarding, until the client's close frame or the read
// deadline that close set (or the read error that ended the read loop).
func (x *wsConn) drain() {
	for {
		if _, _, err := x.c.ReadMessage(); err != nil {
			return
		}
	}
}

// serve is the read loop.
func (x *wsConn) serve() {
	x.c.SetReadLimit(wsMaxMessage)
	x.c.SetReadDeadline(time.Now().Add(x.lim.InitTimeout))
	// Every way out of the loop below that closed the connection goes
	// through the closing handshake; after a read error this returns at
	// once.
	defer x.drain()
	pingDone := make(chan struct{})
	defer close(pingDone)
	x.pongDue = time.AfterFunc(2*x.lim.PingInterval, func() { x.close(CloseInitTimeout, "Pong timeout") })
	defer x.pongDue.Stop()
	go x.ping(pingDone)
	x.filled = time.Now()
	x.tokens = float64(x.lim.MessageRate)
	for {
		kind, raw, err := x.c.ReadMessage()
		if err == nil && x.isClosed() {
			continue // the closing handshake: read until the client's close frame
		}
		if err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				if !x.initDone {
					x.close(CloseInitTimeout, "Connection initialisation timeout")
				} else {
					x.close(CloseInitTimeout, "Idle timeout")
				}
			} else if errors.Is(err, websocket.ErrReadLimit) {
				x.close(CloseBadMessage, "Message too large")
			}
			return
		}
		if x.initDone {
			x.c.SetReadDeadline(time.Now().Add(x.lim.IdleTimeout))
		}
		if !x.allow() {
			x.close(CloseTooMany, "Too many messages")
			return
		}
		var m message
		if kind != websocket.TextMessage || json.Unmarshal(raw, &m) != nil || m.Type == "" {
			x.close(CloseBadMessage, "Invalid message received")
			return
		}
		if !x.handle(m) {
			return
		}
	}
}

// allow takes one message from the rate bucket.
func (x *wsConn) allow() bool {
	if x.lim.MessageRate < 0 {
		return true
	}
	now := time.Now()
	rate := float64(x.lim.MessageRate)
	x.tokens = min(rate, x.tokens+now.Sub(x.filled).Seconds()*rate)
	x.filled = now
	if x.tokens < 1 {
		return false
	}
	x.tokens--
	return true
}

// ping sends a protocol ping every PingInterval; the client's pong keeps
// the connection open (pongDue), and, as anything else it sends, from
// idling out.
func (x *wsConn) ping(done <-chan struct{}) {
	t := time.NewTicker(x.lim.PingInterval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if err := x.write(message{Type: "ping"}); err != nil {
				return
			}
			x.recheck()
		}
	}
}

// recheck authenticates the connection's credential again, so that a
// logout, a revoked session or a revoked API key ends the connection within
// a ping interval (4403). A database outage does not.
func (x *wsConn) recheck() {
	c := x.cred.Load()
	if c == nil {
		return
	}
	_, err := x.s.cfg.Authenticator.Authenticate(x.ctx, *c)
	if err == nil || x.ctx.Err() != nil {
		return
	}
	if ae := api.Classify(err); ae.Status() == http.StatusUnauthorized || ae.Status() == http.StatusForbidden {
		x.close(CloseForbidden, "Forbidden: "+string(ae.Code))
	}
}

// handle acts on one message; false ends the connection.
func (x *wsConn) handle(m message) bool {
	switch m.Type {
	case "connection_init":
		return x.init(m.Payload)
	case "ping":
		x.write(message{Type: "pong", Payload: m.Payload})
	case "pong":
		x.pongDue.Reset(2 * x.lim.PingInterval)
	case "subscribe":
		return x.subscribe(m)
	case "complete":
		x.mu.Lock()
		if sub, ok := x.subs[m.ID]; ok {
			sub.cancel()
			delete(x.subs, m.ID)
		}
		x.mu.Unlock()
	default:
		x.close(CloseBadMessage, "Invalid message received")
		return false
	}
	return true
}

// initPayload is what connection_init may carry: an access token or an
// API key, as "token"/"apiKey", or as an "Authorization" value
// ("Bearer …", the way HTTP headers would carry it).
type initPayload struct {
	Token               string `json:"token"`
	APIKey              string `json:"apiKey"`
	Authorization       string `json:"authorization"`
	AuthorizationHeader string `json:"Authorization"`
	APIKeyHeader        string `json:"X-API-Key"`
}

// InitCredential reads the credential of a connection_init payload (absent,
// null or an object); ok is false for any other payload. One field at most
// may carry a credential; several are a credential that fails
// (TOKEN_INVALID), as two headers are over HTTP.
func InitCredential(raw []byte) (c auth.Credential, ok bool) {
	var p initPayload
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &p); err != nil {
			return auth.Credential{}, false
		}
	}
	set := 0
	for _, v := range []string{p.Token, p.APIKey, p.Authorization, p.AuthorizationHeader, p.APIKeyHeader} {
		if strings.TrimSpace(v) != "" {
			set++
		}
	}
	switch {
	case set > 1:
		c.Present = true
	case strings.TrimSpace(p.Token) != "":
		c.Present, c.Bearer = true, strings.TrimSpace(p.Token)
	case strings.TrimSpace(p.Authorization+p.AuthorizationHeader) != "":
		c.Present = true
		if scheme, tok, ok := strings.Cut(strings.TrimSpace(p.Authorization+p.AuthorizationHeader), " "); ok && strings.EqualFold(scheme, "Bearer") {
			c.Bearer = strings.TrimSpace(tok)
		}
	default:
		c.APIKey = strings.TrimSpace(p.APIKey + p.APIKeyHeader)
	}
	return c, true
}

// liveRules are the rules of the subscriptions: a caller that meets none
// of them has nothing to subscribe to and is refused at connection_init.
// A signed-in user follows its own inbox (inboxChanged); an API key needs
// a live scope.
var liveRules = []auth.Rule{auth.Protected, auth.Scoped(auth.ScopeNotificationsSend), auth.Scoped(auth.ScopeMessengerSend)}

func (x *wsConn) init(raw json.RawMessage) bool {
	if x.initDone {
		x.close(CloseTooMany, "Too many initialisation requests")
		return false
	}
	cred, ok := InitCredential(raw)
	if !ok {
		x.close(CloseBadMessage, "Invalid message received")
		return false
	}
	principal, err := x.s.cfg.Authenticator.Authenticate(x.ctx, cred)
	if err == nil {
		err = apperr.Newf(apperr.InsufficientPermissions, "Subscriptions need a signed-in user, or the %q or %q scope.", auth.ScopeNotificationsSend, auth.ScopeMessengerSend)
		for _, r := range liveRules {
			if r.Permit(auth.Result{Principal: principal}) == nil {
				err = nil
				break
			}
		}
	}
	if err != nil {
		x.close(CloseForbidden, "Forbidden: "+string(api.Classify(err).Code))
		return false
	}
	userKey := principal.Subject()
	if !x.s.conns.Take(userKey, x.lim.MaxConnsPerUser) {
		x.close(CloseTooMany, "Too many connections for this caller")
		return false
	}
	x.slotsMu.Lock()
	if x.released { // closed meanwhile (shutdown)
		x.s.conns.Release(userKey)
	} else {
		x.userKey = userKey
	}
	x.slotsMu.Unlock()
	x.initDone = true
	x.s.cfg.Authenticator.RecordUse(x.ctx, principal)
	x.authCtx = auth.WithResult(x.ctx, auth.Result{Principal: principal})
	x.cred.Store(&cred)
	if !principal.ExpiresAt.IsZero() {
		// The credential's end is the connection's: the client
		// reconnects with a fresh one.
		t := time.AfterFunc(time.Until(principal.ExpiresAt), func() { x.close(CloseForbidden, "Forbidden: "+string(apperr.TokenExpired)) })
		context.AfterFunc(x.ctx, func() { t.Stop() })
	}
	x.c.SetReadDeadline(time.Now().Add(x.lim.IdleTimeout))
	if err := x.write(message{Type: "connection_ack"}); err != nil {
		return false
	}
	return true
}

// subscribePayload is a subscribe message's payload.
type subscribePayload struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

func (x *wsConn) subscribe(m message) bool {
	if !x.initDone {
		x.close(CloseUnauthorized, "Unauthorized")
		return false
	}
	var p subscribePayload
	if m.ID == "" || json.Unmarshal(m.Payload, &p) != nil {
		x.close(CloseBadMessage, "Invalid message received")
		return false
	}
	x.mu.Lock()
	if _, dup := x.subs[m.ID]; dup {
		x.mu.Unlock()
		x.close(CloseDuplicateID, "Subscriber for "+m.ID+" already exists")
		return false
	}
	if len(x.subs) >= x.lim.MaxSubscriptions {
		x.mu.Unlock()
		x.close(CloseTooMany, "Too many subscriptions")
		return false
	}
	ctx, cancel := context.WithCancel(x.authCtx)
	sub := &wsSub{cancel: cancel, span: trace.SpanFromContext(context.Background())}
	x.subs[m.ID] = sub
	x.mu.Unlock()
	// The operation starts (its resolver subscribes) before the next
	// message is read, so a client's ping after a subscribe is answered
	// only once the subscription is in place.
	handle, ctx := x.start(ctx, m.ID, sub, p)
	if handle == nil {
		cancel()
		return true
	}
	x.wg.Go(func() {
		defer cancel()
		x.results(ctx, m.ID, sub, handle)
	})
	return true
}

// wsSub is one running operation of a connection.
type wsSub struct {
	cancel context.CancelFunc
	span   trace.Span // the operation's, once its document parsed
}

// finish removes sub from the running operations unless the client
// completed it (or its id is another operation's by now), and reports
// whether it did: only then does the server send the operation's last
// message. Removed first, so a client may reuse the id at once.
func (x *wsConn) finish(id string, sub *wsSub) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.subs[id] != sub {
		return false
	}
	delete(x.subs, id)
	return x.ctx.Err() == nil
}

// start validates and dispatches one operation; nil when it was refused
// (an error message was sent).
func (x *wsConn) start(ctx context.Context, id string, sub *wsSub, p subscribePayload) (graphql.ResponseHandler, context.Context) {
	h := x.s.h
	doc, ae := h.bounds.parseBounded(p.Query)
	if ae != nil {
		x.refuse(id, sub, gqlerror.List{codeError(ae)})
		return nil, ctx
	}
	op := doc.Operations.ForName(p.OperationName)
	if op != nil {
		// The operation's span (trace.go) ends with its context.
		ctx, sub.span = startOperationSpan(ctx, op)
		context.AfterFunc(ctx, func() { sub.span.End() })
	}
	if !h.limits.Introspection && op != nil {
		for _, f := range rootFieldsOf(op.SelectionSet, doc.Fragments, nil) {
			if isIntrospection(f.Name) {
				x.refuse(id, sub, gqlerror.List{codeError(apperr.Newf(apperr.GraphQLInvalid, "Introspection is switched off on this server: %s is not answered.", f.Name))})
				return nil, ctx
			}
		}
	}
	if op != nil {
		if ae := checkInputs(h.schema, h.inputErrors, op, doc.Fragments, p.Variables); ae != nil {
			x.refuse(id, sub, gqlerror.List{codeError(ae)})
			return nil, ctx
		}
	}
	ctx = graphql.StartOperationTrace(ctx)
	now := graphql.Now()
	opCtx, errs := h.exec.CreateOperationContext(ctx, &graphql.RawParams{
		Query: p.Query, OperationName: p.OperationName, Variables: p.Variables, Extensions: p.Extensions,
		ReadTime: graphql.TraceTiming{Start: now, End: now},
	})
	if errs != nil {
		x.refuse(id, sub, presentList(op, doc, errs))
		return nil, ctx
	}
	noteRootFields(sub.span, rootFieldsOf(opCtx.Operation.SelectionSet, opCtx.Doc.Fragments, nil))
	if ae := h.checkOperation(opCtx); ae != nil {
		x.refuse(id, sub, gqlerror.List{codeError(ae)})
		return nil, ctx
	}
	if opCtx.Operation.Operation != ast.Subscription {
		x.refuse(id, sub, gqlerror.List{codeError(apperr.Newf(apperr.GraphQLInvalid, "Only subscriptions are served over WebSocket; send queries and mutations to POST /graphql."))})
		return nil, ctx
	}
	return h.exec.DispatchOperation(ctx, opCtx)
}

// refuse ends operation id with an error message.
func (x *wsConn) refuse(id string, sub *wsSub, errs gqlerror.List) {
	noteFailure(sub.span, errs)
	if x.finish(id, sub) {
		x.write(map[string]any{"type": "error", "id": id, "payload": errs})
	}
}

// results sends next for each result of an operation, then complete; error
// (and no complete) when it fails before any result.
func (x *wsConn) results(ctx context.Context, id string, sub *wsSub, handle graphql.ResponseHandler) {
	first := true
	for {
		resp := handle(ctx)
		if resp == nil || ctx.Err() != nil {
			break
		}
		if first && len(resp.Errors) > 0 && (len(resp.Data) == 0 || string(resp.Data) == "null") {
			x.refuse(id, sub, resp.Errors)
			return
		}
		first = false
		if err := x.write(map[string]any{"type": "next", "id": id, "payload": resp}); err != nil {
			x.finish(id, sub)
			return
		}
	}
	if x.finish(id, sub) {
		x.write(message{Type: "complete", ID: id})
	}
}

// releaseSlots frees the connection's places in the per-address and
// per-caller counts, once.
func (x *wsConn) releaseSlots() {
	x.slotsMu.Lock()
	defer x.slotsMu.Unlock()
	if x.released {
		return
	}
	x.released = true
	if x.ipKey != "" {
		x.s.conns.Release(x.ipKey)
	}
	if x.userKey != "" {
		x.s.conns.Release(x.userKey)
	}
}
