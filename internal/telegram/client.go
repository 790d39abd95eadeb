// Package telegram is a small Telegram Bot API client: the handful of
// methods Herald needs, error classification, Markdown to Telegram-HTML
// conversion and outgoing rate pacing.
package telegram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// DefaultAPIURL is the public Bot API endpoint.
const DefaultAPIURL = "https://api.telegram.org"

// Per-request budget for ordinary calls; getUpdates gets its long-poll
// timeout on top. Keeps a stuck connection from hanging a sender forever.
const requestTimeout = 30 * time.Second

// maxResponse bounds how much of a response body is read (100 updates fit
// comfortably).
const maxResponse = 16 << 20

// Client calls the Bot API. It is safe for concurrent use.
type Client struct {
	token string
	base  string // {apiURL}/bot{token}/ – contains the secret
	api   string // apiURL without the token, for String()
	hc    *http.Client
}

// New returns a client for the bot token. apiURL defaults to DefaultAPIURL
// and httpClient to a client without its own timeout (each call applies a
// deadline itself, long enough for GetUpdates' long poll). If you pass a
// client with Timeout set it must exceed the longest GetUpdates timeout.
func New(token, apiURL string, httpClient *http.Client) *Client {
	if apiURL == "" {
		apiURL = DefaultAPIURL
	}
	apiURL = strings.TrimRight(apiURL, "/")
	if httpClient == nil {
		httpClient = &http.Client{}
	}
	return &Client{
		token: token,
		base:  apiURL + "/bot" + token + "/",
		api:   apiURL,
		hc:    httpClient,
	}
}

// String keeps the token out of anything that prints the client.
func (c *Client) String() string { return "telegram.Client(" + c.api + ")" }

// GoString does the same for %#v.
func (c *Client) GoString() string { return c.String() }

// GetMe returns the bot's own user; a cheap way to check the token.
func (c *Client) GetMe(ctx context.Context) (User, error) {
	var u User
	err := c.call(ctx, "getMe", nil, &u, 0)
	return u, err
}

// GetWebhookInfo returns the current webhook registration.
func (c *Client) GetWebhookInfo(ctx context.Context) (WebhookInfo, error) {
	var w WebhookInfo
	err := c.call(ctx, "getWebhookInfo", nil, &w, 0)
	return w, err
}

// CheckResult is what Check learnt: the bot the token belongs to and
// where Telegram delivers its updates.
type CheckResult struct {
	Bot     User
	Webhook WebhookInfo
}

// Check proves the token (getMe) and reads the webhook registration
// (getWebhookInfo). It changes nothing.
func (c *Client) Check(ctx context.Context) (CheckResult, error) {
	var r CheckResult
	var err error
	if r.Bot, err = c.GetMe(ctx); err != nil {
		return r, err
	}
	r.Webhook, err = c.GetWebhookInfo(ctx)
	return r, err
}

// SetWebhook registers url (must be https) for update delivery. secretToken
// (1-256 of A-Z a-z 0-9 _ -) is echoed in SecretTokenHeader; "" sends none.
// A nil allowedUpdates keeps Telegram's previous setting.
func (c *Client) SetWebhook(ctx context.Context, url, secretToken string, allowedUpdates []string) error {
	p := map[string]any{"url": url}
	if secretToken != "" {
		p["secret_token"] = secretToken
	}
	if allowedUpdates != nil {
		p["allowed_updates"] = allowedUpdates
	}
	return c.call(ctx, "setWebhook", p, nil, 0)
}

// DeleteWebhook removes the webhook so GetUpdates can be used; with
// dropPendingUpdates the queued updates are discarded.
func (c *Client) DeleteWebhook(ctx context.Context, dropPendingUpdates bool) error {
	var p map[string]any
	if dropPendingUpdates {
		p = map[string]any{"drop_pending_updates": true}
	}
	return c.call(ctx, "deleteWebhook", p, nil, 0)
}

// GetUpdates long-polls for updates with update_id >= offset, waiting up to
// timeoutSec seconds. Pass the last seen update_id+1 as the next offset to
// confirm earlier ones. A nil allowedUpdates keeps the previous setting.
func (c *Client) GetUpdates(ctx context.Context, offset int64, timeoutSec int, allowedUpdates []string) ([]Update, error) {
	p := map[string]any{"timeout": timeoutSec}
	if offset != 0 {
		p["offset"] = offset
	}
	if allowedUpdates != nil {
		p["allowed_updates"] = allowedUpdates
	}
	var us []Update
	err := c.call(ctx, "getUpdates", p, &us, time.Duration(timeoutSec)*time.Second)
	return us, err
}

// SendMessage sends text to chatID (numeric id or "@channelusername").
func (c *Client) SendMessage(ctx context.Context, chatID, text string, opts SendOptions) (Message, error) {
	p := sendParams(chatID, opts)
	p["text"] = text
	var m Message
	err := c.call(ctx, "sendMessage", p, &m, 0)
	return m, err
}

// SendPhoto sends the photo at photoURL (Telegram fetches it) with an
// optional caption; opts.ParseMode applies to the caption.
func (c *Client) SendPhoto(ctx context.Context, chatID, photoURL, caption string, opts SendOptions) (Message, error) {
	return c.sendMedia(ctx, "sendPhoto", "photo", chatID, photoURL, caption, opts)
}

// SendDocument sends the file at documentURL with an optional caption.
func (c *Client) SendDocument(ctx context.Context, chatID, documentURL, caption string, opts SendOptions) (Message, error) {
	return c.sendMedia(ctx, "sendDocument", "document", chatID, documentURL, caption, opts)
}

// sendMedia calls a send method that takes a file URL in field and an
// optional caption.
func (c *Client) sendMedia(ctx context.Context, method, field, chatID, url, caption string, opts SendOptions) (Message, error) {
	p := sendParams(chatID, opts)
	p[field] = url
	if caption != "" {
		p["caption"] = caption
	}
	var m Message
	err := c.call(ctx, method, p, &m, 0)
	return m, err
}

func sendParams(chatID string, opts SendOptions) map[string]any {
	p := map[string]any{"chat_id": chatIDValue(chatID)}
	if opts.ParseMode != "" {
		p["parse_mode"] = opts.ParseMode
	}
	if opts.DisableNotification {
		p["disable_notification"] = true
	}
	if opts.ReplyMarkup != nil {
		p["reply_markup"] = opts.ReplyMarkup
	}
	return p
}

// chatIDValue sends numeric ids as JSON numbers (Telegram's documented
// type) and anything else, e.g. "@channel", as a string.
func chatIDValue(id string) any {
	if n, err := strconv.ParseInt(strings.TrimSpace(id), 10, 64); err == nil {
		return n
	}
	return id
}

type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters"`
}

// call POSTs params as a JSON object to method ("{}" when there are none)
// and decodes result into out (if non-nil). extra lengthens the deadline
// for long polls.
func (c *Client) call(ctx context.Context, method string, params map[string]any, out any, extra time.Duration) error {
	body := []byte("{}")
	if len(params) > 0 {
		var err error
		if body, err = json.Marshal(params); err != nil {
			return fmt.Errorf("telegram %s: encode request: %w", method, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout+extra)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, bytes.NewReader(body))
	if err != nil {
		return c.transportError(method, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.transportError(method, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return c.transportError(method, err)
	}

	var r apiResponse
	if err := json.Unmarshal(raw, &r); err != nil || (!r.OK && r.ErrorCode == 0) {
		// Not a Bot API answer, e.g. an HTML page from a proxy.
		return &APIError{Method: method, Code: resp.StatusCode,
			Description: "unexpected response: " + resp.Status}
	}
	if !r.OK {
		e := &APIError{Method: method, Code: r.ErrorCode, Description: r.Description}
		if r.Parameters != nil {
			e.RetryAfter = time.Duration(r.Parameters.RetryAfter) * time.Second
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("telegram %s: decode result: %w", method, err)
	}
	return nil
}

// transportError wraps a failure to talk to the API. net/http errors embed
// the request URL, which contains the token, so it is scrubbed here and
// the original error is not kept in the chain.
func (c *Client) transportError(method string, err error) error {
	msg := err.Error()
	if c.token != "" {
		msg = strings.ReplaceAll(msg, c.token, "<redacted>")
	}
	ne := &NetworkError{Method: method, msg: msg}
	switch {
	case errors.Is(err, context.Canceled):
		ne.cause = context.Canceled
	case errors.Is(err, context.DeadlineExceeded):
		ne.cause = context.DeadlineExceeded
	}
	return ne
}
