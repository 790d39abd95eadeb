// Package fcm sends push notifications through the Firebase Cloud Messaging
// HTTP v1 API (POST {endpoint}/v1/projects/{project}/messages:send),
// authenticating with a Google service-account JSON via OAuth2.
//
// # Data encoding
//
// FCM only accepts string values in message.data. push.Notification.Data
// values are therefore converted: a string is sent unchanged; every other
// value (numbers, bools, nil, maps/objects, slices/arrays, structs) is sent
// as its JSON text, e.g. 42 → "42", true → "true",
// map[string]any{"a":1} → `{"a":1}`. Apps must JSON-decode non-string
// fields. A value that cannot be JSON-encoded fails the send with
// push.Other (reason InvalidData).
//
// When Title and Body are both empty no "notification" block is sent, which
// makes it a data-only message.
//
// # Errors
//
// All errors are *push.Error with Provider "fcm". Reason is the FcmError
// errorCode when present (UNREGISTERED, SENDER_ID_MISMATCH, ...), otherwise
// the google.rpc status (INVALID_ARGUMENT, UNAUTHENTICATED, ...). Local
// reasons: TOKEN_ENDPOINT (OAuth2 token fetch failed: Fatal, or Retryable
// for 408/429/500/503), Transport (Retryable), TLS (Fatal), Canceled
// (Other), InvalidData (Other), EmptyToken (DeadToken).
package fcm

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/herald-vpn/herald/internal/push"
)

const (
	// DefaultEndpoint is the production FCM API.
	DefaultEndpoint = "https://fcm.googleapis.com"
	// Scope is the OAuth2 scope FCM HTTP v1 requires.
	Scope = "https://www.googleapis.com/auth/firebase.messaging"

	providerName = "fcm"
	// tokenFetchTimeout bounds OAuth2 token requests, which do not see the
	// caller's ctx (the oauth2 token source keeps its own context).
	tokenFetchTimeout = 30 * time.Second
	// maxErrorBody limits how much of an error response we read.
	maxErrorBody = 64 << 10
)

// Client is an FCM HTTP v1 push.Provider. It is safe for concurrent use and
// should be shared: it keeps HTTP/2 connections and the access token alive.
type Client struct {
	httpClient *http.Client
	tokens     oauth2.TokenSource
	sendURL    string
	projectID  string
}

var _ push.Provider = (*Client)(nil)

// New builds a Client from a service-account JSON key.
//
// projectID defaults to project_id in the key; endpoint defaults to
// DefaultEndpoint; httpClient defaults to NewHTTPClient(nil). The OAuth2
// token is fetched lazily from the key's token_uri using httpClient's
// transport, so tests can point token_uri at a fake. ctx only carries
// values for token fetches; its cancellation is ignored so the Client
// outlives it.
func New(ctx context.Context, credentialsJSON []byte, projectID, endpoint string, httpClient *http.Client) (*Client, error) {
	if httpClient == nil {
		httpClient = NewHTTPClient(nil)
	}
	tokenHTTP := &http.Client{Transport: httpClient.Transport, Timeout: tokenFetchTimeout}
	tctx := context.WithValue(context.WithoutCancel(ctx), oauth2.HTTPClient, tokenHTTP)
	// Typed loader: only service-account keys are accepted, as recommended
	// over the deprecated untyped CredentialsFromJSON.
	creds, err := google.CredentialsFromJSONWithType(tctx, credentialsJSON, google.ServiceAccount, Scope)
	if err != nil {
		return nil, fmt.Errorf("fcm: parse credentials: %w", err)
	}
	// The oauth2 library parses the key only at the first token fetch;
	// parse it now so a broken key fails at startup, not mid-broadcast.
	if err := checkPrivateKey(credentialsJSON); err != nil {
		return nil, fmt.Errorf("fcm: credentials: %w", err)
	}
	if projectID == "" {
		projectID = creds.ProjectID
	}
	if projectID == "" {
		return nil, errors.New("fcm: no project ID given and none in credentials")
	}
	if endpoint == "" {
		endpoint = DefaultEndpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("fcm: invalid endpoint %q", endpoint)
	}
	return &Client{
		httpClient: httpClient,
		tokens:     creds.TokenSource,
		sendURL:    strings.TrimRight(endpoint, "/") + "/v1/projects/" + url.PathEscape(projectID) + "/messages:send",
		projectID:  projectID,
	}, nil
}

// ProjectID returns the Firebase project messages are sent for.
func (c *Client) ProjectID() string { return c.projectID }

// NewHTTPClient returns the HTTP client New uses by default, tuned for many
// concurrent sends to one host. https URLs go over HTTP/2 only (net/http's
// own, negotiated by ALPN): concurrent first requests share one dial instead
// of each opening a TLS connection (net/http's behaviour when dials are not
// limited, golang/go#13957) because at most one connection per host is
// dialed at a time; the others wait for it and multiplex over it. Further
// connections open only when a connection's stream limit is reached, and
// idle connections are health-checked with pings.
// Plain http URLs (test fakes) use HTTP/1.1 keep-alive with at most 64
// connections. rootCAs nil means the system roots; tests pass the fake's
// pool. Proxies from the environment are honoured for http URLs only.
func NewHTTPClient(rootCAs *x509.CertPool) *http.Client {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	var h2only http.Protocols
	h2only.SetHTTP2(true)
	h2 := &http.Transport{
		Protocols:       &h2only,
		TLSClientConfig: &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12},
		// The dial outlives the request that started it (net/http detaches
		// it so others can use the connection), and while it runs no other
		// dial to the host starts: bound it.
		DialContext:         dialer.DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		// For HTTP/2 this limits dials in progress, not connections: one
		// dial serves every request waiting for a connection.
		MaxConnsPerHost: 1,
		IdleConnTimeout: 90 * time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second, // ping a connection silent this long
			PingTimeout:     15 * time.Second, // and close it without an answer by then
		},
	}
	h1 := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialer.DialContext,
		MaxConnsPerHost:     64, // bounds sockets during big broadcasts
		MaxIdleConns:        64,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{Transport: &schemeTransport{https: h2, http: h1}}
}

// schemeTransport sends https requests over HTTP/2 and the rest over HTTP/1.1.
type schemeTransport struct {
	https *http.Transport
	http  *http.Transport
}

func (t *schemeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme == "https" {
		return t.https.RoundTrip(r)
	}
	return t.http.RoundTrip(r)
}

// CloseIdleConnections lets http.Client.CloseIdleConnections reach both.
func (t *schemeTransport) CloseIdleConnections() {
	t.https.CloseIdleConnections()
	t.http.CloseIdleConnections()
}

type sendRequest struct {
	Message message `json:"message"`
}

type message struct {
	Token        string            `json:"token"`
	Notification *notification     `json:"notification,omitempty"`
	Data         map[string]string `json:"data,omitempty"`
	Android      *androidConfig    `json:"android,omitempty"`
	APNs         *apnsConfig       `json:"apns,omitempty"`
}

type androidConfig struct {
	CollapseKey  string               `json:"collapse_key,omitempty"`
	Priority     string               `json:"priority,omitempty"` // HIGH or NORMAL
	TTL          string               `json:"ttl,omitempty"`      // "3600s"
	Notification *androidNotification `json:"notification,omitempty"`
}

type androidNotification struct {
	// Tag replaces a shown notification with the same tag; collapse_key
	// only collapses messages not yet delivered.
	Tag               string `json:"tag,omitempty"`
	ChannelID         string `json:"channel_id,omitempty"`
	Sound             string `json:"sound,omitempty"`
	NotificationCount *int   `json:"notification_count,omitempty"`
}

type apnsConfig struct {
	Headers map[string]string `json:"headers,omitempty"`
	Payload map[string]any    `json:"payload,omitempty"`
}

type notification struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body,omitempty"`
	Image string `json:"image,omitempty"`
}

// applyOptions maps push.Options onto the message (see the package
// documentation for the table); FCM relays the apns block to APNs for iOS
// tokens.
func applyOptions(m *message, n push.Notification, now time.Time) {
	o := n.Options
	android := &androidConfig{CollapseKey: n.CollapseKey}
	apnsHeaders := map[string]string{}
	aps := map[string]any{}
	if n.CollapseKey != "" {
		apnsHeaders["apns-collapse-id"] = n.CollapseKey
	}
	switch o.Priority {
	case push.PriorityHigh:
		android.Priority, apnsHeaders["apns-priority"] = "HIGH", "10"
	case push.PriorityNormal:
		android.Priority, apnsHeaders["apns-priority"] = "NORMAL", "5"
	}
	if o.TTL != nil {
		secs := int64(o.TTL.Seconds())
		android.TTL = strconv.FormatInt(secs, 10) + "s"
		exp := int64(0) // now or never
		if secs > 0 {
			exp = now.Unix() + secs
		}
		apnsHeaders["apns-expiration"] = strconv.FormatInt(exp, 10)
	}
	an := &androidNotification{ChannelID: o.ChannelID, Sound: o.Sound, NotificationCount: o.Badge}
	if m.Notification != nil {
		// Only a shown notification has something to replace: a tag on a
		// data-only message would make Android show an empty one.
		an.Tag = n.CollapseKey
	}
	if o.Badge != nil {
		aps["badge"] = *o.Badge
	}
	if o.Sound != "" {
		aps["sound"] = o.Sound
	}
	if o.ThreadID != "" {
		aps["thread-id"] = o.ThreadID
	}
	if o.ImageURL != "" && m.Notification != nil {
		m.Notification.Image = o.ImageURL
		aps["mutable-content"] = 1 // the app's service extension fetches the image
	}
	if o.ContentAvailable {
		m.Notification = nil // data only: nothing is shown
		aps["content-available"] = 1
		apnsHeaders["apns-push-type"] = "background"
		apnsHeaders["apns-priority"] = "5" // APNs refuses 10 for a background push
	} else if *an != (androidNotification{}) {
		android.Notification = an
	}
	if *android != (androidConfig{}) {
		m.Android = android
	}
	if len(apnsHeaders) > 0 || len(aps) > 0 {
		m.APNs = &apnsConfig{Headers: apnsHeaders}
		if len(aps) > 0 {
			m.APNs.Payload = map[string]any{"aps": aps}
		}
	}
}

// EncodeData converts notification data to FCM's string-only map, following
// the rules in the package documentation.
func EncodeData(data map[string]any) (map[string]string, error) {
	if len(data) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(data))
	for k, v := range data {
		if s, ok := v.(string); ok {
			out[k] = s
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("data[%q]: %w", k, err)
		}
		out[k] = string(b)
	}
	return out, nil
}

// Send delivers n to t.Token. t.Platform is not inspected: routing is the
// caller's concern.
func (c *Client) Send(ctx context.Context, t push.Target, n push.Notification) error {
	if t.Token == "" {
		return &push.Error{Kind: push.DeadToken, Provider: providerName, Reason: "EmptyToken"}
	}
	body, err := messageBody(t.Token, n)
	if err != nil {
		return &push.Error{Kind: push.Other, Provider: providerName, Reason: "InvalidData", Err: err}
	}

	tok, err := c.tokens.Token()
	if err != nil {
		return tokenError(err)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.sendURL, bytes.NewReader(body))
	if err != nil {
		return &push.Error{Kind: push.Fatal, Provider: providerName, Reason: "BadRequest", Err: err}
	}
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	tok.SetAuthHeader(req)

	resp, err := c.httpClient.Do(req)
	if err != nil {
		return push.TransportError(ctx, providerName, err)
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		// Drain so the connection is reused (HTTP/1.1 fallback).
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return classifyResponse(resp.StatusCode, resp.Header, raw)
}

// tokenPrefix is how every encoded message starts: the token is its
// first field.
const tokenPrefix = `{"message":{"token":`

// messageBody is the request body sending n to token: the message encoded
// without a token (once for a prepared notification, unless a TTL makes
// it depend on the time of the send) with the token put in.
func messageBody(token string, n push.Notification) ([]byte, error) {
	encode := func() ([]byte, error) { return encodeMessage(n, time.Now()) }
	var tmpl []byte
	var err error
	if ttl := n.Options.TTL; ttl != nil && *ttl > 0 {
		tmpl, err = encode() // apns-expiration counts from this send
	} else {
		tmpl, err = n.Encoded(providerName, encode)
	}
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(tmpl, []byte(tokenPrefix+`""`))
	if !ok {
		return nil, errors.New("fcm: encoded message does not start with its token")
	}
	body := make([]byte, 0, len(tmpl)+len(token)+8)
	body = append(body, tokenPrefix...)
	body, err = appendJSONString(body, token)
	if err != nil {
		return nil, err
	}
	return append(body, rest...), nil
}

// encodeMessage encodes n as a send request with an empty token.
func encodeMessage(n push.Notification, now time.Time) ([]byte, error) {
	data, err := EncodeData(n.Data)
	if err != nil {
		return nil, err
	}
	msg := sendRequest{Message: message{Data: data}}
	if n.Title != "" || n.Body != "" {
		msg.Message.Notification = &notification{Title: n.Title, Body: n.Body}
	}
	applyOptions(&msg.Message, n, now)
	return json.Marshal(msg)
}

// appendJSONString appends s as a JSON string: as it is when it needs no
// escaping (push tokens never do), through encoding/json otherwise.
func appendJSONString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := json.Marshal(s)
			return append(b, q...), err
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

// tokenError classifies OAuth2 token endpoint failures: a misconfigured or
// revoked key is Fatal; a token endpoint answering 408/429/500/503 is
// Retryable. Network failures reaching the endpoint are Fatal because the
// oauth2 library does not expose them as typed errors.
func tokenError(err error) error {
	pe := &push.Error{Kind: push.Fatal, Provider: providerName, Reason: "TOKEN_ENDPOINT", Err: err}
	if ae, ok := errors.AsType[*google.AuthenticationError](err); ok && ae.Temporary() {
		pe.Kind = push.Retryable
	}
	if re, ok := errors.AsType[*oauth2.RetrieveError](err); ok && re.Response != nil {
		pe.Status = re.Response.StatusCode
		if pe.Kind == push.Retryable {
			pe.RetryAfter = push.ParseRetryAfter(re.Response.Header.Get("Retry-After"), time.Now())
		}
	}
	return pe
}

func checkPrivateKey(credentialsJSON []byte) error {
	var f struct {
		PrivateKey string `json:"private_key"`
	}
	if err := json.Unmarshal(credentialsJSON, &f); err != nil {
		return err
	}
	block, _ := pem.Decode([]byte(f.PrivateKey))
	if block == nil {
		return errors.New("private_key is not PEM")
	}
	if _, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return nil
	}
	if _, err := x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
		return fmt.Errorf("private_key: %w", err)
	}
	return nil
}

// Check fetches an OAuth2 access token for the service account, which
// proves the key is accepted by its token endpoint, and sends nothing.
// Its error is a *push.Error with reason TOKEN_ENDPOINT.
func (c *Client) Check(ctx context.Context) error {
	done := make(chan error, 1)
	// The token source ignores ctx (see New); wait for it no longer than ctx.
	go func() {
		_, err := c.tokens.Token()
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			return tokenError(err)
		}
		return nil
	case <-ctx.Done():
		return &push.Error{Kind: push.Retryable, Provider: providerName, Reason: "TOKEN_ENDPOINT", Err: ctx.Err()}
	}
}
