// Package apns sends push notifications to Apple devices over HTTP/2 with
// token-based (.p8, ES256 JWT) authentication, using
// github.com/sideshow/apns2 for request construction and JWT refresh.
//
// # Payload
//
// A notification with a title or body becomes an alert push:
//
//	{"aps":{"alert":{"title":…,"body":…}}, <data keys…>}
//
// sent with apns-push-type alert and priority 10. With neither title nor
// body it becomes a silent background push ({"aps":{"content-available":1}},
// push type background, priority 5), mirroring FCM data-only messages.
// push.Notification.Data entries are placed at the top level with their
// JSON types kept (no string conversion, unlike FCM); a data key "aps" is
// ignored because APNs reserves it. Data that cannot be JSON-encoded fails
// the send with push.Other (reason InvalidData).
//
// # Errors
//
// All errors are *push.Error with Provider "apns" and Reason the APNs reason
// string (BadDeviceToken, Unregistered, ...). APNs sends no Retry-After, so
// RetryAfter is always 0 and callers fall back to their backoff. Local
// reasons: Transport (Retryable), TLS (Fatal), Canceled (Other),
// InvalidData (Other), EmptyToken (DeadToken).
package apns

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sideshow/apns2"
	"github.com/sideshow/apns2/token"

	"github.com/herald-vpn/herald/internal/push"
)

const providerName = "apns"

// Client is an APNs push.Provider. It is safe for concurrent use and should
// be shared: Apple treats connection churn as abuse, and the provider JWT
// is cached and refreshed before its one-hour lifetime ends.
type Client struct {
	c     *apns2.Client
	topic string
}

var _ push.Provider = (*Client)(nil)

// Option customises New.
type Option func(*options)

type options struct {
	tlsConfig *tls.Config
}

// WithTLSConfig sets the TLS configuration of the default HTTP/2 transport,
// e.g. RootCAs trusting a test server.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(o *options) { o.tlsConfig = cfg }
}

// New builds a Client from a .p8 auth key (PEM, PKCS#8 EC P-256) and its
// Key ID, the Apple Team ID and the topic (app bundle ID).
//
// endpoint: "" or "production" → api.push.apple.com; "sandbox" or
// "development" → api.sandbox.push.apple.com; anything else is used as the
// base URL (tests).
func New(keyP8 []byte, keyID, teamID, topic, endpoint string, opts ...Option) (*Client, error) {
	if keyID == "" || teamID == "" || topic == "" {
		return nil, errors.New("apns: keyID, teamID and topic are required")
	}
	host, err := resolveEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	tok, err := providerToken(keyP8, keyID, teamID)
	if err != nil {
		return nil, err
	}

	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := apns2.NewTokenClient(tok)
	c.Host = host
	// Our own transport instead of apns2's, which depends on package-level
	// dial settings and cannot take a TLS config for token clients.
	c.HTTPClient = NewHTTPClient(o.tlsConfig)
	return &Client{c: c, topic: topic}, nil
}

// CheckKey parses the .p8 key and signs a provider token with it, as New
// does, without connecting to APNs.
func CheckKey(keyP8 []byte, keyID, teamID string) error {
	if keyID == "" || teamID == "" {
		return errors.New("apns: keyID and teamID are required")
	}
	_, err := providerToken(keyP8, keyID, teamID)
	return err
}

// providerToken parses the key and signs once: apns2 ignores signing
// errors later, so they surface here.
func providerToken(keyP8 []byte, keyID, teamID string) (*token.Token, error) {
	authKey, err := token.AuthKeyFromBytes(keyP8)
	if err != nil {
		return nil, fmt.Errorf("apns: parse .p8 key: %w", err)
	}
	tok := &token.Token{AuthKey: authKey, KeyID: keyID, TeamID: teamID}
	if _, err := tok.Generate(); err != nil {
		return nil, fmt.Errorf("apns: sign provider token: %w", err)
	}
	return tok, nil
}

// NewHTTPClient returns the HTTP/2 client New uses by default (net/http's
// own HTTP/2, the only protocol offered): long-lived, ping-checked
// connections multiplexing many pushes each. Concurrent first requests share
// one dial, since at most one connection per host is dialed at a time
// (net/http would otherwise open one TLS connection per request, which Apple
// treats as abuse), and more connections open only when APNs's stream limit
// is reached. cfg may be nil.
func NewHTTPClient(cfg *tls.Config) *http.Client {
	if cfg == nil {
		cfg = &tls.Config{}
	} else {
		cfg = cfg.Clone()
	}
	if cfg.MinVersion == 0 {
		cfg.MinVersion = tls.VersionTLS12
	}
	var h2only http.Protocols
	h2only.SetHTTP2(true)
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Protocols:       &h2only,
		TLSClientConfig: cfg,
		// The dial outlives the request that started it (net/http detaches
		// it so others can use the connection), and while it runs no other
		// dial to the host starts: bound it.
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		// For HTTP/2 this limits dials in progress, not connections: one
		// dial serves every request waiting for a connection.
		MaxConnsPerHost: 1,
		IdleConnTimeout: 10 * time.Minute,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 15 * time.Second, // ping a connection silent this long
			PingTimeout:     15 * time.Second, // and close it without an answer by then
		},
	}
	// Timeout backs up callers that pass a context without deadline.
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

func resolveEndpoint(endpoint string) (string, error) {
	switch strings.ToLower(endpoint) {
	case "", "production":
		return apns2.HostProduction, nil
	case "sandbox", "development":
		return apns2.HostDevelopment, nil
	}
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("apns: invalid endpoint %q", endpoint)
	}
	return strings.TrimRight(endpoint, "/"), nil
}

// Send delivers n to the device token t.Token.
func (c *Client) Send(ctx context.Context, t push.Target, n push.Notification) error {
	if t.Token == "" {
		return &push.Error{Kind: push.DeadToken, Provider: providerName, Reason: "EmptyToken"}
	}
	payload, background, err := BuildPayload(n)
	if err != nil {
		return &push.Error{Kind: push.Other, Provider: providerName, Reason: "InvalidData", Err: err}
	}
	note := &apns2.Notification{
		DeviceToken: t.Token,
		Topic:       c.topic,
		Payload:     payload, // pre-encoded, so apns2 errors are transport errors only
		PushType:    apns2.PushTypeAlert,
		Priority:    apns2.PriorityHigh,
		CollapseID:  n.CollapseKey,
	}
	if n.Options.Priority == push.PriorityNormal {
		note.Priority = apns2.PriorityLow
	}
	if background {
		note.PushType = apns2.PushTypeBackground
		note.Priority = apns2.PriorityLow // APNs rejects priority 10 for background pushes
	}
	if ttl := n.Options.TTL; ttl != nil {
		// Now or never: APNs reads 0 so, but apns2 sends no header for
		// 0; a time long past means the same (tried once, not stored).
		note.Expiration = time.Unix(1, 0)
		if *ttl > 0 {
			note.Expiration = time.Now().Add(*ttl)
		}
	}
	resp, err := c.c.PushWithContext(ctx, note)
	if err != nil {
		return push.TransportError(ctx, providerName, err)
	}
	if resp.Sent() {
		return nil
	}
	return &push.Error{
		Kind:     kindOf(resp.StatusCode, resp.Reason),
		Provider: providerName,
		Reason:   resp.Reason,
		Status:   resp.StatusCode,
	}
}

// BuildPayload returns the JSON payload for n and whether it is a silent
// background push (see the package documentation).
func BuildPayload(n push.Notification) (payload []byte, background bool, err error) {
	body := make(map[string]any, len(n.Data)+2)
	for k, v := range n.Data {
		if k != "aps" {
			body[k] = v
		}
	}
	o := n.Options
	aps := map[string]any{}
	if (n.Title == "" && n.Body == "") || o.ContentAvailable {
		aps["content-available"] = 1
		background = true
	} else {
		alert := map[string]string{}
		if n.Title != "" {
			alert["title"] = n.Title
		}
		if n.Body != "" {
			alert["body"] = n.Body
		}
		aps["alert"] = alert
		if o.Sound != "" {
			aps["sound"] = o.Sound
		}
		if o.ImageURL != "" {
			// APNs carries no image: the app's notification service
			// extension downloads it from this key.
			aps["mutable-content"] = 1
			body["imageUrl"] = o.ImageURL
		}
	}
	if o.Badge != nil {
		aps["badge"] = *o.Badge
	}
	if o.ThreadID != "" {
		aps["thread-id"] = o.ThreadID
	}
	body["aps"] = aps
	payload, err = json.Marshal(body)
	return payload, background, err
}

// kindOf maps an APNs status and reason to a push.Kind; reasons take
// precedence, the status is the fallback for reasons this table lacks.
func kindOf(status int, reason string) push.Kind {
	switch reason {
	case apns2.ReasonBadDeviceToken, apns2.ReasonDeviceTokenNotForTopic,
		apns2.ReasonUnregistered, apns2.ReasonExpiredToken:
		return push.DeadToken
	case apns2.ReasonTooManyRequests, apns2.ReasonTooManyProviderTokenUpdates,
		apns2.ReasonInternalServerError, apns2.ReasonServiceUnavailable,
		apns2.ReasonShutdown, apns2.ReasonIdleTimeout:
		return push.Retryable
	case apns2.ReasonInvalidProviderToken, apns2.ReasonExpiredProviderToken,
		apns2.ReasonMissingProviderToken, apns2.ReasonBadTopic,
		apns2.ReasonTopicDisallowed, apns2.ReasonMissingTopic, apns2.ReasonForbidden,
		apns2.ReasonBadCertificate, apns2.ReasonBadCertificateEnvironment:
		return push.Fatal
	}
	switch {
	case status == http.StatusGone:
		return push.DeadToken
	case status == http.StatusForbidden:
		return push.Fatal
	case status == http.StatusTooManyRequests || status >= 500:
		return push.Retryable
	}
	return push.Other
}
