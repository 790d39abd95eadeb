// Package providertest is a fake identity provider for tests, speaking
// the real wire formats: an OpenID issuer with its own signing key (a
// JWKS at /keys) that mints id_tokens as Apple's or Google's would, and
// Apple's /auth/token and /auth/revoke, which check the client secret's
// ES256 signature against the team's public key and record what they
// were asked.
package providertest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a fake OpenID provider.
type Issuer struct {
	URL    string // the issuer (iss) and the server's base
	server *httptest.Server
	key    *rsa.PrivateKey
	kid    string

	// Apple's token endpoints.
	AppleTeamKey *ecdsa.PrivateKey // the team's Sign in with Apple key
	AppleKeyPEM  []byte            // its .p8
	mu           sync.Mutex
	codes        map[string]string // authorization code → refresh token
	exchanged    []string
	revoked      []string
	keyFetches   int
	failKeys     bool
}

// NewIssuer starts a fake provider; it stops with the test.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	team, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(team)
	if err != nil {
		t.Fatal(err)
	}
	i := &Issuer{key: key, kid: "test-key-1", AppleTeamKey: team, AppleKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), codes: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /keys", i.keys)
	mux.HandleFunc("POST /auth/token", i.token)
	mux.HandleFunc("POST /auth/revoke", i.revoke)
	i.server = httptest.NewServer(mux)
	i.URL = i.server.URL
	t.Cleanup(i.server.Close)
	return i
}

// JWKSURL is where the issuer's keys are.
func (i *Issuer) JWKSURL() string { return i.URL + "/keys" }

func (i *Issuer) keys(w http.ResponseWriter, _ *http.Request) {
	i.mu.Lock()
	i.keyFetches++
	fail := i.failKeys
	i.mu.Unlock()
	if fail {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &i.key.PublicKey, KeyID: i.kid, Algorithm: "RS256", Use: "sig"}}}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(set)
}

// SetKeysFailing makes the key set answer 503 (a provider outage).
func (i *Issuer) SetKeysFailing(on bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.failKeys = on
}

// Token is what a minted id_token says; zero fields take defaults.
type Token struct {
	Issuer        string // default: the issuer's URL
	Audience      string
	Subject       string
	Email         string
	EmailVerified any // bool (Google) or "true"/"false" (Apple); nil: left out
	PrivateEmail  any
	Nonce         string // the claim as it goes in the token
	ExpiresAt     time.Time
	SignWith      crypto.Signer // default: the issuer's key
}

// Mint signs an id_token.
func (i *Issuer) Mint(t testing.TB, tok Token) string {
	t.Helper()
	now := time.Now()
	claims := jwt.MapClaims{
		"iss": i.URL, "aud": tok.Audience, "sub": tok.Subject,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "auth_time": now.Unix(),
	}
	if tok.Issuer != "" {
		claims["iss"] = tok.Issuer
	}
	if !tok.ExpiresAt.IsZero() {
		claims["exp"] = tok.ExpiresAt.Unix()
	}
	if tok.Email != "" {
		claims["email"] = tok.Email
	}
	if tok.EmailVerified != nil {
		claims["email_verified"] = tok.EmailVerified
	}
	if tok.PrivateEmail != nil {
		claims["is_private_email"] = tok.PrivateEmail
	}
	if tok.Nonce != "" {
		claims["nonce"] = tok.Nonce
	}
	jt := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	jt.Header["kid"] = i.kid
	var signer any = i.key
	if tok.SignWith != nil {
		signer = tok.SignWith
	}
	s, err := jt.SignedString(signer)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// AppleNonce is the nonce claim Apple's native flow puts in the token:
// the SHA-256 (hex) of the app's nonce.
func AppleNonce(raw string) string {
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// IssueCode makes an authorization code Apple's /auth/token exchanges for
// refresh.
func (i *Issuer) IssueCode(code, refresh string) {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.codes[code] = refresh
}

// checkClient checks Apple's client_secret: an ES256 JWT of the team's
// key, aud https://appleid.apple.com, sub the client id.
func (i *Issuer) checkClient(r *http.Request) error {
	tok, err := jwt.Parse(r.PostFormValue("client_secret"), func(*jwt.Token) (any, error) { return &i.AppleTeamKey.PublicKey, nil },
		jwt.WithValidMethods([]string{"ES256"}), jwt.WithAudience("https://appleid.apple.com"))
	if err != nil {
		return err
	}
	if sub, _ := tok.Claims.GetSubject(); sub != r.PostFormValue("client_id") || r.PostFormValue("client_id") == "" {
		return fmt.Errorf("client secret's sub %q is not client_id %q", sub, r.PostFormValue("client_id"))
	}
	return nil
}

func (i *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := i.checkClient(r); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	code := r.PostFormValue("code")
	refresh, ok := i.codes[code]
	if !ok || r.PostFormValue("grant_type") != "authorization_code" {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_grant"}`)
		return
	}
	delete(i.codes, code) // single use
	i.exchanged = append(i.exchanged, code)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"access_token": "at-" + code, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh, "id_token": ""})
}

func (i *Issuer) revoke(w http.ResponseWriter, r *http.Request) {
	if err := i.checkClient(r); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_client"}`)
		return
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	i.revoked = append(i.revoked, r.PostFormValue("token"))
	w.WriteHeader(http.StatusOK)
}

// Revoked are the tokens revoked, in order.
func (i *Issuer) Revoked() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.revoked...)
}

// Exchanged are the codes exchanged, in order.
func (i *Issuer) Exchanged() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return append([]string(nil), i.exchanged...)
}

// PublicKey is the issuer's signing key's public half.
func (i *Issuer) PublicKey() crypto.PublicKey { return &i.key.PublicKey }
