// Package fcmtest is an in-process fake of the FCM HTTP v1 API and of the
// Google OAuth2 token endpoint, for tests of code that sends through
// internal/push/fcm.
//
// Typical use:
//
//	srv := fcmtest.NewServer(t)
//	c, err := fcm.New(ctx, srv.CredentialsJSON("proj"), "", srv.URL, srv.Client())
//	srv.Fail("dead-token", -1, fcmtest.Unregistered())
//
// The server speaks HTTP/2 over TLS by default (use srv.Client() or
// srv.CertPool() to trust it); PlainHTTP() gives an HTTP/1.1 server
// instead. All methods are safe for concurrent use; the server is meant to
// absorb broadcasts to 100k devices.
//
// For tests that need a provider that takes time (many requests in flight,
// as over a real network) and a record of when each send arrived and was
// answered, pass Latency and Timeline:
//
//	srv := fcmtest.NewServer(t, fcmtest.PlainHTTP(), fcmtest.Latency(20*time.Millisecond, 40*time.Millisecond), fcmtest.Timeline())
//	n := srv.InFlight()     // sends received and not yet answered
//	ex := srv.Exchanges()   // every send: token, accepted, received, answered
package fcmtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/internal/fakeledger"
)

// Fault is a scripted FCM error answer.
type Fault struct {
	HTTPStatus int    // e.g. 404
	Status     string // google.rpc status, e.g. "NOT_FOUND"
	ErrorCode  string // FcmError errorCode, e.g. "UNREGISTERED"; "" omits the FcmError detail
	Message    string
	// ViolationField, when set, adds a google.rpc.BadRequest detail with a
	// fieldViolation on this field (e.g. "message.token").
	ViolationField string
	// RetryAfter, when > 0, is sent as a Retry-After header in whole seconds
	// (rounded up).
	RetryAfter time.Duration
}

// Unregistered is FCM's answer for an app instance that is gone.
func Unregistered() Fault {
	return Fault{HTTPStatus: 404, Status: "NOT_FOUND", ErrorCode: "UNREGISTERED", Message: "Requested entity was not found."}
}

// SenderIDMismatch is FCM's answer for a token of another Firebase project.
func SenderIDMismatch() Fault {
	return Fault{HTTPStatus: 403, Status: "PERMISSION_DENIED", ErrorCode: "SENDER_ID_MISMATCH", Message: "SenderId mismatch"}
}

// InvalidToken is FCM's answer for a malformed registration token.
func InvalidToken() Fault {
	return Fault{HTTPStatus: 400, Status: "INVALID_ARGUMENT", ErrorCode: "INVALID_ARGUMENT", Message: "The registration token is not a valid FCM registration token"}
}

// InvalidTokenField is an INVALID_ARGUMENT that names message.token only
// through a google.rpc.BadRequest field violation.
func InvalidTokenField() Fault {
	return Fault{HTTPStatus: 400, Status: "INVALID_ARGUMENT", Message: "Invalid value at 'message.token'", ViolationField: "message.token"}
}

// InvalidPayload is an INVALID_ARGUMENT about the message data, not the token.
func InvalidPayload() Fault {
	return Fault{HTTPStatus: 400, Status: "INVALID_ARGUMENT", ErrorCode: "INVALID_ARGUMENT", Message: "Invalid data payload key: from", ViolationField: "message.data"}
}

// QuotaExceeded is FCM's rate-limit answer.
func QuotaExceeded(retryAfter time.Duration) Fault {
	return Fault{HTTPStatus: 429, Status: "RESOURCE_EXHAUSTED", ErrorCode: "QUOTA_EXCEEDED", Message: "Quota exceeded.", RetryAfter: retryAfter}
}

// Unavailable is FCM's overload answer.
func Unavailable(retryAfter time.Duration) Fault {
	return Fault{HTTPStatus: 503, Status: "UNAVAILABLE", ErrorCode: "UNAVAILABLE", Message: "The service is currently unavailable.", RetryAfter: retryAfter}
}

// Internal is FCM's internal-error answer.
func Internal() Fault {
	return Fault{HTTPStatus: 500, Status: "INTERNAL", ErrorCode: "INTERNAL", Message: "Internal error encountered."}
}

// ThirdPartyAuth is FCM's answer when the APNs/WebPush credentials uploaded
// to Firebase are wrong.
func ThirdPartyAuth() Fault {
	return Fault{HTTPStatus: 401, Status: "UNAUTHENTICATED", ErrorCode: "THIRD_PARTY_AUTH_ERROR", Message: "Auth error from APNS or Web Push Service"}
}

// PermissionDenied is the answer for a service account lacking FCM rights.
func PermissionDenied() Fault {
	return Fault{HTTPStatus: 403, Status: "PERMISSION_DENIED", Message: "Permission 'cloudmessaging.messages.create' denied on resource"}
}

// Unauthenticated is the answer for a missing or invalid access token.
func Unauthenticated() Fault {
	return Fault{HTTPStatus: 401, Status: "UNAUTHENTICATED", Message: "Request had invalid authentication credentials."}
}

// Message is one send the fake accepted.
type Message struct {
	Proto           string // "HTTP/2.0" or "HTTP/1.1"
	Project         string
	Token           string
	HasNotification bool
	Title           string
	Body            string
	Data            map[string]string
	CollapseKey     string // android.collapse_key
	Tag             string // android.notification.tag
	// Raw is the whole message object as decoded JSON, for the fields the
	// others do not name (android and apns blocks, notification.image).
	Raw map[string]any
}

// Option configures NewServer.
type Option func(*config)

type config struct {
	plain                  bool
	latencyMin, latencyMax time.Duration
	timeline               bool
}

// PlainHTTP serves plain HTTP/1.1 instead of HTTP/2 over TLS.
func PlainHTTP() Option { return func(c *config) { c.plain = true } }

// Latency makes the fake answer each send a random time between lo and
// hi (uniformly) after it arrived, as a provider over a real network
// does. The send is decided (accepted and recorded, or refused) when it
// arrives, before the wait: a sender that dies while waiting leaves a
// delivered message it never heard about. A client that goes away ends
// the wait early. The token endpoint answers at once.
func Latency(lo, hi time.Duration) Option {
	return func(c *config) { c.latencyMin, c.latencyMax = lo, max(lo, hi) }
}

// Timeline makes the fake keep an Exchange for every send request (see
// Exchanges). Off by default: it costs memory in big broadcasts.
func Timeline() Option { return func(c *config) { c.timeline = true } }

// Exchange is one send request as the fake saw it (kept with Timeline).
type Exchange struct {
	Token    string
	Accepted bool      // the message was recorded as delivered
	Received time.Time // when the request (headers and body) had arrived
	// Answered is when the fake was done with the request: its answer
	// written, or its client gone. Zero while the request is in flight.
	Answered time.Time
}

// ledger is fakeledger.Ledger under an unexported name, so that Server's
// embedded field is unexported while its methods (Fail, SetDown,
// Messages, MessagesFor, Delivered, Attempts, TotalDelivered,
// Connections) are promoted.
type ledger = fakeledger.Ledger[Message, Fault]

// Server is the fake. URL is both the FCM endpoint and the base of the
// token endpoint (URL + "/token").
type Server struct {
	URL string

	*ledger
	srv *httptest.Server
	cfg config

	inFlight atomic.Int64 // send requests received and not yet answered
	exMu     sync.Mutex
	exchange []Exchange // with Timeline

	mu            sync.Mutex
	keys          map[string]serviceKey // by private_key_id
	projects      map[string]struct{}
	accessTokens  map[string]struct{}
	tokenFault    int
	tokenRequests int
	seq           int
}

type serviceKey struct {
	pub   *rsa.PublicKey
	email string
}

// NewServer starts a fake closed by t.Cleanup.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{
		// SetDown answers 503 UNAVAILABLE without Retry-After.
		ledger: fakeledger.New(func(m Message) string { return m.Token }, func() Fault {
			return Fault{HTTPStatus: 503, Status: "UNAVAILABLE", ErrorCode: "UNAVAILABLE", Message: "The service is currently unavailable."}
		}),
		keys:         map[string]serviceKey{},
		projects:     map[string]struct{}{},
		accessTokens: map[string]struct{}{},
		cfg:          cfg,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", s.handleToken)
	mux.HandleFunc("POST /v1/projects/{project}/messages:send", s.handleSend)
	s.srv = httptest.NewUnstartedServer(mux)
	fakeledger.CountConnections(s.ledger, s.srv)
	if cfg.plain {
		s.srv.Start()
	} else {
		s.srv.EnableHTTP2 = true
		// Google allows many streams per connection; keep the client from
		// opening a connection per 250 requests during big broadcasts.
		s.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000}
		s.srv.StartTLS()
	}
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// CertPool trusts the fake's TLS certificate; nil for PlainHTTP.
func (s *Server) CertPool() *x509.CertPool {
	if s.srv.TLS == nil {
		return nil
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return pool
}

// Client returns a new HTTP client that trusts the fake and suits high
// concurrency: HTTP/2 only over TLS, with one shared dial (at most one dial
// at a time, which every waiting request then multiplexes over), or at most
// 64 kept-alive HTTP/1.1 connections in PlainHTTP mode (more would exhaust
// file descriptors in big broadcasts).
func (s *Server) Client() *http.Client {
	if pool := s.CertPool(); pool != nil {
		var h2only http.Protocols
		h2only.SetHTTP2(true)
		return &http.Client{Transport: &http.Transport{
			Protocols:       &h2only,
			TLSClientConfig: &tls.Config{RootCAs: pool},
			MaxConnsPerHost: 1, // for HTTP/2: dials in progress, not connections
		}}
	}
	return &http.Client{Transport: &http.Transport{
		MaxConnsPerHost:     64,
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}}
}

// CredentialsJSON returns a service-account key for projectID with a fresh
// RSA key whose token_uri points at this fake. Access tokens minted for it
// are accepted for sends to any project; sends to a project for which no
// credentials were created get 403 PERMISSION_DENIED.
func (s *Server) CredentialsJSON(projectID string) []byte {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(fmt.Sprintf("fcmtest: generate RSA key: %v", err))
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(fmt.Sprintf("fcmtest: marshal key: %v", err))
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	kid := fmt.Sprintf("fcmtest-key-%d", seq)
	email := fmt.Sprintf("herald-%d@%s.iam.gserviceaccount.com", seq, projectID)
	s.keys[kid] = serviceKey{pub: &key.PublicKey, email: email}
	s.projects[projectID] = struct{}{}
	s.mu.Unlock()

	b, err := json.Marshal(map[string]string{
		"type":                        "service_account",
		"project_id":                  projectID,
		"private_key_id":              kid,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                email,
		"client_id":                   "1000000000000000" + strconv.Itoa(seq),
		"auth_uri":                    s.URL + "/auth",
		"token_uri":                   s.URL + "/token",
		"auth_provider_x509_cert_url": s.URL + "/certs",
		"universe_domain":             "googleapis.com",
	})
	if err != nil {
		panic(err)
	}
	return b
}

// SetTokenEndpointStatus makes the token endpoint answer status with an
// OAuth2 error body (0 restores normal operation). 400/401 model a revoked
// or wrong key; 503 a transient outage.
func (s *Server) SetTokenEndpointStatus(status int) {
	s.mu.Lock()
	s.tokenFault = status
	s.mu.Unlock()
}

// RevokeAccessTokens invalidates every access token minted so far.
func (s *Server) RevokeAccessTokens() {
	s.mu.Lock()
	clear(s.accessTokens)
	s.mu.Unlock()
}

// DistinctTokens counts device tokens with at least one accepted message.
func (s *Server) DistinctTokens() int { return fakeledger.DistinctTokens(s.ledger) }

// CloseClientConnections closes every connection clients hold to the fake,
// idle ones included: an idle keep-alive connection holds two goroutines
// in the client (its read and write loops), which a goroutine count taken
// to find a leak must not mistake for one.
func (s *Server) CloseClientConnections() { s.srv.CloseClientConnections() }

// InFlight counts send requests the fake has received and not yet
// answered (with Latency, those waiting out their latency).
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

// Exchanges returns every send request so far in arrival order (with
// Timeline; nil without it).
func (s *Server) Exchanges() []Exchange {
	s.exMu.Lock()
	defer s.exMu.Unlock()
	return append([]Exchange(nil), s.exchange...)
}

// TokenRequests counts calls to the OAuth2 token endpoint.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	s.mu.Lock()
	s.tokenRequests++
	fault := s.tokenFault
	s.mu.Unlock()
	if fault != 0 {
		oauthError(w, fault, "invalid_grant", "scripted token endpoint failure")
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", gt)
		return
	}
	if err := s.verifyAssertion(r.PostForm.Get("assertion")); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_grant", err.Error())
		return
	}
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "ya29.fake-" + base64.RawURLEncoding.EncodeToString(b)
	s.mu.Lock()
	s.accessTokens[tok] = struct{}{}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": 3600})
}

// verifyAssertion checks the RS256 JWT the service account signs (RFC 7523).
func (s *Server) verifyAssertion(assertion string) error {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return fmt.Errorf("assertion is not a JWT")
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Exp   int64  `json:"exp"`
	}
	if err := fakeledger.DecodeSegment(parts[0], &hdr); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	if err := fakeledger.DecodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("claims: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	s.mu.Lock()
	key, ok := s.keys[hdr.Kid]
	s.mu.Unlock()
	switch {
	case hdr.Alg != "RS256":
		return fmt.Errorf("alg %q, want RS256", hdr.Alg)
	case !ok:
		return fmt.Errorf("unknown key id %q", hdr.Kid)
	case claims.Iss != key.email:
		return fmt.Errorf("iss %q does not own key %q", claims.Iss, hdr.Kid)
	case claims.Aud != s.URL+"/token":
		return fmt.Errorf("aud %q", claims.Aud)
	case !strings.Contains(" "+claims.Scope+" ", " https://www.googleapis.com/auth/firebase.messaging "):
		return fmt.Errorf("scope %q lacks firebase.messaging", claims.Scope)
	case claims.Exp != 0 && time.Unix(claims.Exp, 0).Before(time.Now()):
		return fmt.Errorf("assertion expired")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key.pub, crypto.SHA256, sum[:], sig); err != nil {
		return fmt.Errorf("bad signature: %w", err)
	}
	return nil
}

type sendBody struct {
	Message struct {
		Token        string `json:"token"`
		Notification *struct {
			Title string `json:"title"`
			Body  string `json:"body"`
		} `json:"notification"`
		Data    map[string]string `json:"data"`
		Android *struct {
			CollapseKey  string `json:"collapse_key"`
			Notification *struct {
				Tag string `json:"tag"`
			} `json:"notification"`
		} `json:"android"`
	} `json:"message"`
}

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	s.inFlight.Add(1)
	defer s.inFlight.Add(-1)
	project := r.PathValue("project")
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	var body sendBody
	rawBody, _ := io.ReadAll(r.Body)
	decodeErr := json.Unmarshal(rawBody, &body)
	var raw struct {
		Message map[string]any `json:"message"`
	}
	json.Unmarshal(rawBody, &raw)
	token := body.Message.Token
	received := time.Now()

	s.mu.Lock()
	_, authed := s.accessTokens[bearer]
	authed = ok && authed
	_, projectKnown := s.projects[project]
	s.mu.Unlock()
	var fault *Fault
	var id int
	switch {
	case !authed:
		f := Unauthenticated()
		fault = &f
	case !projectKnown:
		f := PermissionDenied()
		fault = &f
	case decodeErr != nil:
		// Mirrors FCM rejecting non-string data values.
		f := Fault{HTTPStatus: 400, Status: "INVALID_ARGUMENT", Message: "Invalid JSON payload received: " + decodeErr.Error(), ViolationField: "message.data"}
		fault = &f
	case token == "":
		f := Fault{HTTPStatus: 400, Status: "INVALID_ARGUMENT", Message: "Recipient of the message is not set.", ViolationField: "message"}
		fault = &f
	default:
		fault, id = fakeledger.Send(s.ledger, token, func() Message {
			m := Message{Proto: r.Proto, Project: project, Token: token, Data: body.Message.Data, Raw: raw.Message}
			if a := body.Message.Android; a != nil {
				m.CollapseKey = a.CollapseKey
				if a.Notification != nil {
					m.Tag = a.Notification.Tag
				}
			}
			if n := body.Message.Notification; n != nil {
				m.HasNotification, m.Title, m.Body = true, n.Title, n.Body
			}
			return m
		})
	}
	if s.cfg.timeline {
		s.exMu.Lock()
		i := len(s.exchange)
		s.exchange = append(s.exchange, Exchange{Token: token, Accepted: fault == nil, Received: received})
		s.exMu.Unlock()
		defer func() {
			s.exMu.Lock()
			s.exchange[i].Answered = time.Now()
			s.exMu.Unlock()
		}()
	}
	if s.cfg.latencyMax > 0 {
		d := s.cfg.latencyMin
		if spread := s.cfg.latencyMax - s.cfg.latencyMin; spread > 0 {
			d += mrand.N(spread + 1)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return // the client went away: nobody hears the answer
		}
	}

	if fault != nil {
		writeFault(w, *fault)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"name": fmt.Sprintf("projects/%s/messages/%d", project, id)})
}

func writeFault(w http.ResponseWriter, f Fault) {
	details := []map[string]any{}
	if f.ErrorCode != "" {
		details = append(details, map[string]any{
			"@type":     "type.googleapis.com/google.firebase.fcm.v1.FcmError",
			"errorCode": f.ErrorCode,
		})
	}
	if f.ViolationField != "" {
		details = append(details, map[string]any{
			"@type": "type.googleapis.com/google.rpc.BadRequest",
			"fieldViolations": []map[string]string{
				{"field": f.ViolationField, "description": f.Message},
			},
		})
	}
	if f.RetryAfter > 0 {
		secs := (f.RetryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	writeJSON(w, f.HTTPStatus, map[string]any{"error": map[string]any{
		"code":    f.HTTPStatus,
		"message": f.Message,
		"status":  f.Status,
		"details": details,
	}})
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
