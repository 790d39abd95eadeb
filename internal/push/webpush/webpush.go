// Package webpush sends push notifications to browsers with the Web Push
// protocol (RFC 8030): the payload encrypted for each subscription (RFC
// 8291, aes128gcm content coding of RFC 8188) and the application server
// identified with VAPID (RFC 8292).
//
// # Tokens
//
// A web device's push token is the browser's PushSubscription as JSON
// (PushSubscription.toJSON()), checked by ParseSubscription and stored in
// its canonical form (Subscription.String):
//
//	{"endpoint":"https://…","keys":{"p256dh":"<base64url P-256 point>","auth":"<base64url 16 bytes>"}}
//
// # Payload
//
// What the service worker receives (event.data.json()) is one JSON object:
//
//	{"title":"…","body":"…","data":{…},"image":"https://…","badge":3,"tag":"…"}
//
// title and body are the notification's; data is push.Notification.Data
// with its JSON types kept (unlike FCM, no conversion to strings); image
// is Options.ImageURL, badge Options.Badge; tag is the CollapseKey, for
// showNotification's tag, which replaces a shown notification with the
// same tag. Empty members are left out. Sound, ChannelID, ThreadID and
// ContentAvailable have no Web Push meaning and are not sent (a browser
// has no silent push: the service worker decides what to show). The
// encoded payload is at most MaxPayloadLen (3993) bytes; a longer one
// fails the send with push.Other (reason PayloadTooLarge).
//
// # Headers
//
// TTL is Options.TTL in seconds (default 4 weeks, 2419200; 0 is now or
// never). Urgency is high or normal from Options.Priority; without a
// priority, high for a notification with a title or body and normal for
// a data-only one. Topic (a message that replaces an undelivered one with
// the same topic) is the CollapseKey when it is 1 to 32 characters of the
// base64url alphabet, otherwise the first 32 characters of the base64url
// SHA-256 of the CollapseKey: a broadcast's job id (a 36-character UUID)
// is hashed, the same way every time, so a repeated send still replaces
// the first.
//
// # Errors
//
// All errors are *push.Error with Provider "webpush", classified as fcm
// classifies: 2xx (201 Created, 200, 202) is sent; 404 and 410 (the
// subscription expired or was unsubscribed) are DeadToken; 408, 429 and
// 5xx are Retryable with the Retry-After the push service asked for; 401
// and 403 (the push service refused the VAPID signature or key) are
// Fatal; 400, 413 and any other status are Other. Local reasons:
// InvalidSubscription (a token ParseSubscription refuses: DeadToken),
// EndpointNotAllowed (an endpoint on an address the client never dials, see
// Addresses: DeadToken),
// InvalidData and PayloadTooLarge (Other), Transport (Retryable), TLS
// (Fatal), Canceled (Other).
//
// # Addresses
//
// The endpoint comes from the browser, so from a user: the default HTTP
// client dials only public addresses on port 443 (webhooks.AddressPolicy,
// checked on the socket, so DNS cannot point it elsewhere), uses no proxy
// and follows no redirect. Options.AllowPrivate lifts this for
// development and tests (a fake push service on 127.0.0.1, plain http on
// loopback).
package webpush

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/webhooks"
)

const (
	providerName = "webpush"
	// DefaultTTL is how long a push service keeps an undelivered push
	// when Options.TTL is nil.
	DefaultTTL = 4 * 7 * 24 * time.Hour
	// jwtLifetime is a VAPID token's; RFC 8292 allows at most 24 hours.
	jwtLifetime = 12 * time.Hour
	// jwtRenew is how long before its expiry a cached token is replaced.
	jwtRenew     = 6 * time.Hour
	maxErrorBody = 64 << 10
	// maxCachedJWTs bounds the VAPID tokens kept (one per push service).
	maxCachedJWTs = 1024
	sendTimeout   = 30 * time.Second
)

// Options configure a Client.
type Options struct {
	// HTTPClient sends the pushes; nil is NewHTTPClient(AllowPrivate).
	HTTPClient *http.Client
	// AllowPrivate admits subscriptions whose endpoint is plain http on a
	// loopback host and, in the default HTTP client, push services on
	// private and loopback addresses and any port (development, tests).
	AllowPrivate bool
	// Now is the clock of the VAPID tokens (default time.Now).
	Now func() time.Time
}

// Client is a Web Push push.Provider. It is safe for concurrent use and
// should be shared: it keeps connections and VAPID tokens.
type Client struct {
	http    *http.Client
	vapid   *VAPIDKey
	subject string
	parse   []ParseOption
	now     func() time.Time

	mu   sync.Mutex
	jwts map[string]cachedJWT // by audience (the push service's origin)
}

type cachedJWT struct {
	token string
	exp   time.Time
}

var _ push.Provider = (*Client)(nil)

// New builds a Client signing with the VAPID key in keyPEM (see
// ParseVAPIDKey) for subject, the contact push services may use: a
// mailto: or https: URL.
func New(keyPEM []byte, subject string, o Options) (*Client, error) {
	key, err := ParseVAPIDKey(keyPEM)
	if err != nil {
		return nil, err
	}
	if err := CheckSubject(subject); err != nil {
		return nil, err
	}
	c := &Client{http: o.HTTPClient, vapid: key, subject: subject, now: o.Now, jwts: map[string]cachedJWT{}}
	if c.http == nil {
		c.http = NewHTTPClient(o.AllowPrivate)
	}
	if c.now == nil {
		c.now = time.Now
	}
	if o.AllowPrivate {
		c.parse = []ParseOption{AllowLoopbackHTTP()}
	}
	return c, nil
}

// CheckSubject accepts a VAPID subject: a mailto: or https: URL.
func CheckSubject(subject string) error {
	u, err := url.Parse(subject)
	switch {
	case err != nil:
	case u.Scheme == "mailto" && u.Opaque != "":
		return nil
	case u.Scheme == "https" && u.Host != "":
		return nil
	}
	return fmt.Errorf("webpush: VAPID subject %q is not a mailto: or https: URL", subject)
}

// PublicKey is the VAPID public key, base64url of the uncompressed point:
// the applicationServerKey a page passes to pushManager.subscribe.
func (c *Client) PublicKey() string { return c.vapid.Public() }

// NewHTTPClient returns the HTTP client New uses by default: HTTP/2 when
// the push service offers it, no proxy, no redirect followed, every
// connection to an address the policy allows (public addresses on port
// 443; any but a zoned one with allowPrivate).
func NewHTTPClient(allowPrivate bool) *http.Client {
	policy := webhooks.AddressPolicy{AllowPrivate: allowPrivate}
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control:   func(_, address string, _ syscall.RawConn) error { return policy.CheckDial(address) },
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: sendTimeout,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       sendTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// payload is what the service worker reads (see the package doc).
type payload struct {
	Title string         `json:"title,omitempty"`
	Body  string         `json:"body,omitempty"`
	Data  map[string]any `json:"data,omitempty"`
	Image string         `json:"image,omitempty"`
	Badge *int           `json:"badge,omitempty"`
	Tag   string         `json:"tag,omitempty"`
}

// EncodePayload is the JSON payload of n (see the package doc).
func EncodePayload(n push.Notification) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(payload{Title: n.Title, Body: n.Body, Data: n.Data, Image: n.Options.ImageURL, Badge: n.Options.Badge, Tag: n.CollapseKey})
	if err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Send encrypts n for the subscription t.Token and posts it to its push
// service. t.Platform is not inspected: routing is the caller's concern.
func (c *Client) Send(ctx context.Context, t push.Target, n push.Notification) error {
	sub, err := ParseSubscription(t.Token, c.parse...)
	if err != nil {
		return &push.Error{Kind: push.DeadToken, Provider: providerName, Reason: "InvalidSubscription", Err: err}
	}
	plain, err := n.Encoded(providerName, func() ([]byte, error) { return EncodePayload(n) })
	if err != nil {
		return &push.Error{Kind: push.Other, Provider: providerName, Reason: "InvalidData", Err: err}
	}
	if len(plain) > MaxPayloadLen {
		return &push.Error{Kind: push.Other, Provider: providerName, Reason: "PayloadTooLarge",
			Err: fmt.Errorf("payload of %d bytes, at most %d", len(plain), MaxPayloadLen)}
	}
	body, err := Encrypt(sub, plain)
	if err != nil {
		return &push.Error{Kind: push.Other, Provider: providerName, Reason: "Encrypt", Err: err}
	}
	auth, err := c.authorization(sub.Endpoint)
	if err != nil {
		return &push.Error{Kind: push.Fatal, Provider: providerName, Reason: "VAPID", Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sub.Endpoint, bytes.NewReader(body))
	if err != nil {
		return &push.Error{Kind: push.DeadToken, Provider: providerName, Reason: "InvalidSubscription", Err: err}
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Encoding", "aes128gcm")
	req.Header.Set("Authorization", auth)
	setDeliveryHeaders(req.Header, n)

	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, webhooks.ErrNotPublic) || errors.Is(err, webhooks.ErrPortNotAllowed) {
			// The endpoint is somewhere Herald never connects to: it will
			// never take a push.
			return &push.Error{Kind: push.DeadToken, Provider: providerName, Reason: "EndpointNotAllowed", Err: err}
		}
		return push.TransportError(ctx, providerName, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return classifyResponse(resp.StatusCode, resp.Header, raw, c.now())
}

// setDeliveryHeaders writes TTL, Urgency and Topic (see the package doc).
func setDeliveryHeaders(h http.Header, n push.Notification) {
	ttl := int64(DefaultTTL / time.Second)
	if n.Options.TTL != nil {
		ttl = max(int64(*n.Options.TTL/time.Second), 0)
	}
	h.Set("TTL", strconv.FormatInt(ttl, 10))
	urgency := n.Options.Priority
	if urgency != push.PriorityHigh && urgency != push.PriorityNormal {
		urgency = push.PriorityNormal
		if n.Title != "" || n.Body != "" {
			urgency = push.PriorityHigh
		}
	}
	h.Set("Urgency", urgency)
	if t := Topic(n.CollapseKey); t != "" {
		h.Set("Topic", t)
	}
}

var topicPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

// Topic is the Topic header of a collapse key (see the package doc); ""
// for none.
func Topic(collapseKey string) string {
	if collapseKey == "" {
		return ""
	}
	if topicPattern.MatchString(collapseKey) {
		return collapseKey
	}
	sum := sha256.Sum256([]byte(collapseKey))
	return base64.RawURLEncoding.EncodeToString(sum[:])[:32]
}

// authorization is the VAPID Authorization header for endpoint's push
// service, its token reused until jwtRenew before it expires.
func (c *Client) authorization(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	aud := u.Scheme + "://" + u.Host
	now := c.now()
	c.mu.Lock()
	cached, ok := c.jwts[aud]
	c.mu.Unlock()
	if !ok || now.Add(jwtRenew).After(cached.exp) {
		exp := now.Add(jwtLifetime).Truncate(time.Second)
		tok, err := c.vapid.SignJWT(aud, c.subject, exp)
		if err != nil {
			return "", err
		}
		cached = cachedJWT{token: tok, exp: exp}
		c.mu.Lock()
		if len(c.jwts) >= maxCachedJWTs {
			clear(c.jwts) // endpoints come from users: bound the push services remembered
		}
		c.jwts[aud] = cached
		c.mu.Unlock()
	}
	return "vapid t=" + cached.token + ", k=" + c.vapid.Public(), nil
}

// classifyResponse maps a push service's non-2xx answer to a *push.Error
// (see the package doc).
func classifyResponse(status int, h http.Header, body []byte, now time.Time) *push.Error {
	pe := &push.Error{Provider: providerName, Status: status, Reason: http.StatusText(status)}
	if pe.Reason == "" {
		pe.Reason = "HTTP " + strconv.Itoa(status)
	}
	if msg := strings.TrimSpace(string(body)); msg != "" {
		if len(msg) > 200 {
			msg = msg[:200]
		}
		pe.Err = errors.New(msg)
	}
	switch {
	case status == http.StatusNotFound || status == http.StatusGone:
		pe.Kind = push.DeadToken
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500:
		pe.Kind = push.Retryable
		pe.RetryAfter = push.ParseRetryAfter(h.Get("Retry-After"), now)
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		pe.Kind = push.Fatal
	default: // 400, 413 and the rest: this message only
		pe.Kind = push.Other
	}
	return pe
}
