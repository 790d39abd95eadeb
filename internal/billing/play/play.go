// Package play is Herald's Google Play adapter: it verifies and decodes
// real-time developer notifications pushed by Pub/Sub (an OIDC ID token
// from Google in the push's Authorization header), reads purchases from
// the Google Play Developer API (purchases.subscriptionsv2.get, with a
// service account's OAuth token) and acknowledges them.
//
// It speaks the REST API with net/http and its own structs rather than
// google.golang.org/api/androidpublisher: the two calls need a few dozen
// lines, the generated client is a large dependency, and owning the
// request makes the 404/410 and 5xx/429 mapping explicit. The ID token is
// checked with golang-jwt and a small JWKS cache (go-oidc would add a
// dependency for the same checks); the OAuth token comes from
// golang.org/x/oauth2/google, which honours the key file's token_uri.
// Both libraries were already in go.mod.
package play

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// Defaults (Google's production endpoints).
const (
	DefaultIssuer  = "https://accounts.google.com"
	DefaultJWKSURL = "https://www.googleapis.com/oauth2/v3/certs"
	DefaultAPIBase = "https://androidpublisher.googleapis.com"
	// Scope is the OAuth scope of the Google Play Developer API.
	Scope = "https://www.googleapis.com/auth/androidpublisher"
)

const (
	// leeway tolerates clock skew between Google and Herald.
	leeway = time.Minute
	// jwksMaxAge: keys are refetched at least this often (Google rotates
	// them over days and announces new ones in advance).
	jwksMaxAge = time.Hour
	// jwksMinRefetch bounds refetches for an unknown kid, so that tokens
	// with made-up kids cannot make Herald hammer the JWKS endpoint.
	jwksMinRefetch = time.Minute
	maxBody        = 1 << 20
)

// ErrPurchaseNotFound: Play knows no such purchase token for the package
// (404, 410 for a purchase long expired, 400 for a token it cannot
// parse). The caller refuses a client's token with 4xx.
var ErrPurchaseNotFound = errors.New("play: purchase token not found")

// Config configures a Client.
type Config struct {
	// PackageName is the app's; notifications for another package are
	// billing.ErrMisaddressed.
	PackageName string
	// PushAudience is the audience configured on the push subscription.
	PushAudience string
	// PushServiceAccount is the email the push subscription authenticates
	// as; the token must carry it with email_verified true.
	PushServiceAccount string
	// PushIssuer defaults to DefaultIssuer (then "accounts.google.com" is
	// accepted too).
	PushIssuer string
	// JWKSURL defaults to DefaultJWKSURL.
	JWKSURL string
	// ServiceAccountJSON is the service account's key file; its token_uri
	// is honoured.
	ServiceAccountJSON []byte
	// APIBase defaults to DefaultAPIBase.
	APIBase string
	// HTTPClient defaults to a client with a 30 s timeout.
	HTTPClient *http.Client
	// Now defaults to time.Now.
	Now func() time.Time
}

// Client verifies pushes and reads purchases of one app. It is safe for
// concurrent use.
type Client struct {
	cfg     Config
	issuers []string
	http    *http.Client
	tokens  oauth2.TokenSource
	now     func() time.Time
	jwks    jwksCache
}

// Purchase is a purchase read from the API.
type Purchase struct {
	Observation subscriptions.Observation
	// Acknowledged is false until Acknowledge (or the app) acknowledged
	// it; Play refunds a purchase not acknowledged within three days.
	Acknowledged bool
	// SubscriptionID is the product id of the line item served, for
	// Acknowledge.
	SubscriptionID string
	// Raw is the API's answer.
	Raw SubscriptionPurchaseV2
}

// New checks cfg and builds a Client. ctx carries values for the OAuth
// token fetches; its cancellation is ignored, as the Client outlives it.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if cfg.PackageName == "" || cfg.PushAudience == "" || cfg.PushServiceAccount == "" {
		return nil, errors.New("play: PackageName, PushAudience and PushServiceAccount are required")
	}
	if cfg.PushIssuer == "" {
		cfg.PushIssuer = DefaultIssuer
	}
	if cfg.JWKSURL == "" {
		cfg.JWKSURL = DefaultJWKSURL
	}
	if cfg.APIBase == "" {
		cfg.APIBase = DefaultAPIBase
	}
	cfg.APIBase = strings.TrimRight(cfg.APIBase, "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	jc, err := google.JWTConfigFromJSON(cfg.ServiceAccountJSON, Scope)
	if err != nil {
		return nil, fmt.Errorf("play: service account key: %w", err)
	}
	tctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, cfg.HTTPClient)
	c := &Client{
		cfg:     cfg,
		issuers: []string{cfg.PushIssuer},
		http:    cfg.HTTPClient,
		tokens:  jc.TokenSource(tctx),
		now:     cfg.Now,
	}
	if cfg.PushIssuer == DefaultIssuer {
		// Google's ID tokens carry either form.
		c.issuers = append(c.issuers, "accounts.google.com")
	}
	return c, nil
}

// VerifyPush checks the push's Authorization header value ("Bearer
// <ID token>"): the RS256 signature against the JWKS, iss, exp, iat and a
// verified email (billing.ErrForged), aud (billing.ErrMisaddressed: a
// token for another push endpoint), and the email of the push
// subscription's service account (billing.ErrForged: another account's
// token proves nothing). A JWKS that cannot be fetched is
// billing.ErrUpstream.
func (c *Client) VerifyPush(ctx context.Context, authorization string) error {
	raw, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || raw == "" {
		return fmt.Errorf("play: push without a bearer token: %w", billing.ErrForged)
	}
	var claims struct {
		jwt.RegisteredClaims
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
	}
	var upstream error
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		key, err := c.jwks.key(ctx, c, kid)
		if errors.Is(err, billing.ErrUpstream) {
			upstream = err
		}
		return key, err
	},
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithTimeFunc(c.now),
		jwt.WithLeeway(leeway),
		jwt.WithIssuedAt(),
		jwt.WithExpirationRequired(),
	)
	if upstream != nil {
		return upstream
	}
	if err != nil {
		return fmt.Errorf("play: push token: %v: %w", err, billing.ErrForged)
	}
	if !oneOf(claims.Issuer, c.issuers) {
		return fmt.Errorf("play: push token issuer %q: %w", claims.Issuer, billing.ErrForged)
	}
	if !claims.EmailVerified {
		return fmt.Errorf("play: push token email not verified: %w", billing.ErrForged)
	}
	if !oneOf(c.cfg.PushAudience, claims.Audience) {
		return fmt.Errorf("play: push token audience %q: %w", []string(claims.Audience), billing.ErrMisaddressed)
	}
	// Any Google service account can have Google sign it an ID token for
	// any audience, ours included: one that is not the push
	// subscription's does not authenticate the push at all.
	if claims.Email != c.cfg.PushServiceAccount {
		return fmt.Errorf("play: push token email %q: %w", claims.Email, billing.ErrForged)
	}
	return nil
}

// CheckPackage refuses a push for another app with billing.ErrMisaddressed.
func (c *Client) CheckPackage(p Push) error {
	if p.PackageName != c.cfg.PackageName {
		return fmt.Errorf("play: notification for package %q: %w", p.PackageName, billing.ErrMisaddressed)
	}
	return nil
}

// Purchase reads the subscription purchase of token
// (purchases.subscriptionsv2.get) and maps it (Observe, ObservedAt now).
// A token Play does not know is ErrPurchaseNotFound; a pending purchase
// is ErrPending (with the Purchase filled but for its Observation's
// state).
func (c *Client) Purchase(ctx context.Context, token string) (Purchase, error) {
	if token == "" {
		return Purchase{}, fmt.Errorf("play: empty purchase token: %w", ErrPurchaseNotFound)
	}
	u := c.cfg.APIBase + "/androidpublisher/v3/applications/" + url.PathEscape(c.cfg.PackageName) +
		"/purchases/subscriptionsv2/tokens/" + url.PathEscape(token)
	body, err := c.call(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Purchase{}, err
	}
	var raw SubscriptionPurchaseV2
	if err := json.Unmarshal(body, &raw); err != nil {
		return Purchase{}, malformed("subscriptionsv2 answer: %v", err)
	}
	p := Purchase{Raw: raw, Acknowledged: raw.AcknowledgementState == AcknowledgementAcknowledged}
	p.Observation, err = Observe(raw, token, c.now())
	p.SubscriptionID = p.Observation.ProductID
	if p.SubscriptionID == "" && len(raw.LineItems) > 0 {
		p.SubscriptionID = raw.LineItems[0].ProductID
	}
	return p, err
}

// Acknowledge acknowledges the purchase (purchases.subscriptions.acknowledge).
func (c *Client) Acknowledge(ctx context.Context, subscriptionID, token string) error {
	if subscriptionID == "" || token == "" {
		return fmt.Errorf("play: acknowledge needs a subscription id and a token: %w", ErrPurchaseNotFound)
	}
	u := c.cfg.APIBase + "/androidpublisher/v3/applications/" + url.PathEscape(c.cfg.PackageName) +
		"/purchases/subscriptions/" + url.PathEscape(subscriptionID) + "/tokens/" + url.PathEscape(token) + ":acknowledge"
	_, err := c.call(ctx, http.MethodPost, u, strings.NewReader("{}"))
	return err
}

// call sends an authorized request and returns a 2xx answer's body.
func (c *Client) call(ctx context.Context, method, u string, body io.Reader) ([]byte, error) {
	tok, err := c.tokens.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && !retryable(re.Response.StatusCode) {
			return nil, fmt.Errorf("play: oauth token: %w", err)
		}
		return nil, fmt.Errorf("play: oauth token: %v: %w", err, billing.ErrUpstream)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("play: %w", err)
	}
	tok.SetAuthHeader(req)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("play: %w", ctx.Err())
		}
		return nil, fmt.Errorf("play: %s: %v: %w", method, err, billing.ErrUpstream)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("play: read answer: %v: %w", err, billing.ErrUpstream)
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		return b, nil
	case code == http.StatusNotFound || code == http.StatusGone || code == http.StatusBadRequest:
		return nil, fmt.Errorf("play: %d %s: %w", code, apiMessage(b), ErrPurchaseNotFound)
	case retryable(code):
		return nil, fmt.Errorf("play: %d %s: %w", code, apiMessage(b), billing.ErrUpstream)
	default:
		// 401, 403: the service account lacks access; the operator's to fix.
		return nil, fmt.Errorf("play: %d %s", code, apiMessage(b))
	}
}

func retryable(code int) bool {
	return code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500
}

// apiMessage is the message of a Google API error body, if any.
func apiMessage(b []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil {
		return e.Error.Message
	}
	return ""
}

func oneOf(s string, set []string) bool {
	for _, v := range set {
		if v == s {
			return true
		}
	}
	return false
}

// jwksCache keeps the issuer's signing keys by kid.
type jwksCache struct {
	mu        sync.Mutex
	keys      map[string]*rsa.PublicKey
	fetchedAt time.Time
}

// key returns the key of kid, fetching the JWKS when the cache is empty or
// old, or (at most once per jwksMinRefetch) when kid is unknown.
func (j *jwksCache) key(ctx context.Context, c *Client, kid string) (*rsa.PublicKey, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	now := c.now()
	stale := j.keys == nil || now.Sub(j.fetchedAt) > jwksMaxAge || now.Before(j.fetchedAt)
	k, ok := j.keys[kid]
	if !stale && (ok || now.Sub(j.fetchedAt) < jwksMinRefetch) {
		if !ok {
			return nil, fmt.Errorf("unknown kid %q", kid)
		}
		return k, nil
	}
	keys, err := fetchJWKS(ctx, c.http, c.cfg.JWKSURL)
	if err != nil {
		if ok {
			return k, nil // a stale key beats an outage
		}
		return nil, err
	}
	j.keys, j.fetchedAt = keys, now
	if k, ok = keys[kid]; !ok {
		return nil, fmt.Errorf("unknown kid %q", kid)
	}
	return k, nil
}

func fetchJWKS(ctx context.Context, hc *http.Client, u string) (map[string]*rsa.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("play: jwks: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("play: jwks: %v: %w", err, billing.ErrUpstream)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("play: jwks: status %d: %w", resp.StatusCode, billing.ErrUpstream)
	}
	var set struct {
		Keys []struct {
			Kty string `json:"kty"`
			Kid string `json:"kid"`
			N   string `json:"n"`
			E   string `json:"e"`
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&set); err != nil {
		return nil, fmt.Errorf("play: jwks: %v: %w", err, billing.ErrUpstream)
	}
	keys := make(map[string]*rsa.PublicKey, len(set.Keys))
	for _, k := range set.Keys {
		if k.Kty != "RSA" {
			continue
		}
		n, err1 := base64.RawURLEncoding.DecodeString(k.N)
		e, err2 := base64.RawURLEncoding.DecodeString(k.E)
		if err1 != nil || err2 != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	return keys, nil
}
