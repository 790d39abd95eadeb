// Package telegramtest provides an in-process fake of the Telegram Bot API
// for tests: it speaks Telegram's JSON shapes, validates HTML parse mode
// like Telegram, long-polls getUpdates and can inject per-chat failures.
package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/herald-vpn/herald/internal/telegram"
)

// SentMessage is one successfully delivered send* call.
type SentMessage struct {
	Method              string // sendMessage, sendPhoto or sendDocument
	ChatID              string // as given: "12345", "-100…" or "@channel"
	MessageID           int64
	Text                string // sendMessage text, raw as sent
	Caption             string // sendPhoto/sendDocument caption, raw as sent
	Visible             string // text or caption after entity parsing
	ParseMode           string
	DisableNotification bool
	ReplyMarkup         *telegram.InlineKeyboardMarkup
	PhotoURL            string
	DocumentURL         string
	At                  time.Time // when the fake received the call
}

// Failure is an error answer to inject.
type Failure struct {
	Code        int
	Description string
	RetryAfter  int // seconds, sent as parameters.retry_after when > 0
	Times       int // number of calls to fail; 0 means until cleared
}

// Ready-made failures with Telegram's exact wording. They are functions
// so tests cannot mutate shared values.
func FailChatNotFound() Failure {
	return Failure{Code: 400, Description: "Bad Request: chat not found"}
}

func FailBlocked() Failure {
	return Failure{Code: 403, Description: "Forbidden: bot was blocked by the user"}
}

func FailDeactivated() Failure {
	return Failure{Code: 403, Description: "Forbidden: user is deactivated"}
}

func FailKicked() Failure {
	return Failure{Code: 403, Description: "Forbidden: bot was kicked from the supergroup chat"}
}

func FailParse() Failure {
	return Failure{Code: 400, Description: `Bad Request: can't parse entities: Unsupported start tag "x" at byte offset 0`}
}

func FailTooLong() Failure {
	return Failure{Code: 400, Description: "Bad Request: message is too long"}
}

func FailServer() Failure { return Failure{Code: 500, Description: "Internal Server Error"} }

func FailConflict() Failure {
	return Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"}
}

// FailRateLimited is a 429 asking to retry after the given seconds.
func FailRateLimited(retryAfter int) Failure {
	return Failure{Code: 429, Description: fmt.Sprintf("Too Many Requests: retry after %d", retryAfter), RetryAfter: retryAfter}
}

// Poll is one getUpdates call as the fake saw it.
type Poll struct {
	Start time.Time // when the request arrived
	End   time.Time // when it was answered or its client went away; zero while pending
	// Concurrent is how many getUpdates calls (this one included) were in
	// flight when this one arrived: more than 1 means two pollers at once.
	Concurrent int
}

// Webhook is the registration made through setWebhook.
type Webhook struct {
	URL            string
	SecretToken    string
	AllowedUpdates []string
}

// Server is a fake Bot API. Create it with NewServer; it closes itself when
// the test ends.
type Server struct {
	URL   string // pass as apiURL to telegram.New
	token string
	srv   *httptest.Server

	closeOnce sync.Once
	closed    chan struct{} // ends pending long polls so Close doesn't hang

	mu           sync.Mutex
	me           telegram.User
	queue        []telegram.Update
	nextUpdateID int64
	wake         chan struct{} // closed and replaced whenever an update is queued
	sent         []SentMessage
	nextMsgID    int64
	chatFail     map[string]*Failure
	methodFail   map[string]*Failure
	webhook      Webhook
	hookErrDate  int64
	hookErrMsg   string
	calls        map[string]int
	channelIDs   map[string]int64
	polls        []Poll
	polling      int // getUpdates calls in flight
	maxPolling   int
}

var methods = []string{"getMe", "getWebhookInfo", "setWebhook", "deleteWebhook", "getUpdates",
	"sendMessage", "sendPhoto", "sendDocument"}

// NewServer starts a fake for the given bot token ("123456:ABC…"); the bot's
// user id is the number before the colon when there is one.
func NewServer(t testing.TB, token string) *Server {
	t.Helper()
	id, err := strconv.ParseInt(strings.SplitN(token, ":", 2)[0], 10, 64)
	if err != nil || id <= 0 {
		id = 1000001
	}
	s := &Server{
		token:        token,
		closed:       make(chan struct{}),
		me:           telegram.User{ID: id, IsBot: true, FirstName: "Herald Test", Username: "herald_test_bot"},
		nextUpdateID: 1,
		wake:         make(chan struct{}),
		chatFail:     map[string]*Failure{},
		methodFail:   map[string]*Failure{},
		calls:        map[string]int{},
		channelIDs:   map[string]int64{},
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.handle))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, releasing any pending long polls.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closed)
		s.srv.Close()
	})
}

// Client returns a telegram.Client for this server using its token.
func (s *Server) Client() *telegram.Client {
	return telegram.New(s.token, s.URL, s.srv.Client())
}

// Me returns the bot user getMe answers with.
func (s *Server) Me() telegram.User {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.me
}

// PushUpdate queues u for getUpdates, assigning the next update_id if
// u.UpdateID is 0, and returns the id used.
func (s *Server) PushUpdate(u telegram.Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.UpdateID == 0 {
		u.UpdateID = s.nextUpdateID
	}
	if u.UpdateID >= s.nextUpdateID {
		s.nextUpdateID = u.UpdateID + 1
	}
	s.queue = append(s.queue, u)
	close(s.wake)
	s.wake = make(chan struct{})
	return u.UpdateID
}

// PushText queues a private-chat text message from user chatID (e.g.
// "/start payload") and returns its update_id.
func (s *Server) PushText(chatID int64, text string) int64 {
	s.mu.Lock()
	s.nextMsgID++
	m := &telegram.Message{
		MessageID: s.nextMsgID,
		From:      &telegram.User{ID: chatID, FirstName: "Test", Username: "user" + strconv.FormatInt(chatID, 10)},
		Chat:      telegram.Chat{ID: chatID, Type: "private", FirstName: "Test", Username: "user" + strconv.FormatInt(chatID, 10)},
		Date:      time.Now().Unix(),
		Text:      text,
	}
	s.mu.Unlock()
	return s.PushUpdate(telegram.Update{Message: m})
}

// Sent returns the messages delivered so far, oldest first.
func (s *Server) Sent() []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]SentMessage(nil), s.sent...)
}

// SentTo returns the messages delivered to chatID (as the client passed
// it), oldest first.
func (s *Server) SentTo(chatID string) []SentMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SentMessage
	for _, m := range s.sent {
		if m.ChatID == chatID {
			out = append(out, m)
		}
	}
	return out
}

// FailChat makes send calls to chatID (as the client passes it, e.g.
// "12345" or "@channel") answer with f.
func (s *Server) FailChat(chatID string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatFail[chatID] = &f
}

// FailMethod makes calls to method (e.g. "getUpdates") answer with f.
func (s *Server) FailMethod(method string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.methodFail[canonical(method)] = &f
}

// ClearFailures removes all injected failures.
func (s *Server) ClearFailures() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chatFail = map[string]*Failure{}
	s.methodFail = map[string]*Failure{}
}

// Webhook returns the current webhook registration (zero if none).
func (s *Server) Webhook() Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.webhook
	w.AllowedUpdates = append([]string(nil), w.AllowedUpdates...)
	return w
}

// SetWebhookError sets the last delivery error getWebhookInfo reports.
func (s *Server) SetWebhookError(at time.Time, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hookErrDate, s.hookErrMsg = at.Unix(), msg
}

// Polls returns every getUpdates call so far (answered with updates, with
// nothing, or with an error), in arrival order.
func (s *Server) Polls() []Poll {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Poll(nil), s.polls...)
}

// PollsInFlight counts getUpdates calls not yet answered.
func (s *Server) PollsInFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polling
}

// MaxConcurrentPolls is the largest number of getUpdates calls that were in
// flight at the same moment; Telegram allows one (a second one makes it
// answer 409 Conflict), so more than 1 means two pollers ran at once.
func (s *Server) MaxConcurrentPolls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.maxPolling
}

// Calls returns how many requests reached method, including failed ones.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[canonical(method)]
}

func canonical(method string) string {
	for _, m := range methods {
		if strings.EqualFold(m, method) {
			return m
		}
	}
	return method
}

// takeFailure returns a pending failure from m and consumes one use.
// Caller holds mu.
func takeFailure(m map[string]*Failure, key string) *Failure {
	f, ok := m[key]
	if !ok {
		return nil
	}
	if f.Times > 0 {
		f.Times--
		if f.Times == 0 {
			delete(m, key)
		}
	}
	return f
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	slash := strings.LastIndexByte(rest, '/')
	if !ok || slash < 0 {
		writeErr(w, 404, "Not Found", 0)
		return
	}
	token, method := rest[:slash], canonical(rest[slash+1:])
	if token != s.token {
		writeErr(w, 401, "Unauthorized", 0)
		return
	}
	known := false
	for _, m := range methods {
		known = known || m == method
	}
	if !known {
		writeErr(w, 404, "Not Found", 0)
		return
	}
	p, err := readParams(r)
	if err != nil {
		writeErr(w, 400, "Bad Request: "+err.Error(), 0)
		return
	}

	s.mu.Lock()
	s.calls[method]++
	if method == "getUpdates" {
		s.polling++
		s.maxPolling = max(s.maxPolling, s.polling)
		i := len(s.polls)
		s.polls = append(s.polls, Poll{Start: time.Now(), Concurrent: s.polling})
		defer func() {
			s.mu.Lock()
			s.polling--
			s.polls[i].End = time.Now()
			s.mu.Unlock()
		}()
	}
	f := takeFailure(s.methodFail, method)
	s.mu.Unlock()
	if f != nil {
		writeErr(w, f.Code, f.Description, f.RetryAfter)
		return
	}

	switch method {
	case "getMe":
		writeOK(w, s.Me(), "")
	case "getWebhookInfo":
		s.getWebhookInfo(w)
	case "setWebhook":
		s.setWebhook(w, p)
	case "deleteWebhook":
		s.mu.Lock()
		had := s.webhook.URL != ""
		s.webhook = Webhook{}
		if p.bool("drop_pending_updates") {
			s.queue = nil
		}
		s.mu.Unlock()
		desc := "Webhook is already deleted"
		if had {
			desc = "Webhook was deleted"
		}
		writeOK(w, true, desc)
	case "getUpdates":
		s.getUpdates(w, r, p)
	default:
		s.send(w, method, p)
	}
}

func (s *Server) getWebhookInfo(w http.ResponseWriter) {
	s.mu.Lock()
	info := telegram.WebhookInfo{
		URL:                s.webhook.URL,
		PendingUpdateCount: len(s.queue),
		LastErrorDate:      s.hookErrDate,
		LastErrorMessage:   s.hookErrMsg,
		AllowedUpdates:     append([]string(nil), s.webhook.AllowedUpdates...),
	}
	if info.URL != "" {
		info.MaxConnections = 40
	}
	s.mu.Unlock()
	writeOK(w, info, "")
}

func (s *Server) setWebhook(w http.ResponseWriter, p params) {
	url := p.str("url")
	secret := p.str("secret_token")
	if url != "" && !strings.HasPrefix(strings.ToLower(url), "https://") {
		writeErr(w, 400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook", 0)
		return
	}
	if len(secret) > 256 || strings.IndexFunc(secret, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}) >= 0 {
		writeErr(w, 400, "Bad Request: secret token contains unallowed characters", 0)
		return
	}
	var allowed []string
	if raw, ok := p["allowed_updates"]; ok {
		if err := unmarshalMaybeString(raw, &allowed); err != nil {
			writeErr(w, 400, "Bad Request: can't parse allowed updates JSON object", 0)
			return
		}
	}
	s.mu.Lock()
	if url == "" {
		s.webhook = Webhook{}
	} else {
		if _, ok := p["allowed_updates"]; !ok {
			allowed = s.webhook.AllowedUpdates // Telegram keeps the previous list
		}
		s.webhook = Webhook{URL: url, SecretToken: secret, AllowedUpdates: allowed}
	}
	if p.bool("drop_pending_updates") {
		s.queue = nil
	}
	s.mu.Unlock()
	if url == "" {
		writeOK(w, true, "Webhook was deleted")
		return
	}
	writeOK(w, true, "Webhook was set")
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p params) {
	offset := p.int("offset")
	limit := int(p.int("limit"))
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	timeout := time.Duration(p.int("timeout")) * time.Second
	var allowed []string
	if raw, ok := p["allowed_updates"]; ok {
		_ = unmarshalMaybeString(raw, &allowed)
	}
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		s.mu.Lock()
		if s.webhook.URL != "" {
			s.mu.Unlock()
			writeErr(w, 409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first", 0)
			return
		}
		if offset > 0 {
			// Like Telegram, an offset confirms and forgets earlier updates.
			kept := s.queue[:0]
			for _, u := range s.queue {
				if u.UpdateID >= offset {
					kept = append(kept, u)
				}
			}
			s.queue = kept
		}
		out := []telegram.Update{}
		for _, u := range s.queue {
			if len(out) == limit {
				break
			}
			if wanted(u, allowed) {
				out = append(out, u)
			}
		}
		wake := s.wake
		s.mu.Unlock()

		if len(out) > 0 || timer == nil {
			writeOK(w, out, "")
			return
		}
		select {
		case <-wake:
		case <-timer:
			timer = nil // answer with whatever is there now, possibly nothing
		case <-s.closed:
			timer = nil
		case <-r.Context().Done():
			return
		}
	}
}

func wanted(u telegram.Update, allowed []string) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, a := range allowed {
		if a == telegram.UpdateMessage && u.Message != nil ||
			a == telegram.UpdateMyChatMember && u.MyChatMember != nil {
			return true
		}
	}
	return false
}

func (s *Server) send(w http.ResponseWriter, method string, p params) {
	chatID := p.str("chat_id")
	if chatID == "" {
		writeErr(w, 400, "Bad Request: chat_id is empty", 0)
		return
	}
	s.mu.Lock()
	f := takeFailure(s.chatFail, chatID)
	s.mu.Unlock()
	if f != nil {
		writeErr(w, f.Code, f.Description, f.RetryAfter)
		return
	}

	sm := SentMessage{At: time.Now(), Method: method, ChatID: chatID, ParseMode: p.str("parse_mode"),
		DisableNotification: p.bool("disable_notification")}
	body := ""
	switch method {
	case "sendMessage":
		sm.Text = p.str("text")
		body = sm.Text
	case "sendPhoto":
		sm.PhotoURL, sm.Caption = p.str("photo"), p.str("caption")
		body = sm.Caption
		if sm.PhotoURL == "" {
			writeErr(w, 400, "Bad Request: there is no photo in the request", 0)
			return
		}
	case "sendDocument":
		sm.DocumentURL, sm.Caption = p.str("document"), p.str("caption")
		body = sm.Caption
		if sm.DocumentURL == "" {
			writeErr(w, 400, "Bad Request: there is no document in the request", 0)
			return
		}
	}

	visible := body
	switch strings.ToLower(sm.ParseMode) {
	case "":
	case "html":
		v, err := ValidateHTML(body)
		if err != nil {
			writeErr(w, 400, "Bad Request: can't parse entities: "+err.Error(), 0)
			return
		}
		visible = v
	case "markdown", "markdownv2":
		// Accepted but not validated; Herald only sends HTML.
	default:
		writeErr(w, 400, "Bad Request: unsupported parse_mode", 0)
		return
	}
	sm.Visible = visible
	n := len(utf16.Encode([]rune(visible)))
	if method == "sendMessage" {
		if strings.TrimSpace(visible) == "" {
			writeErr(w, 400, "Bad Request: message text is empty", 0)
			return
		}
		if n > telegram.MaxMessageLen {
			writeErr(w, 400, "Bad Request: message is too long", 0)
			return
		}
	} else if n > telegram.MaxCaptionLen {
		writeErr(w, 400, "Bad Request: message caption is too long", 0)
		return
	}

	if raw, ok := p["reply_markup"]; ok {
		var mk telegram.InlineKeyboardMarkup
		if err := unmarshalMaybeString(raw, &mk); err != nil {
			writeErr(w, 400, "Bad Request: can't parse reply keyboard markup JSON object", 0)
			return
		}
		for _, row := range mk.InlineKeyboard {
			for _, b := range row {
				if msg := checkButton(b); msg != "" {
					writeErr(w, 400, msg, 0)
					return
				}
			}
		}
		sm.ReplyMarkup = &mk
	}

	s.mu.Lock()
	s.nextMsgID++
	sm.MessageID = s.nextMsgID
	msg := telegram.Message{
		MessageID: sm.MessageID,
		Chat:      s.chatFor(chatID),
		Date:      time.Now().Unix(),
	}
	if method == "sendMessage" {
		msg.Text = visible
	} else {
		msg.Caption = visible
	}
	me := s.me
	msg.From = &me
	s.sent = append(s.sent, sm)
	s.mu.Unlock()
	writeOK(w, msg, "")
}

func checkButton(b telegram.InlineKeyboardButton) string {
	if b.Text == "" {
		return "Bad Request: can't parse inline keyboard button: Text must be non-empty"
	}
	if b.URL == "" {
		return "Bad Request: can't parse inline keyboard button: Text buttons are unallowed in the inline keyboard"
	}
	u := strings.ToLower(b.URL)
	if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "tg://") {
		return fmt.Sprintf("Bad Request: inline keyboard button URL '%s' is invalid: Unsupported URL protocol", b.URL)
	}
	return ""
}

// chatFor builds the chat object Telegram would echo. Caller holds mu.
func (s *Server) chatFor(chatID string) telegram.Chat {
	if id, err := strconv.ParseInt(chatID, 10, 64); err == nil {
		switch {
		case id > 0:
			return telegram.Chat{ID: id, Type: "private", FirstName: "Test"}
		case strings.HasPrefix(chatID, "-100"):
			return telegram.Chat{ID: id, Type: "supergroup", Title: "Test Group"}
		default:
			return telegram.Chat{ID: id, Type: "group", Title: "Test Group"}
		}
	}
	name := strings.TrimPrefix(chatID, "@")
	id, ok := s.channelIDs[name]
	if !ok {
		id = -1001000000000 - int64(len(s.channelIDs)+1)
		s.channelIDs[name] = id
	}
	return telegram.Chat{ID: id, Type: "channel", Title: name, Username: name}
}

// params holds request parameters as raw JSON values, whichever encoding
// (JSON body, form, query string) the client used.
type params map[string]json.RawMessage

func readParams(r *http.Request) (params, error) {
	p := params{}
	for k, v := range r.URL.Query() {
		p[k], _ = json.Marshal(v[0])
	}
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
		if err != nil {
			return nil, err
		}
		if len(strings.TrimSpace(string(body))) > 0 {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				return nil, fmt.Errorf("can't parse JSON object")
			}
			for k, v := range m {
				p[k] = v
			}
		}
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"), strings.HasPrefix(ct, "multipart/form-data"):
		if err := r.ParseMultipartForm(10 << 20); err != nil && err != http.ErrNotMultipart {
			return nil, err
		}
		for k, v := range r.PostForm {
			p[k], _ = json.Marshal(v[0])
		}
	}
	return p, nil
}

// str returns a parameter as text; numbers come back as their literal.
func (p params) str(k string) string {
	raw, ok := p[k]
	if !ok || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func (p params) bool(k string) bool {
	v := p.str(k)
	return v == "true" || v == "1" || v == "True"
}

func (p params) int(k string) int64 {
	n, _ := strconv.ParseInt(p.str(k), 10, 64)
	return n
}

// unmarshalMaybeString decodes raw, which form-encoded clients send as a
// JSON document inside a string.
func unmarshalMaybeString(raw json.RawMessage, v any) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return json.Unmarshal([]byte(s), v)
	}
	return json.Unmarshal(raw, v)
}

type envelope struct {
	OK          bool   `json:"ok"`
	Result      any    `json:"result,omitempty"`
	Description string `json:"description,omitempty"`
	ErrorCode   int    `json:"error_code,omitempty"`
	Parameters  *struct {
		RetryAfter int `json:"retry_after"`
	} `json:"parameters,omitempty"`
}

func writeOK(w http.ResponseWriter, result any, desc string) {
	writeJSON(w, 200, envelope{OK: true, Result: result, Description: desc})
}

func writeErr(w http.ResponseWriter, code int, desc string, retryAfter int) {
	e := envelope{OK: false, ErrorCode: code, Description: desc}
	if retryAfter > 0 {
		e.Parameters = &struct {
			RetryAfter int `json:"retry_after"`
		}{retryAfter}
	}
	writeJSON(w, code, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
