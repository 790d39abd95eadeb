// Package webpushtest is an in-process fake Web Push service (RFC 8030)
// for tests of code that sends through internal/push/webpush.
//
// It mints subscriptions as a browser would (a P-256 key pair and an
// authentication secret of its own for each, an endpoint on the fake),
// checks every push as a push service and the browser would: the VAPID
// Authorization (an ES256 JWT verified against the k= key, its aud the
// fake's origin, its exp in the future and at most 24 hours away, its sub
// a mailto: or https: URL), the aes128gcm coding and a TTL header; then it
// decrypts the body with the subscription's private key, so a recorded
// message proves that subscription, and only it, could read the push.
//
//	srv := webpushtest.NewServer(t)
//	sub := srv.Subscribe()            // sub.JSON is the device's push token
//	c, _ := webpush.New(keyPEM, "mailto:ops@example.com", webpush.Options{HTTPClient: srv.Client()})
//	srv.Fail(sub.ID, -1, webpushtest.Gone())
//
// The fake speaks HTTPS (HTTP/2) by default, its certificate trusted by
// srv.Client(); PlainHTTP() serves plain HTTP/1.1 (endpoints on
// http://127.0.0.1, which webpush accepts only with AllowPrivate).
// Scripted faults and the records are keyed by the subscription's ID.
package webpushtest

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/internal/fakeledger"
	"github.com/herald-vpn/herald/internal/push/webpush"
)

// Fault is a scripted answer to a push.
type Fault struct {
	Status     int
	Message    string
	RetryAfter time.Duration // sent as Retry-After in whole seconds (rounded up) when > 0
}

// Gone is the answer for a subscription the user revoked or let expire.
func Gone() Fault {
	return Fault{Status: http.StatusGone, Message: "push subscription has unsubscribed or expired"}
}

// NotFound is the answer for an unknown subscription.
func NotFound() Fault { return Fault{Status: http.StatusNotFound, Message: "subscription not found"} }

// TooManyRequests is the rate-limit answer.
func TooManyRequests(retryAfter time.Duration) Fault {
	return Fault{Status: http.StatusTooManyRequests, Message: "too many requests", RetryAfter: retryAfter}
}

// Internal is the push service failing.
func Internal() Fault {
	return Fault{Status: http.StatusInternalServerError, Message: "internal error"}
}

// Subscription is one minted subscription, as its browser holds it.
type Subscription struct {
	ID       string
	Endpoint string
	// JSON is PushSubscription.toJSON(): the web device's push token.
	JSON    string
	Private *ecdh.PrivateKey
	Auth    []byte
}

// Message is one push the fake accepted, decrypted.
type Message struct {
	SubscriptionID string
	Proto          string
	Payload        []byte // the decrypted payload
	// Title, Body and Data are the payload's members (webpush's format).
	Title string
	Body  string
	Data  map[string]any
	Raw   map[string]any // the payload as decoded JSON
	// The delivery headers and the VAPID identity.
	TTL      string
	Urgency  string
	Topic    string
	VAPIDKey string // k=
	Subject  string // the JWT's sub
}

// Option configures NewServer.
type Option func(*config)

type config struct{ plain bool }

// PlainHTTP serves plain HTTP/1.1 instead of HTTP/2 over TLS.
func PlainHTTP() Option { return func(c *config) { c.plain = true } }

type ledger = fakeledger.Ledger[Message, Fault]

// Server is the fake push service.
type Server struct {
	URL string

	*ledger
	srv *httptest.Server

	mu       sync.Mutex
	subs     map[string]Subscription
	rejected []string // why pushes were refused before the ledger (auth, coding, decryption)
	seq      int
}

// NewServer starts a fake closed by t.Cleanup.
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	s := &Server{
		ledger: fakeledger.New(func(m Message) string { return m.SubscriptionID }, func() Fault {
			return Fault{Status: http.StatusServiceUnavailable, Message: "service unavailable"}
		}),
		subs: map[string]Subscription{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /push/{id}", s.handlePush)
	s.srv = httptest.NewUnstartedServer(mux)
	fakeledger.CountConnections(s.ledger, s.srv)
	if cfg.plain {
		s.srv.Start()
	} else {
		s.srv.EnableHTTP2 = true
		s.srv.StartTLS()
	}
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// Client returns an HTTP client that trusts the fake.
func (s *Server) Client() *http.Client {
	if s.srv.TLS == nil {
		return &http.Client{}
	}
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return &http.Client{Transport: &http.Transport{ForceAttemptHTTP2: true, TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// Subscribe mints a subscription: a fresh key pair and secret, an
// endpoint on the fake.
func (s *Server) Subscribe() Subscription {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	auth := make([]byte, 16)
	_, _ = rand.Read(auth)
	s.mu.Lock()
	s.seq++
	id := "sub-" + strconv.Itoa(s.seq)
	s.mu.Unlock()
	sub := Subscription{ID: id, Endpoint: s.URL + "/push/" + id, Private: priv, Auth: auth}
	b, _ := json.Marshal(map[string]any{
		"endpoint":       sub.Endpoint,
		"expirationTime": nil,
		"keys": map[string]string{
			"p256dh": base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes()),
			"auth":   base64.RawURLEncoding.EncodeToString(auth),
		},
	})
	sub.JSON = string(b)
	s.mu.Lock()
	s.subs[id] = sub
	s.mu.Unlock()
	return sub
}

// Unsubscribe forgets a subscription: pushes to it get 410 Gone, as from
// a browser whose user revoked the permission.
func (s *Server) Unsubscribe(id string) {
	s.mu.Lock()
	delete(s.subs, id)
	s.mu.Unlock()
}

// Rejected lists why pushes were refused before they were counted (a bad
// VAPID token, coding or body); empty when every push was well formed.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

func (s *Server) reject(w http.ResponseWriter, status int, why string) {
	s.mu.Lock()
	s.rejected = append(s.rejected, why)
	s.mu.Unlock()
	http.Error(w, why, status)
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, err := io.ReadAll(io.LimitReader(r.Body, 8192))
	if err != nil {
		s.reject(w, http.StatusBadRequest, "read body: "+err.Error())
		return
	}
	key, subject, err := s.verifyVAPID(r.Header.Get("Authorization"))
	if err != nil {
		s.reject(w, http.StatusUnauthorized, "VAPID: "+err.Error())
		return
	}
	s.mu.Lock()
	sub, known := s.subs[id]
	s.mu.Unlock()
	if !known {
		http.Error(w, "push subscription has unsubscribed or expired", http.StatusGone)
		return
	}
	switch {
	case r.Header.Get("Content-Encoding") != "aes128gcm":
		s.reject(w, http.StatusBadRequest, "Content-Encoding "+r.Header.Get("Content-Encoding")+", want aes128gcm")
		return
	case r.Header.Get("TTL") == "":
		s.reject(w, http.StatusBadRequest, "no TTL header")
		return
	case len(body) > 4096:
		s.reject(w, http.StatusRequestEntityTooLarge, "body over 4096 bytes")
		return
	}
	plain, err := webpush.Decrypt(body, sub.Private, sub.Auth)
	if err != nil {
		s.reject(w, http.StatusBadRequest, "decrypt: "+err.Error())
		return
	}
	m := Message{SubscriptionID: id, Proto: r.Proto, Payload: plain, TTL: r.Header.Get("TTL"),
		Urgency: r.Header.Get("Urgency"), Topic: r.Header.Get("Topic"), VAPIDKey: key, Subject: subject}
	var p struct {
		Title string         `json:"title"`
		Body  string         `json:"body"`
		Data  map[string]any `json:"data"`
	}
	if err := json.Unmarshal(plain, &p); err == nil {
		m.Title, m.Body, m.Data = p.Title, p.Body, p.Data
	}
	_ = json.Unmarshal(plain, &m.Raw)
	fault, seq := fakeledger.Send(s.ledger, id, func() Message { return m })
	if fault != nil {
		if fault.RetryAfter > 0 {
			secs := (fault.RetryAfter + time.Second - 1) / time.Second
			w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
		}
		http.Error(w, fault.Message, fault.Status)
		return
	}
	w.Header().Set("Location", s.URL+"/message/"+strconv.Itoa(seq))
	w.WriteHeader(http.StatusCreated)
}

// verifyVAPID checks an RFC 8292 Authorization header and returns its
// key and subject.
func (s *Server) verifyVAPID(h string) (key, subject string, err error) {
	rest, ok := strings.CutPrefix(h, "vapid ")
	if !ok {
		return "", "", fmt.Errorf("scheme of %q is not vapid", h)
	}
	var tok string
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			tok = v
		case "k":
			key = v
		}
	}
	if tok == "" || key == "" {
		return "", "", fmt.Errorf("t= or k= missing")
	}
	raw, err := base64.RawURLEncoding.DecodeString(key)
	if err != nil {
		return "", "", fmt.Errorf("k: %w", err)
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), raw)
	if err != nil {
		return "", "", fmt.Errorf("k: %w", err)
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", "", fmt.Errorf("t is not a JWT")
	}
	var hdr struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}
	if err := fakeledger.DecodeSegment(parts[0], &hdr); err != nil {
		return "", "", fmt.Errorf("header: %w", err)
	}
	if err := fakeledger.DecodeSegment(parts[1], &claims); err != nil {
		return "", "", fmt.Errorf("claims: %w", err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return "", "", fmt.Errorf("signature is not 64 bytes of base64url")
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if hdr.Alg != "ES256" || !ecdsa.Verify(pub, sum[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return "", "", fmt.Errorf("the ES256 signature does not verify with k")
	}
	now := time.Now()
	exp := time.Unix(claims.Exp, 0)
	switch {
	case claims.Aud != s.URL:
		return "", "", fmt.Errorf("aud %q, want %q", claims.Aud, s.URL)
	case !exp.After(now):
		return "", "", fmt.Errorf("expired at %v", exp)
	case exp.After(now.Add(24 * time.Hour)):
		return "", "", fmt.Errorf("exp %v is more than 24 hours away", exp)
	}
	if u, err := url.Parse(claims.Sub); err != nil || !(u.Scheme == "mailto" || u.Scheme == "https") {
		return "", "", fmt.Errorf("sub %q is not a mailto: or https: URL", claims.Sub)
	}
	return key, claims.Sub, nil
}
