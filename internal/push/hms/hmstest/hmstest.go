// Package hmstest is an in-process fake of Huawei Push Kit: its OAuth 2.0
// token endpoint (client credentials) and its send API, on one plain HTTP
// server, for tests of code that sends through internal/push/hms.
//
// Typical use:
//
//	srv := hmstest.NewServer(t)
//	c, err := hms.New(hms.Config{AppID: srv.AppID, ClientSecret: srv.ClientSecret,
//		TokenURL: srv.TokenURL(), SendURL: srv.URL, HTTPClient: srv.Client()})
//	srv.Fail("dead-token", -1, hmstest.AllTokensInvalid())
//
// The fake checks the client credentials and the grant type, issues access
// tokens that expire (TokenLifetime), refuses sends with an unknown (HTTP
// 401, 80200001) or expired (HTTP 401, 80200003) access token, and checks
// each message strictly: unknown or mistyped fields, a missing or
// malformed click_action, bad urgency, importance or ttl values, a
// collapse_key that is not an integer in [-1, 100], token lists that are
// empty or longer than 1000, and bodies over 4096 bytes are refused with
// the result code Push Kit gives for them. All methods are safe for
// concurrent use.
//
// The HTTP statuses of the error answers are the fake's choice where
// Huawei's documentation does not pin them (it says 400 for a parameter
// error, 401 for failed authentication, 500 for an internal error, 503 for
// flow control); clients must classify by the result code first.
package hmstest

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/internal/fakeledger"
)

// Fault is a scripted Push Kit error answer.
type Fault struct {
	HTTPStatus int
	Code       string // result code, e.g. "80300007"; "" sends none
	Msg        string
	// IllegalToken makes the answer a partial success (80100000) whose msg
	// lists the device token among illegal_tokens, as Push Kit does for a
	// token it will not deliver to.
	IllegalToken bool
	// RetryAfter, when > 0, is sent as a Retry-After header in whole
	// seconds (rounded up).
	RetryAfter time.Duration
}

// AllTokensInvalid is Push Kit's answer when every token of the request
// is invalid (malformed, of another app, or gone).
func AllTokensInvalid() Fault {
	return Fault{HTTPStatus: 400, Code: "80300007", Msg: "All the tokens are invalid"}
}

// IllegalToken is a partial success naming the token as illegal.
func IllegalToken() Fault {
	return Fault{HTTPStatus: 200, Code: "80100000", IllegalToken: true}
}

// BadMessage is Push Kit's answer for an incorrect message structure.
func BadMessage() Fault {
	return Fault{HTTPStatus: 400, Code: "80100003", Msg: "Illegal payload"}
}

// NoPermission is the answer when the app may not send push messages.
func NoPermission() Fault {
	return Fault{HTTPStatus: 403, Code: "80300002", Msg: "The current app does not have the permission to send push messages"}
}

// BodyTooLarge is the answer for a message body over the size limit.
func BodyTooLarge() Fault {
	return Fault{HTTPStatus: 400, Code: "80300008", Msg: "The message body size exceeds the default value"}
}

// TooManyTokens is the answer for a token list empty or over the limit.
func TooManyTokens() Fault {
	return Fault{HTTPStatus: 400, Code: "80300010", Msg: "The number of tokens in the message body exceeds the default value"}
}

// OAuthFailed is the answer when Push Kit's OAuth service refuses the
// request.
func OAuthFailed() Fault {
	return Fault{HTTPStatus: 401, Code: "80600003", Msg: "Request OAuth service failed"}
}

// Internal is Push Kit's internal error.
func Internal(retryAfter time.Duration) Fault {
	return Fault{HTTPStatus: 500, Code: "81000001", Msg: "System internal error", RetryAfter: retryAfter}
}

// FlowControl is the traffic-control answer (HTTP 503, no result code).
func FlowControl(retryAfter time.Duration) Fault {
	return Fault{HTTPStatus: 503, Msg: "flow control", RetryAfter: retryAfter}
}

// TokenExpired is the answer for an expired access token.
func TokenExpired() Fault {
	return Fault{HTTPStatus: 401, Code: "80200003", Msg: "Oauth Token expired."}
}

// AuthError is the answer for an access token that is not valid.
func AuthError() Fault {
	return Fault{HTTPStatus: 401, Code: "80200001", Msg: "Oauth authentication error"}
}

// Message is one send the fake accepted.
type Message struct {
	AppID           string
	Token           string
	HasNotification bool // android.notification was set
	Title           string
	Body            string
	ClickActionType int
	Tag             string
	Importance      string
	Urgency         string
	TTL             string
	DefaultSound    bool
	Sound           string
	Image           string
	ChannelID       string
	Data            string // message.data as sent
	// Raw is the whole request body as decoded JSON.
	Raw map[string]any
}

// Option configures NewServer.
type Option func(*Server)

// TokenLifetime sets expires_in of the access tokens issued (rounded up to
// whole seconds; default one hour). The fake refuses a token once it is
// that old.
func TokenLifetime(d time.Duration) Option {
	return func(s *Server) { s.lifetime = max((d+time.Second-1)/time.Second, 1) * time.Second }
}

// TokenLatency makes the token endpoint take d to answer, so concurrent
// sends overlap their token requests.
func TokenLatency(d time.Duration) Option { return func(s *Server) { s.tokenLatency = d } }

type ledger = fakeledger.Ledger[Message, Fault]

// Server is the fake. URL is the base of the send API (the SendURL of
// hms.Config); the token endpoint is TokenURL().
type Server struct {
	URL          string
	AppID        string // also the client ID
	ClientSecret string

	*ledger
	srv          *httptest.Server
	lifetime     time.Duration
	tokenLatency time.Duration

	mu            sync.Mutex
	accessTokens  map[string]time.Time // token → expiry
	tokenFault    int
	tokenRequests int
	refused       int
}

// NewServer starts a fake closed by t.Cleanup, for app ID "10000001".
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := &Server{
		AppID:        "10000001",
		ClientSecret: "hmstest-secret-" + randomString(8),
		ledger: fakeledger.New(func(m Message) string { return m.Token }, func() Fault {
			return FlowControl(0)
		}),
		lifetime:     time.Hour,
		accessTokens: map[string]time.Time{},
	}
	for _, o := range opts {
		o(s)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /oauth2/v3/token", s.handleToken)
	mux.HandleFunc("POST /v1/{appId}/messages:send", s.handleSend)
	s.srv = httptest.NewUnstartedServer(mux)
	fakeledger.CountConnections(s.ledger, s.srv)
	s.srv.Start()
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// TokenURL is the fake's OAuth 2.0 token endpoint.
func (s *Server) TokenURL() string { return s.URL + "/oauth2/v3/token" }

// Client returns an HTTP client for the fake.
func (s *Server) Client() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
}

// SetTokenEndpointStatus makes the token endpoint answer status with an
// OAuth error body (0 restores normal operation).
func (s *Server) SetTokenEndpointStatus(status int) {
	s.mu.Lock()
	s.tokenFault = status
	s.mu.Unlock()
}

// ExpireAccessTokens makes every access token issued so far expired: sends
// with one are answered 80200003.
func (s *Server) ExpireAccessTokens() {
	s.mu.Lock()
	for tok := range s.accessTokens {
		s.accessTokens[tok] = time.Time{}
	}
	s.mu.Unlock()
}

// TokenRequests counts requests to the token endpoint.
func (s *Server) TokenRequests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokenRequests
}

// RefusedAccessTokens counts sends refused for their access token (unknown
// or expired), not counting scripted faults.
func (s *Server) RefusedAccessTokens() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.tokenRequests++
	fault := s.tokenFault
	s.mu.Unlock()
	if s.tokenLatency > 0 {
		time.Sleep(s.tokenLatency)
	}
	if fault != 0 {
		if fault == http.StatusServiceUnavailable || fault == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "3")
		}
		oauthError(w, fault, "server_error", "scripted token endpoint failure")
		return
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "content type "+ct)
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "client_credentials" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", gt)
		return
	}
	if r.PostForm.Get("client_id") != s.AppID || r.PostForm.Get("client_secret") != s.ClientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "invalid client secret")
		return
	}
	tok := "CgB6e3x9" + randomString(24)
	s.mu.Lock()
	s.accessTokens[tok] = time.Now().Add(s.lifetime)
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok,
		"expires_in":   int64(s.lifetime / time.Second),
		"token_type":   "Bearer",
	})
}

// sendBody mirrors the Push Kit request fields (those of Huawei's server
// demo); anything else is refused as an incorrect message structure.
type sendBody struct {
	ValidateOnly *bool `json:"validate_only"`
	Message      *struct {
		Data         *string `json:"data"`
		Notification *struct {
			Title string `json:"title"`
			Body  string `json:"body"`
			Image string `json:"image"`
		} `json:"notification"`
		Android   *androidConfig  `json:"android"`
		Apns      json.RawMessage `json:"apns"`
		WebPush   json.RawMessage `json:"webpush"`
		Token     []string        `json:"token"`
		Topic     string          `json:"topic"`
		Condition string          `json:"condition"`
	} `json:"message"`
}

type androidConfig struct {
	CollapseKey   *int                 `json:"collapse_key"`
	Urgency       string               `json:"urgency"`
	Category      string               `json:"category"`
	TTL           string               `json:"ttl"`
	BiTag         string               `json:"bi_tag"`
	FastAppTarget int                  `json:"fast_app_target"`
	Data          string               `json:"data"`
	Notification  *androidNotification `json:"notification"`
}

type androidNotification struct {
	Title             string          `json:"title"`
	Body              string          `json:"body"`
	Icon              string          `json:"icon"`
	Color             string          `json:"color"`
	Sound             string          `json:"sound"`
	DefaultSound      bool            `json:"default_sound"`
	Tag               string          `json:"tag"`
	ClickAction       *clickAction    `json:"click_action"`
	BodyLocKey        string          `json:"body_loc_key"`
	BodyLocArgs       []string        `json:"body_loc_args"`
	TitleLocKey       string          `json:"title_loc_key"`
	TitleLocArgs      []string        `json:"title_loc_args"`
	MultiLangKey      json.RawMessage `json:"multi_lang_key"`
	ChannelID         string          `json:"channel_id"`
	NotifySummary     string          `json:"notify_summary"`
	Image             string          `json:"image"`
	Style             int             `json:"style"`
	BigTitle          string          `json:"big_title"`
	BigBody           string          `json:"big_body"`
	AutoClear         int             `json:"auto_clear"`
	NotifyID          int             `json:"notify_id"`
	Group             string          `json:"group"`
	Badge             json.RawMessage `json:"badge"`
	Ticker            string          `json:"ticker"`
	AutoCancel        bool            `json:"auto_cancel"`
	When              string          `json:"when"`
	Importance        string          `json:"importance"`
	UseDefaultVibrate bool            `json:"use_default_vibrate"`
	UseDefaultLight   bool            `json:"use_default_light"`
	VibrateConfig     []string        `json:"vibrate_config"`
	Visibility        string          `json:"visibility"`
	LightSettings     json.RawMessage `json:"light_settings"`
	ForegroundShow    bool            `json:"foreground_show"`
}

type clickAction struct {
	Type         int    `json:"type"`
	Intent       string `json:"intent"`
	Action       string `json:"action"`
	URL          string `json:"url"`
	RichResource string `json:"rich_resource"`
}

// maxMessageBytes is Push Kit's message size limit (4 KB).
const maxMessageBytes = 4096

var ttlPattern = regexp.MustCompile(`^\d+(\.\d{1,9})?s$`)

func (s *Server) handleSend(w http.ResponseWriter, r *http.Request) {
	appID := r.PathValue("appId")
	bearer, hasBearer := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))

	s.mu.Lock()
	exp, known := s.accessTokens[bearer]
	authFault := (*Fault)(nil)
	switch {
	case !hasBearer || !known || appID != s.AppID:
		f := AuthError()
		authFault = &f
	case !time.Now().Before(exp):
		f := TokenExpired()
		authFault = &f
	}
	if authFault != nil {
		s.refused++
	}
	s.mu.Unlock()
	if authFault != nil {
		writeFault(w, *authFault, "")
		return
	}

	m, fault := parseMessage(raw)
	if fault != nil {
		writeFault(w, *fault, m.Token)
		return
	}
	m.AppID = appID
	if validateOnly(raw) {
		writeJSON(w, http.StatusOK, answer{Code: "80000000", Msg: "Success", RequestID: randomString(12)})
		return
	}
	f, _ := fakeledger.Send(s.ledger, m.Token, func() Message { return m })
	if f != nil {
		writeFault(w, *f, m.Token)
		return
	}
	writeJSON(w, http.StatusOK, answer{Code: "80000000", Msg: "Success", RequestID: randomString(12)})
}

func validateOnly(raw []byte) bool {
	var b struct {
		ValidateOnly bool `json:"validate_only"`
	}
	_ = json.Unmarshal(raw, &b)
	return b.ValidateOnly
}

// parseMessage checks a send request as Push Kit would and returns the
// message it carries, or the fault to answer with.
func parseMessage(raw []byte) (Message, *Fault) {
	fail := func(f Fault, msg string) (Message, *Fault) {
		f.Msg = msg
		return Message{}, &f
	}
	if len(raw) > maxMessageBytes {
		return fail(BodyTooLarge(), fmt.Sprintf("message body is %d bytes, over %d", len(raw), maxMessageBytes))
	}
	var b sendBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&b); err != nil {
		return fail(BadMessage(), "Illegal payload: "+err.Error())
	}
	if b.ValidateOnly == nil {
		return fail(BadMessage(), "validate_only is missing")
	}
	msg := b.Message
	if msg == nil || (len(msg.Token) == 0 && msg.Topic == "" && msg.Condition == "") {
		return fail(TooManyTokens(), "no token in the message")
	}
	if len(msg.Token) > 1000 {
		return fail(TooManyTokens(), "more than 1000 tokens")
	}
	if len(msg.Token) != 1 {
		// The fake only records single-token sends, which is all the client makes.
		return fail(BadMessage(), "hmstest: send to exactly one token")
	}
	m := Message{Token: msg.Token[0]}
	if m.Token == "" {
		return fail(AllTokensInvalid(), "All the tokens are invalid")
	}
	bad := func(why string) (Message, *Fault) {
		f := Fault{HTTPStatus: 400, Code: "80100001", Msg: why}
		return Message{Token: m.Token}, &f
	}
	if msg.Data != nil {
		m.Data = *msg.Data
	}
	if n := msg.Notification; n != nil {
		m.HasNotification, m.Title, m.Body, m.Image = true, n.Title, n.Body, n.Image
	}
	if a := msg.Android; a != nil {
		m.Urgency, m.TTL = a.Urgency, a.TTL
		if a.CollapseKey != nil && (*a.CollapseKey < -1 || *a.CollapseKey > 100) {
			return bad("collapse_key must be in [-1, 100]")
		}
		if a.Urgency != "" && a.Urgency != "HIGH" && a.Urgency != "NORMAL" {
			return bad("urgency must be HIGH or NORMAL")
		}
		if a.TTL != "" && !ttlPattern.MatchString(a.TTL) {
			return bad("malformed ttl " + strconv.Quote(a.TTL))
		}
		if an := a.Notification; an != nil {
			m.HasNotification = true
			if an.Title != "" {
				m.Title = an.Title
			}
			if an.Body != "" {
				m.Body = an.Body
			}
			if an.Image != "" {
				m.Image = an.Image
			}
			m.Tag, m.Importance, m.Sound, m.DefaultSound, m.ChannelID = an.Tag, an.Importance, an.Sound, an.DefaultSound, an.ChannelID
			if an.Importance != "" && an.Importance != "LOW" && an.Importance != "NORMAL" && an.Importance != "HIGH" {
				return bad("importance must be LOW, NORMAL or HIGH")
			}
			ca := an.ClickAction
			if ca == nil {
				return bad("click_action is mandatory in android.notification")
			}
			m.ClickActionType = ca.Type
			switch {
			case ca.Type < 1 || ca.Type > 4:
				return bad("click_action.type must be 1 to 4")
			case ca.Type == 1 && ca.Intent == "" && ca.Action == "":
				return bad("click_action type 1 needs intent or action")
			case ca.Type == 2 && ca.URL == "":
				return bad("click_action type 2 needs url")
			case ca.Type == 4 && ca.RichResource == "":
				return bad("click_action type 4 needs rich_resource")
			}
		}
	}
	var all map[string]any
	_ = json.Unmarshal(raw, &all)
	m.Raw = all
	return m, nil
}

type answer struct {
	Code      string `json:"code"`
	Msg       string `json:"msg"`
	RequestID string `json:"requestId"`
}

func writeFault(w http.ResponseWriter, f Fault, token string) {
	if f.RetryAfter > 0 {
		secs := (f.RetryAfter + time.Second - 1) / time.Second
		w.Header().Set("Retry-After", strconv.FormatInt(int64(secs), 10))
	}
	msg := f.Msg
	if f.IllegalToken {
		b, _ := json.Marshal(map[string]any{"success": 0, "failure": 1, "illegal_tokens": []string{token}})
		msg = string(b)
	}
	writeJSON(w, f.HTTPStatus, answer{Code: f.Code, Msg: msg, RequestID: randomString(12)})
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomString(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}
