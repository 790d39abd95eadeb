// Package httpsend delivers signed webhooks over HTTP: one POST per
// attempt, no redirect followed, at most webhooks.Timeout, the answer's
// body read to 64 KiB, and — unless private addresses are allowed — every
// connection refused when the address it dials is not public, checked on
// the resolved address at dial time so a DNS change after registration
// cannot point Herald at its own network.
package httpsend

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"syscall"
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// MaxResponseBody is how much of an answer's body is read.
const MaxResponseBody = 64 << 10

// UserAgent names Herald to receivers.
const UserAgent = "Herald-Webhooks/1"

// Sender implements webhooks.Sender.
type Sender struct {
	client *http.Client
	now    func() time.Time
}

// New returns a sender; allowPrivate lifts the address check
// (HERALD_WEBHOOKS_ALLOW_PRIVATE).
func New(allowPrivate bool) *Sender {
	d := &net.Dialer{Timeout: webhooks.Timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error { return webhooks.DialAllowed(address) }
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   webhooks.Timeout,
		ResponseHeaderTimeout: webhooks.Timeout,
	}
	return &Sender{
		client: &http.Client{
			Transport:     tr,
			Timeout:       webhooks.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now: time.Now,
	}
}

// Send implements webhooks.Sender.
func (s *Sender) Send(ctx context.Context, r webhooks.Request) (webhooks.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return webhooks.Response{}, err
	}
	// The spec's header names, written as it writes them.
	req.Header["content-type"] = []string{"application/json"}
	req.Header["user-agent"] = []string{UserAgent}
	req.Header["webhook-id"] = []string{r.Headers.ID}
	req.Header["webhook-timestamp"] = []string{r.Headers.Timestamp}
	req.Header["webhook-signature"] = []string{r.Headers.Signature}
	res, err := s.client.Do(req)
	if err != nil {
		return webhooks.Response{}, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, MaxResponseBody))
	return webhooks.Response{StatusCode: res.StatusCode, RetryAfter: retryAfter(res.Header.Get("Retry-After"), s.now())}, nil
}

// retryAfter reads Retry-After: seconds or an HTTP date; 0 when absent or
// unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

var _ webhooks.Sender = (*Sender)(nil)
