// Package hms sends push notifications to Huawei devices through Huawei
// Push Kit (HMS Core): POST {SendURL}/v1/{appId}/messages:send, with an
// OAuth 2.0 access token got by client credentials at Huawei's token
// endpoint (POST {TokenURL}, form grant_type=client_credentials, client_id,
// client_secret).
//
// Wire format used (checked against Huawei's own Go server demo,
// github.com/HMS-Core/hms-push-serverdemo-go: src/push/model for the
// fields, src/push/verify for the values it allows (urgency HIGH/NORMAL,
// importance HIGH/NORMAL/LOW, click_action type 1-4, collapse_key an
// integer), src/push/authention for the token request; and the request
// example in github.com/alvareztech/android-notifications README, which
// cites Huawei's "https-send-api" reference): one token per request in
// message.token (a list); title and body in message.android.notification,
// which always carries click_action {"type":3} (open the app);
// validate_only false.
//
// # Options
//
//   - CollapseKey → android.notification.tag (replaces a shown
//     notification). It is not sent as android.collapse_key, which in Push
//     Kit is an integer in [-1, 100], not a string.
//   - Priority high/normal → android.urgency HIGH/NORMAL and
//     android.notification.importance HIGH/NORMAL; "" sends neither
//     (Huawei's default).
//   - TTL → android.ttl as whole seconds, e.g. "3600s".
//   - Sound → android.notification.sound; "" or "default" sets
//     default_sound instead.
//   - ImageURL → android.notification.image; ChannelID →
//     android.notification.channel_id.
//   - ContentAvailable, or no title and no body: a data message (no
//     android.notification block).
//   - Badge and ThreadID are not sent: Push Kit's badge needs the app's
//     launcher class, and it has no thread id.
//
// # Data encoding
//
// message.data is a string: Notification.Data is sent as its JSON text
// (an object), e.g. {"k":"v","n":1}. Empty Data sends no data. A value that
// cannot be JSON-encoded fails the send with push.Other (reason
// InvalidData).
//
// # Errors
//
// All errors are *push.Error with Provider "hms"; see errors.go for the
// mapping of Push Kit's result codes. Reason is the result code when the
// answer has one (e.g. "80300007"), else the HTTP status text. Local
// reasons: TOKEN_ENDPOINT (the OAuth token request failed: Fatal, or
// Retryable for 408/429/5xx and network errors), Transport (Retryable), TLS
// (Fatal), Canceled (Other), InvalidData (Other), EmptyToken (DeadToken).
package hms

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

const (
	// DefaultTokenURL is Huawei's OAuth 2.0 token endpoint.
	DefaultTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"
	// DefaultSendURL is the base of Push Kit's send API.
	DefaultSendURL = "https://push-api.cloud.huawei.com"

	providerName = "hms"
	// tokenFetchTimeout bounds an access token request, which does not
	// end with the caller's ctx (other sends may be waiting for it).
	tokenFetchTimeout = 30 * time.Second
	// maxBody limits how much of an answer is read.
	maxBody = 64 << 10
)

// Config configures a Client.
type Config struct {
	// AppID is the app's ID in AppGallery Connect; it names the app in the
	// send URL.
	AppID string
	// ClientID and ClientSecret are the OAuth 2.0 client credentials
	// (for Push Kit, the app's ID and secret). ClientID defaults to AppID.
	ClientID     string
	ClientSecret string
	// TokenURL defaults to DefaultTokenURL; SendURL (scheme and host, the
	// path /v1/{appId}/messages:send is appended) to DefaultSendURL.
	TokenURL string
	SendURL  string
	// HTTPClient sends both token and send requests; nil is a client of
	// its own (not sharing http.DefaultTransport) with a 30 s timeout that
	// keeps up to 64 idle connections to Push Kit for the next sends.
	HTTPClient *http.Client
}

// Client is a Push Kit push.Provider. It is safe for concurrent use and
// should be shared: it keeps the access token and connections.
type Client struct {
	httpClient *http.Client
	sendURL    string
	tokens     *tokenSource
}

var _ push.Provider = (*Client)(nil)

// New checks cfg and returns a Client. No request is made: the access
// token is fetched at the first send.
func New(cfg Config) (*Client, error) {
	if cfg.AppID == "" {
		return nil, errors.New("hms: no app ID")
	}
	if cfg.ClientID == "" {
		cfg.ClientID = cfg.AppID
	}
	if cfg.ClientSecret == "" {
		return nil, errors.New("hms: no client secret")
	}
	if cfg.TokenURL == "" {
		cfg.TokenURL = DefaultTokenURL
	}
	if cfg.SendURL == "" {
		cfg.SendURL = DefaultSendURL
	}
	for _, raw := range []string{cfg.TokenURL, cfg.SendURL} {
		if u, err := url.Parse(raw); err != nil || u.Scheme == "" || u.Host == "" {
			return nil, fmt.Errorf("hms: invalid URL %q", raw)
		}
	}
	hc := cfg.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		// A broadcast has up to HERALD_PUSH_CONCURRENCY (64) sends in
		// flight; over HTTP/1.1 the default of 2 idle connections per host
		// would close most of them after each send and dial again.
		tr.MaxIdleConnsPerHost = 64
		tr.MaxIdleConns = 64
		hc = &http.Client{Timeout: 30 * time.Second, Transport: tr}
	}
	return &Client{
		httpClient: hc,
		sendURL:    strings.TrimRight(cfg.SendURL, "/") + "/v1/" + url.PathEscape(cfg.AppID) + "/messages:send",
		tokens: &tokenSource{
			httpClient:   hc,
			url:          cfg.TokenURL,
			clientID:     cfg.ClientID,
			clientSecret: cfg.ClientSecret,
			timeout:      tokenFetchTimeout,
			now:          time.Now,
		},
	}, nil
}

type sendRequest struct {
	// Message comes first: messageBody splices the token into its start.
	Message      message `json:"message"`
	ValidateOnly bool    `json:"validate_only"`
}

type message struct {
	Token   []string       `json:"token"`
	Data    string         `json:"data,omitempty"`
	Android *androidConfig `json:"android,omitempty"`
}

type androidConfig struct {
	Urgency      string               `json:"urgency,omitempty"` // HIGH or NORMAL
	TTL          string               `json:"ttl,omitempty"`     // "3600s"
	Notification *androidNotification `json:"notification,omitempty"`
}

type androidNotification struct {
	Title        string      `json:"title,omitempty"`
	Body         string      `json:"body,omitempty"`
	Image        string      `json:"image,omitempty"`
	Sound        string      `json:"sound,omitempty"`
	DefaultSound bool        `json:"default_sound,omitempty"`
	Tag          string      `json:"tag,omitempty"`
	ChannelID    string      `json:"channel_id,omitempty"`
	Importance   string      `json:"importance,omitempty"` // HIGH or NORMAL
	ClickAction  clickAction `json:"click_action"`
}

// clickAction type 3 opens the app's launcher activity.
type clickAction struct {
	Type int `json:"type"`
}

const clickOpenApp = 3

// encodeMessage encodes n as a send request with one empty token.
func encodeMessage(n push.Notification) ([]byte, error) {
	msg := sendRequest{Message: message{Token: []string{""}}}
	if len(n.Data) > 0 {
		b, err := json.Marshal(n.Data)
		if err != nil {
			return nil, err
		}
		msg.Message.Data = string(b)
	}
	o := n.Options
	a := &androidConfig{}
	switch o.Priority {
	case push.PriorityHigh:
		a.Urgency = "HIGH"
	case push.PriorityNormal:
		a.Urgency = "NORMAL"
	}
	if o.TTL != nil {
		a.TTL = strconv.FormatInt(max(int64(o.TTL.Seconds()), 0), 10) + "s"
	}
	if (n.Title != "" || n.Body != "") && !o.ContentAvailable {
		an := &androidNotification{
			Title:       n.Title,
			Body:        n.Body,
			Image:       o.ImageURL,
			Tag:         n.CollapseKey,
			ChannelID:   o.ChannelID,
			Importance:  a.Urgency,
			ClickAction: clickAction{Type: clickOpenApp},
		}
		if o.Sound == "" || o.Sound == "default" {
			an.DefaultSound = true
		} else {
			an.Sound = o.Sound
		}
		a.Notification = an
	}
	if *a != (androidConfig{}) {
		msg.Message.Android = a
	}
	return json.Marshal(msg)
}

// tokenPrefix is how every encoded message starts, up to its one token.
const tokenPrefix = `{"message":{"token":[`

// messageBody is the request body sending n to token: n encoded without a
// token (once for a prepared notification) with the token put in.
func messageBody(token string, n push.Notification) ([]byte, error) {
	tmpl, err := n.Encoded(providerName, func() ([]byte, error) { return encodeMessage(n) })
	if err != nil {
		return nil, err
	}
	rest, ok := bytes.CutPrefix(tmpl, []byte(tokenPrefix+`""`))
	if !ok {
		return nil, errors.New("hms: encoded message does not start with its token")
	}
	tok, err := json.Marshal(token)
	if err != nil {
		return nil, err
	}
	body := make([]byte, 0, len(tmpl)+len(tok))
	body = append(body, tokenPrefix...)
	body = append(body, tok...)
	return append(body, rest...), nil
}

// Send delivers n to t.Token. t.Platform is not inspected: routing is the
// caller's concern. An answer saying the access token expired or is not
// valid makes it fetch a new token (one fetch for all the sends that used
// the same token) and send once more.
func (c *Client) Send(ctx context.Context, t push.Target, n push.Notification) error {
	if t.Token == "" {
		return &push.Error{Kind: push.DeadToken, Provider: providerName, Reason: "EmptyToken"}
	}
	body, err := messageBody(t.Token, n)
	if err != nil {
		return &push.Error{Kind: push.Other, Provider: providerName, Reason: "InvalidData", Err: err}
	}
	stale := ""
	for attempt := 1; ; attempt++ {
		tok, err := c.tokens.get(ctx, stale)
		if err != nil {
			return err
		}
		err = c.post(ctx, tok, body, t.Token)
		// A fresh token refused too stays what it is: Fatal.
		if pe, ok := errors.AsType[*push.Error](err); !ok || !authRefused(pe) || attempt == 2 {
			return err
		}
		stale = tok
	}
}

// Check asks the token endpoint for an access token, as a first send
// would (and keeps it for the sends): nil means the client credentials
// were accepted. Nothing is sent. Its errors are Send's token errors:
// reason TOKEN_ENDPOINT, Fatal when refused (Status set), Retryable for
// 408/429/5xx and network errors.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.tokens.get(ctx, "")
	return err
}

// post sends one request; a nil error means Push Kit took the message.
func (c *Client) post(ctx context.Context, accessToken string, body []byte, deviceToken string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.sendURL, bytes.NewReader(body))
	if err != nil {
		return &push.Error{Kind: push.Fatal, Provider: providerName, Reason: "BadRequest", Err: err}
	}
	req.Header.Set("Content-Type", "application/json;charset=utf-8")
	req.Header.Set("Authorization", "Bearer "+accessToken)
	resp, err := c.httpClient.Do(req)
	if err != nil {
		return push.TransportError(ctx, providerName, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil && resp.StatusCode/100 == 2 {
		// The answer says whether it was sent; without it, we cannot tell.
		return push.TransportError(ctx, providerName, err)
	}
	if err := decodeResponse(resp.StatusCode, resp.Header, raw, deviceToken, time.Now()); err != nil {
		return err
	}
	return nil
}
