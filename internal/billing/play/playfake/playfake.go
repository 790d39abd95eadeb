// Package playfake is a fake Google Play for tests: one httptest.Server
// that serves the OAuth token endpoint of a service account it issued,
// purchases.subscriptionsv2.get and purchases.subscriptions.acknowledge
// of the Google Play Developer API, and an OIDC issuer (discovery and
// JWKS) whose key signs the ID tokens of the Pub/Sub pushes it produces.
// It speaks the real wire formats with its own RSA keys.
package playfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/herald-vpn/herald/internal/billing/play"
)

const (
	// ServiceAccountEmail is the email of the key file the fake issues.
	ServiceAccountEmail = "herald-play@herald-test.iam.gserviceaccount.com"
	// PushServiceAccount is the account the push subscription signs as.
	PushServiceAccount = "rtdn-push@herald-test.iam.gserviceaccount.com"
	// Audience is the push subscription's audience.
	Audience = "https://herald.test/api/v1/billing/google/rtdn"
	// Subscription is the Pub/Sub subscription named in pushes.
	Subscription = "projects/herald-test/subscriptions/play-rtdn"

	jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	apiPrefix = "/androidpublisher/v3/applications/"
)

// Fake is a fake Google Play. Its methods are safe for concurrent use.
type Fake struct {
	t       testing.TB
	srv     *httptest.Server
	pkg     string
	saKey   *rsa.PrivateKey
	saKeyID string
	// foreign signs ForeignKey tokens; made on first use (keys are slow).
	foreign     *rsa.PrivateKey
	foreignOnce sync.Once

	mu           sync.Mutex
	now          func() time.Time
	issuerKey    *rsa.PrivateKey
	issuerKID    string
	oldKeys      map[string]*rsa.PrivateKey
	purchases    map[string]play.SubscriptionPurchaseV2
	acked        map[string]string // token → subscription id acknowledged
	accessTokens map[string]bool
	failures     []int
	calls        int
	jwksFetches  int
}

// New starts a fake for packageName; it stops with the test.
func New(t testing.TB, packageName string) *Fake {
	t.Helper()
	f := &Fake{
		t:            t,
		pkg:          packageName,
		saKey:        newKey(t),
		saKeyID:      randomID(),
		now:          time.Now,
		issuerKey:    newKey(t),
		issuerKID:    randomID(),
		oldKeys:      map[string]*rsa.PrivateKey{},
		purchases:    map[string]play.SubscriptionPurchaseV2{},
		acked:        map[string]string{},
		accessTokens: map[string]bool{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("GET /.well-known/openid-configuration", f.discovery)
	mux.HandleFunc("GET /oauth2/v3/certs", f.certs)
	mux.HandleFunc("GET "+apiPrefix+"{pkg}/purchases/subscriptionsv2/tokens/{token}", f.get)
	mux.HandleFunc("POST "+apiPrefix+"{pkg}/purchases/subscriptions/{sub}/tokens/{action}", f.acknowledge)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// URL is the fake's base URL: the API base and the push issuer.
func (f *Fake) URL() string { return f.srv.URL }

// JWKSURL is where the issuer's keys are.
func (f *Fake) JWKSURL() string { return f.srv.URL + "/oauth2/v3/certs" }

// Client is an HTTP client for the fake.
func (f *Fake) Client() *http.Client { return f.srv.Client() }

// SetNow sets the clock the fake signs ID tokens with (default time.Now).
func (f *Fake) SetNow(now func() time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = now
}

// Config is a play.Config pointed at the fake.
func (f *Fake) Config() play.Config {
	return play.Config{
		PackageName:        f.pkg,
		PushAudience:       Audience,
		PushServiceAccount: PushServiceAccount,
		PushIssuer:         f.srv.URL,
		JWKSURL:            f.JWKSURL(),
		ServiceAccountJSON: f.ServiceAccountJSON(),
		APIBase:            f.srv.URL,
		HTTPClient:         f.srv.Client(),
	}
}

// ServiceAccountJSON is a service account key file whose token_uri is
// the fake's token endpoint.
func (f *Fake) ServiceAccountJSON() []byte {
	der, err := x509.MarshalPKCS8PrivateKey(f.saKey)
	if err != nil {
		f.t.Fatalf("playfake: %v", err)
	}
	b, err := json.Marshal(map[string]string{
		"type":                        "service_account",
		"project_id":                  "herald-test",
		"private_key_id":              f.saKeyID,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                ServiceAccountEmail,
		"client_id":                   "100000000000000000001",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   f.srv.URL + "/token",
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
	})
	if err != nil {
		f.t.Fatalf("playfake: %v", err)
	}
	return b
}

// SetPurchase sets what subscriptionsv2.get answers for token.
func (f *Fake) SetPurchase(token string, p play.SubscriptionPurchaseV2) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if p.Kind == "" {
		p.Kind = "androidpublisher#subscriptionPurchaseV2"
	}
	if a, ok := f.acked[token]; ok && a != "" {
		p.AcknowledgementState = play.AcknowledgementAcknowledged
	}
	f.purchases[token] = p
}

// DeletePurchase makes token unknown (404).
func (f *Fake) DeletePurchase(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.purchases, token)
}

// Acknowledged reports whether token was acknowledged.
func (f *Fake) Acknowledged(token string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.acked[token] != ""
}

// Fail makes the next API calls (get, acknowledge) answer the statuses,
// one each, in order.
func (f *Fake) Fail(statuses ...int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failures = append(f.failures, statuses...)
}

// Calls is how many API calls (get, acknowledge) were authorized.
func (f *Fake) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// JWKSFetches is how many times the JWKS was served.
func (f *Fake) JWKSFetches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.jwksFetches
}

// RotateKey makes a new issuer key sign from now on; the old one stays
// in the JWKS (as Google keeps the previous key published).
func (f *Fake) RotateKey() {
	k := newKey(f.t)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.oldKeys[f.issuerKID] = f.issuerKey
	f.issuerKey, f.issuerKID = k, randomID()
}

// Token sets what an ID token of a push says; the zero value is a valid
// token of the fake's push subscription.
type Token struct {
	// Audience, Email and Issuer replace the right ones when set.
	Audience, Email, Issuer string
	// EmailUnverified sets email_verified false.
	EmailUnverified bool
	// IssuedAt replaces now; the token lasts an hour from it.
	IssuedAt time.Time
	// ForeignKey signs with a key the JWKS does not hold, under the
	// issuer's kid.
	ForeignKey bool
	// Alg "none" or "HS256" makes an unsigned or HMAC token.
	Alg string
}

// Push is the body and the Authorization header of the Pub/Sub push of n,
// with a valid ID token.
func (f *Fake) Push(messageID string, n play.DeveloperNotification) (body []byte, authorization string) {
	return f.PushWith(messageID, n, Token{})
}

// PushWith is Push with the ID token tok.
func (f *Fake) PushWith(messageID string, n play.DeveloperNotification, tok Token) (body []byte, authorization string) {
	f.t.Helper()
	if n.Version == "" {
		n.Version = "1.0"
	}
	if n.PackageName == "" {
		n.PackageName = f.pkg
	}
	now := f.clock()
	if n.EventTimeMillis == 0 {
		n.EventTimeMillis = play.Millis(now.UnixMilli())
	}
	data, err := json.Marshal(n)
	if err != nil {
		f.t.Fatalf("playfake: %v", err)
	}
	return Envelope(messageID, now, data), "Bearer " + f.IDToken(tok)
}

// Envelope is a Pub/Sub push body carrying data, as Pub/Sub writes it
// (both the camelCase and the snake_case field names).
func Envelope(messageID string, publishTime time.Time, data []byte) []byte {
	pt := publishTime.UTC().Format("2006-01-02T15:04:05.000Z")
	b, _ := json.Marshal(map[string]any{
		"message": map[string]any{
			"attributes":   map[string]string{},
			"data":         base64.StdEncoding.EncodeToString(data),
			"messageId":    messageID,
			"message_id":   messageID,
			"publishTime":  pt,
			"publish_time": pt,
		},
		"subscription": Subscription,
	})
	return b
}

// IDToken is an ID token as Google signs for a push subscription.
func (f *Fake) IDToken(tok Token) string {
	f.t.Helper()
	f.mu.Lock()
	key, kid, now := f.issuerKey, f.issuerKID, f.now()
	f.mu.Unlock()
	if tok.ForeignKey {
		f.foreignOnce.Do(func() { f.foreign = newKey(f.t) })
		key = f.foreign
	}
	iat := tok.IssuedAt
	if iat.IsZero() {
		iat = now
	}
	claims := jwt.MapClaims{
		"aud":            or(tok.Audience, Audience),
		"azp":            "110000000000000000002",
		"email":          or(tok.Email, PushServiceAccount),
		"email_verified": !tok.EmailUnverified,
		"iat":            iat.Unix(),
		"exp":            iat.Add(time.Hour).Unix(),
		"iss":            or(tok.Issuer, f.srv.URL),
		"sub":            "110000000000000000002",
	}
	var (
		s   string
		err error
	)
	switch tok.Alg {
	case "none":
		s, err = jwt.NewWithClaims(jwt.SigningMethodNone, claims).SignedString(jwt.UnsafeAllowNoneSignatureType)
	case "HS256":
		t := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
		t.Header["kid"] = kid
		s, err = t.SignedString([]byte("secret"))
	default:
		t := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
		t.Header["kid"] = kid
		s, err = t.SignedString(key)
	}
	if err != nil {
		f.t.Fatalf("playfake: sign: %v", err)
	}
	return s
}

func (f *Fake) clock() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now()
}

func (f *Fake) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                f.srv.URL,
		"authorization_endpoint":                f.srv.URL + "/o/oauth2/v2/auth",
		"token_endpoint":                        f.srv.URL + "/token",
		"jwks_uri":                              f.JWKSURL(),
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
	})
}

func (f *Fake) certs(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	f.jwksFetches++
	keys := []map[string]string{jwk(f.issuerKID, &f.issuerKey.PublicKey)}
	for kid, k := range f.oldKeys {
		keys = append(keys, jwk(kid, &k.PublicKey))
	}
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

func jwk(kid string, k *rsa.PublicKey) map[string]string {
	return map[string]string{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": kid,
		"n": base64.RawURLEncoding.EncodeToString(k.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(k.E)).Bytes()),
	}
}

// token is the OAuth 2.0 JWT-bearer grant (RFC 7523) as Google serves it.
func (f *Fake) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != jwtBearer {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	var claims struct {
		jwt.RegisteredClaims
		Scope string `json:"scope"`
	}
	// The assertion is signed with the wall clock by golang.org/x/oauth2,
	// so it is checked against the wall clock (default time func).
	_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), &claims, func(*jwt.Token) (any, error) {
		return &f.saKey.PublicKey, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithExpirationRequired(),
		jwt.WithIssuer(ServiceAccountEmail), jwt.WithAudience(f.srv.URL+"/token"), jwt.WithLeeway(time.Minute))
	if err != nil || !strings.Contains(" "+claims.Scope+" ", " "+play.Scope+" ") {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": fmt.Sprint("Invalid JWT Signature or claims: ", err)})
		return
	}
	at := "ya29.fake-" + randomID()
	f.mu.Lock()
	f.accessTokens[at] = true
	f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "expires_in": 3599, "token_type": "Bearer"})
}

// authorize checks the access token and the package, and consumes a
// failure set by Fail; it answers and returns false when the call stops.
func (f *Fake) authorize(w http.ResponseWriter, r *http.Request) bool {
	at, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	f.mu.Lock()
	ok := f.accessTokens[at]
	var fail int
	if ok {
		f.calls++
		if len(f.failures) > 0 {
			fail, f.failures = f.failures[0], f.failures[1:]
		}
	}
	f.mu.Unlock()
	switch {
	case !ok:
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials.")
	case fail != 0:
		apiError(w, fail, http.StatusText(fail), "injected failure")
	case r.PathValue("pkg") != f.pkg:
		apiError(w, http.StatusForbidden, "PERMISSION_DENIED", "The caller does not have permission")
	default:
		return true
	}
	return false
}

func (f *Fake) get(w http.ResponseWriter, r *http.Request) {
	if !f.authorize(w, r) {
		return
	}
	f.mu.Lock()
	p, ok := f.purchases[r.PathValue("token")]
	f.mu.Unlock()
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "The purchase token was not found.")
		return
	}
	writeJSON(w, http.StatusOK, p)
}

func (f *Fake) acknowledge(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutSuffix(r.PathValue("action"), ":acknowledge")
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "unknown method")
		return
	}
	if !f.authorize(w, r) {
		return
	}
	sub := r.PathValue("sub")
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.purchases[token]
	if !ok {
		apiError(w, http.StatusNotFound, "NOT_FOUND", "The purchase token was not found.")
		return
	}
	known := false
	for _, li := range p.LineItems {
		known = known || li.ProductID == sub
	}
	if !known {
		apiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "The product id does not match the purchase.")
		return
	}
	f.acked[token] = sub
	p.AcknowledgementState = play.AcknowledgementAcknowledged
	f.purchases[token] = p
	w.WriteHeader(http.StatusOK)
}

// apiError writes a Google API error body.
func apiError(w http.ResponseWriter, code int, status, msg string) {
	writeJSON(w, code, map[string]any{"error": map[string]any{
		"code": code, "message": msg, "status": status,
		"errors": []map[string]string{{"message": msg, "domain": "global", "reason": strings.ToLower(status)}},
	}})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func newKey(t testing.TB) *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatalf("playfake: %v", err)
	}
	return k
}

func randomID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%x", b)
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
