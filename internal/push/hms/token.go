package hms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// tokenSource keeps one OAuth 2.0 access token (client credentials) and
// fetches a new one ahead of its expiry; concurrent callers share one fetch.
type tokenSource struct {
	httpClient   *http.Client
	url          string
	clientID     string
	clientSecret string
	timeout      time.Duration // bounds one fetch
	now          func() time.Time

	mu       sync.Mutex
	token    string
	renewAt  time.Time  // when token is to be replaced
	inFlight *tokenCall // the fetch under way, nil when none
}

// maxTokenLifetime caps expires_in (seconds); Huawei's tokens last an hour.
const maxTokenLifetime = 24 * 60 * 60

type tokenCall struct {
	done  chan struct{}
	token string
	err   error
}

// refreshAhead is how long before its expiry a token of the given lifetime
// is replaced: a tenth of it, at most five minutes, so a send never goes
// out with a token about to lapse.
func refreshAhead(lifetime time.Duration) time.Duration {
	return min(lifetime/10, 5*time.Minute)
}

// get returns a valid access token. stale, when not empty, is a token the
// send API refused: if it is still the current one, it is dropped and a new
// one fetched (once, however many sends saw it refused).
func (s *tokenSource) get(ctx context.Context, stale string) (string, error) {
	s.mu.Lock()
	if stale != "" && s.token == stale {
		s.token = ""
	}
	if s.token != "" && s.now().Before(s.renewAt) {
		tok := s.token
		s.mu.Unlock()
		return tok, nil
	}
	call := s.inFlight
	if call == nil {
		call = &tokenCall{done: make(chan struct{})}
		s.inFlight = call
		// The fetch outlives a caller that gives up: others may wait for it.
		go s.fetch(context.WithoutCancel(ctx), call)
	}
	s.mu.Unlock()

	select {
	case <-call.done:
		return call.token, call.err
	case <-ctx.Done():
		return "", &push.Error{Kind: push.Other, Provider: providerName, Reason: "Canceled", Err: ctx.Err()}
	}
}

func (s *tokenSource) fetch(ctx context.Context, call *tokenCall) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	start := s.now()
	tok, lifetime, err := s.request(ctx)
	s.mu.Lock()
	if err == nil {
		s.token = tok
		s.renewAt = start.Add(lifetime - refreshAhead(lifetime))
	}
	s.inFlight = nil
	s.mu.Unlock()
	call.token, call.err = tok, err
	close(call.done)
}

// tokenAnswer is the token endpoint's JSON answer. On failure Huawei's
// OAuth server answers e.g. {"error":1101,"sub_error":20203,
// "error_description":"invalid client secret"}: error is a number there and
// a string in RFC 6749, so it is kept raw.
type tokenAnswer struct {
	AccessToken      string          `json:"access_token"`
	ExpiresIn        int64           `json:"expires_in"`
	TokenType        string          `json:"token_type"`
	Error            json.RawMessage `json:"error"`
	ErrorDescription string          `json:"error_description"`
}

// request asks the token endpoint for a token and its lifetime.
func (s *tokenSource) request(ctx context.Context) (string, time.Duration, error) {
	form := url.Values{
		"grant_type":    {"client_credentials"},
		"client_id":     {s.clientID},
		"client_secret": {s.clientSecret},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(form.Encode()))
	if err != nil {
		return "", 0, &push.Error{Kind: push.Fatal, Provider: providerName, Reason: "TOKEN_ENDPOINT", Err: err}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := s.httpClient.Do(req)
	if err != nil {
		// Not ctx: it is never cancelled (see get), and the fetch timing
		// out is a transient failure, not a caller giving up.
		pe := push.TransportError(context.Background(), providerName, err)
		pe.Reason = "TOKEN_ENDPOINT"
		return "", 0, pe
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	var ans tokenAnswer
	decodeErr := json.Unmarshal(raw, &ans)
	if resp.StatusCode == http.StatusOK && decodeErr == nil && ans.AccessToken != "" && ans.ExpiresIn > 0 {
		// Capped, so that a nonsensical lifetime cannot overflow.
		return ans.AccessToken, time.Duration(min(ans.ExpiresIn, maxTokenLifetime)) * time.Second, nil
	}
	pe := &push.Error{Kind: push.Fatal, Provider: providerName, Reason: "TOKEN_ENDPOINT", Status: resp.StatusCode}
	switch {
	case resp.StatusCode == http.StatusRequestTimeout || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		pe.Kind = push.Retryable
		pe.RetryAfter = push.ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
		pe.Err = errors.New(snippet(raw))
	case resp.StatusCode == http.StatusOK:
		// A 200 without a usable token: the endpoint is not what we think.
		pe.Err = errors.New("no access_token or expires_in in the answer")
	default:
		pe.Err = fmt.Errorf("error %s: %s", ans.Error, ans.ErrorDescription)
		if decodeErr != nil {
			pe.Err = errors.New(snippet(raw))
		}
	}
	return "", 0, pe
}

// snippet is the start of a body for an error message.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
