// Package apnstest is an in-process HTTP/2 TLS fake of the APNs provider
// API (POST /3/device/{token}) for tests of code that sends through
// internal/push/apns.
//
// Typical use:
//
//	srv := apnstest.NewServer(t)
//	key := srv.NewKey("KEYID12345", "TEAMID1234")
//	c, err := apns.New(key, "KEYID12345", "TEAMID1234", srv.Topic, srv.URL,
//		apns.WithTLSConfig(srv.TLSConfig()))
//	srv.Fail("dead-token", -1, apnstest.Unregistered())
//
// The fake checks the provider JWT (ES256, kid registered via NewKey,
// iss = that key's team, iat within the last hour), the apns-topic
// header and HTTP/2. All methods are safe for concurrent use.
package apnstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/internal/fakeledger"
)

// DefaultTopic is the apns-topic NewServer's fake accepts (Server.Topic).
const DefaultTopic = "com.herald.test"

// maxPayload is APNs's limit for regular pushes.
const maxPayload = 4096

// Fault is a scripted APNs error answer.
type Fault struct {
	Status int    // HTTP status, e.g. 410
	Reason string // APNs reason, e.g. "Unregistered"
}

// BadDeviceToken is a 400 for a malformed or wrong-environment token.
func BadDeviceToken() Fault { return Fault{Status: 400, Reason: "BadDeviceToken"} }

// DeviceTokenNotForTopic is a 400 for a token of another app.
func DeviceTokenNotForTopic() Fault { return Fault{Status: 400, Reason: "DeviceTokenNotForTopic"} }

// Unregistered is a 410 for an uninstalled app.
func Unregistered() Fault { return Fault{Status: 410, Reason: "Unregistered"} }

// ExpiredToken is a 410 for an expired device token.
func ExpiredToken() Fault { return Fault{Status: 410, Reason: "ExpiredToken"} }

// TooManyRequests is a 429 for pushing too often to one device.
func TooManyRequests() Fault { return Fault{Status: 429, Reason: "TooManyRequests"} }

// InternalServerError is a 500.
func InternalServerError() Fault { return Fault{Status: 500, Reason: "InternalServerError"} }

// ServiceUnavailable is a 503.
func ServiceUnavailable() Fault { return Fault{Status: 503, Reason: "ServiceUnavailable"} }

// Shutdown is a 503 sent while APNs drains a connection.
func Shutdown() Fault { return Fault{Status: 503, Reason: "Shutdown"} }

// InvalidProviderToken is a 403 for a JWT APNs cannot verify.
func InvalidProviderToken() Fault { return Fault{Status: 403, Reason: "InvalidProviderToken"} }

// ExpiredProviderToken is a 403 for a JWT older than an hour.
func ExpiredProviderToken() Fault { return Fault{Status: 403, Reason: "ExpiredProviderToken"} }

// Message is one push the fake accepted.
type Message struct {
	Token    string
	Topic    string
	PushType string
	Priority int
	ApnsID   string
	Collapse string // apns-collapse-id
	// Expiration is the apns-expiration header as sent ("" when absent).
	Expiration string
	Title      string // aps.alert.title
	Body       string // aps.alert.body
	// Payload is the whole decoded JSON body (aps plus custom keys).
	Payload map[string]any
}

// ledger is fakeledger.Ledger under an unexported name, so that Server's
// embedded field is unexported while its methods (Fail, SetDown,
// Messages, MessagesFor, Delivered, Attempts, TotalDelivered,
// Connections) are promoted.
type ledger = fakeledger.Ledger[Message, Fault]

// Server is the fake.
type Server struct {
	URL   string
	Topic string // the apns-topic accepted: DefaultTopic

	*ledger
	srv *httptest.Server

	mu       sync.Mutex
	keys     map[string]teamKey // by key ID
	verified map[string]string  // JWT → key ID, to skip re-verifying ECDSA
}

type teamKey struct {
	pub  *ecdsa.PublicKey
	team string
}

// NewServer starts an HTTP/2 TLS fake closed by t.Cleanup.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		Topic: DefaultTopic,
		// SetDown answers 503 ServiceUnavailable.
		ledger:   fakeledger.New(func(m Message) string { return m.Token }, ServiceUnavailable),
		keys:     map[string]teamKey{},
		verified: map[string]string{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /3/device/{token}", s.handlePush)
	s.srv = httptest.NewUnstartedServer(mux)
	fakeledger.CountConnections(s.ledger, s.srv)
	s.srv.EnableHTTP2 = true
	s.srv.Config.HTTP2 = &http.HTTP2Config{MaxConcurrentStreams: 1000} // like APNs
	s.srv.StartTLS()
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// CertPool trusts the fake's certificate.
func (s *Server) CertPool() *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(s.srv.Certificate())
	return pool
}

// TLSConfig trusts the fake; pass it to apns.WithTLSConfig.
func (s *Server) TLSConfig() *tls.Config { return &tls.Config{RootCAs: s.CertPool()} }

// GenerateKey returns a fresh ES256 (P-256) key as .p8 PEM (PKCS#8,
// "PRIVATE KEY"), the format Apple issues.
func GenerateKey() (p8 []byte, pub *ecdsa.PublicKey, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), &key.PublicKey, nil
}

// NewKey generates a .p8 key, makes the fake accept JWTs it signs with
// this kid and team, and returns it.
func (s *Server) NewKey(keyID, teamID string) []byte {
	p8, pub, err := GenerateKey()
	if err != nil {
		panic(fmt.Sprintf("apnstest: generate key: %v", err))
	}
	s.mu.Lock()
	s.keys[keyID] = teamKey{pub: pub, team: teamID}
	s.mu.Unlock()
	return p8
}

func (s *Server) handlePush(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		writeReason(w, Fault{Status: http.StatusHTTPVersionNotSupported, Reason: "HTTP2Required"})
		return
	}
	token := r.PathValue("token")
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil {
		writeReason(w, Fault{Status: 400, Reason: "BadPayload"})
		return
	}
	if f := s.checkAuth(r.Header.Get("authorization")); f != nil {
		writeReason(w, *f)
		return
	}
	topic := r.Header.Get("apns-topic")
	switch {
	case topic == "":
		writeReason(w, Fault{Status: 400, Reason: "MissingTopic"})
		return
	case topic != s.Topic:
		writeReason(w, Fault{Status: 400, Reason: "TopicDisallowed"})
		return
	case len(raw) == 0:
		writeReason(w, Fault{Status: 400, Reason: "PayloadEmpty"})
		return
	case len(raw) > maxPayload:
		writeReason(w, Fault{Status: 413, Reason: "PayloadTooLarge"})
		return
	}
	var payload map[string]any
	if err := json.Unmarshal(raw, &payload); err != nil {
		writeReason(w, Fault{Status: 400, Reason: "BadPayload"})
		return
	}
	prio, _ := strconv.Atoi(r.Header.Get("apns-priority"))
	id := r.Header.Get("apns-id")
	if id == "" {
		id = newUUID()
	}

	fault, _ := fakeledger.Send(s.ledger, token, func() Message {
		m := Message{Token: token, Topic: topic, PushType: r.Header.Get("apns-push-type"), Priority: prio, ApnsID: id, Collapse: r.Header.Get("apns-collapse-id"), Expiration: r.Header.Get("apns-expiration"), Payload: payload}
		if aps, ok := payload["aps"].(map[string]any); ok {
			if alert, ok := aps["alert"].(map[string]any); ok {
				m.Title, _ = alert["title"].(string)
				m.Body, _ = alert["body"].(string)
			}
		}
		return m
	})

	w.Header().Set("apns-id", id)
	if fault != nil {
		writeReason(w, *fault)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// checkAuth validates "bearer <ES256 JWT>" as APNs does for token auth.
func (s *Server) checkAuth(h string) *Fault {
	jwt, ok := strings.CutPrefix(h, "bearer ")
	if !ok || jwt == "" {
		return &Fault{Status: 403, Reason: "MissingProviderToken"}
	}
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return &Fault{Status: 403, Reason: "InvalidProviderToken"}
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss string `json:"iss"`
		Iat int64  `json:"iat"`
	}
	if fakeledger.DecodeSegment(parts[0], &hdr) != nil || fakeledger.DecodeSegment(parts[1], &claims) != nil {
		return &Fault{Status: 403, Reason: "InvalidProviderToken"}
	}
	s.mu.Lock()
	key, known := s.keys[hdr.Kid]
	_, cached := s.verified[jwt]
	s.mu.Unlock()
	if !known || hdr.Alg != "ES256" || claims.Iss != key.team {
		return &Fault{Status: 403, Reason: "InvalidProviderToken"}
	}
	if iat := time.Unix(claims.Iat, 0); time.Since(iat) > time.Hour {
		return &Fault{Status: 403, Reason: "ExpiredProviderToken"}
	}
	if cached {
		return nil
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return &Fault{Status: 403, Reason: "InvalidProviderToken"}
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	rr, ss := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(key.pub, sum[:], rr, ss) {
		return &Fault{Status: 403, Reason: "InvalidProviderToken"}
	}
	s.mu.Lock()
	s.verified[jwt] = hdr.Kid
	s.mu.Unlock()
	return nil
}

func writeReason(w http.ResponseWriter, f Fault) {
	body := map[string]any{"reason": f.Reason}
	if f.Status == http.StatusGone {
		body["timestamp"] = time.Now().UnixMilli()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Status)
	_ = json.NewEncoder(w).Encode(body)
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
