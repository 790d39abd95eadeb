package telegram_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const token = "123456:AAH-secret-token_xyz"

func newFake(t *testing.T) (*telegramtest.Server, *telegram.Client) {
	t.Helper()
	s := telegramtest.NewServer(t, token)
	return s, telegram.New(token, s.URL, nil)
}

func TestGetMe(t *testing.T) {
	s, c := newFake(t)
	u, err := c.GetMe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != 123456 || !u.IsBot || u.Username != "herald_test_bot" || u.FirstName == "" {
		t.Fatalf("GetMe = %+v", u)
	}
	if s.Calls("getMe") != 1 {
		t.Fatalf("calls = %d", s.Calls("getMe"))
	}
}

func TestWebhookLifecycle(t *testing.T) {
	s, c := newFake(t)
	ctx := context.Background()
	allowed := []string{telegram.UpdateMessage, telegram.UpdateMyChatMember}
	if err := c.SetWebhook(ctx, "https://herald.example/tg/hook", "s3cret_tok-en", allowed); err != nil {
		t.Fatal(err)
	}
	wh := s.Webhook()
	if wh.URL != "https://herald.example/tg/hook" || wh.SecretToken != "s3cret_tok-en" ||
		strings.Join(wh.AllowedUpdates, ",") != "message,my_chat_member" {
		t.Fatalf("webhook = %+v", wh)
	}

	s.PushText(42, "hi")
	at := time.Unix(1700000000, 0)
	s.SetWebhookError(at, "Wrong response from the webhook: 502 Bad Gateway")
	info, err := c.GetWebhookInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.URL != wh.URL || info.PendingUpdateCount != 1 || info.LastErrorDate != at.Unix() ||
		info.LastErrorMessage != "Wrong response from the webhook: 502 Bad Gateway" || len(info.AllowedUpdates) != 2 {
		t.Fatalf("info = %+v", info)
	}

	// Polling while a webhook is set is a conflict, as on Telegram.
	_, err = c.GetUpdates(ctx, 0, 0, nil)
	if k := telegram.Classify(err); k != telegram.Conflict {
		t.Fatalf("GetUpdates with webhook: kind %v, err %v", k, err)
	}

	if err := c.DeleteWebhook(ctx, true); err != nil {
		t.Fatal(err)
	}
	if s.Webhook().URL != "" {
		t.Fatal("webhook still set")
	}
	if info, _ := c.GetWebhookInfo(ctx); info.URL != "" || info.PendingUpdateCount != 0 {
		t.Fatalf("after delete: %+v", info)
	}

	// Telegram insists on HTTPS and a restricted secret alphabet.
	if err := c.SetWebhook(ctx, "http://insecure.example/", "", nil); err == nil {
		t.Fatal("http webhook accepted")
	}
	if err := c.SetWebhook(ctx, "https://ok.example/", "bad secret!", nil); err == nil {
		t.Fatal("bad secret accepted")
	}
	if s.Calls("setWebhook") != 3 || s.Calls("deleteWebhook") != 1 {
		t.Fatalf("calls set=%d delete=%d", s.Calls("setWebhook"), s.Calls("deleteWebhook"))
	}
}

func TestGetUpdatesOffsetAndFilter(t *testing.T) {
	s, c := newFake(t)
	ctx := context.Background()
	id1 := s.PushText(42, "/start@herald_test_bot ref_abc")
	id2 := s.PushUpdate(telegram.Update{MyChatMember: &telegram.ChatMemberUpdated{
		Chat:          telegram.Chat{ID: 42, Type: "private"},
		From:          telegram.User{ID: 42, FirstName: "Ann"},
		NewChatMember: telegram.ChatMember{Status: "kicked"},
	}})

	us, err := c.GetUpdates(ctx, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(us) != 2 || us[0].UpdateID != id1 || us[1].UpdateID != id2 {
		t.Fatalf("updates = %+v", us)
	}
	m := us[0].Message
	if m == nil || m.Chat.ID != 42 || m.Chat.Type != "private" || m.From == nil || m.Date == 0 {
		t.Fatalf("message = %+v", m)
	}
	if cmd, payload := telegram.ParseCommand(m.Text); cmd != "start" || payload != "ref_abc" {
		t.Fatalf("ParseCommand = %q %q", cmd, payload)
	}
	if us[1].MyChatMember.NewChatMember.Status != "kicked" {
		t.Fatalf("my_chat_member = %+v", us[1].MyChatMember)
	}

	only, err := c.GetUpdates(ctx, 0, 0, []string{telegram.UpdateMyChatMember})
	if err != nil || len(only) != 1 || only[0].UpdateID != id2 {
		t.Fatalf("filtered = %+v, %v", only, err)
	}

	// Passing last+1 confirms everything before it.
	us, err = c.GetUpdates(ctx, id2+1, 0, nil)
	if err != nil || len(us) != 0 {
		t.Fatalf("after confirm = %+v, %v", us, err)
	}
	if info, _ := c.GetWebhookInfo(ctx); info.PendingUpdateCount != 0 {
		t.Fatalf("pending = %d", info.PendingUpdateCount)
	}
}

// waitCalls blocks until the fake has seen n calls to method; it orders
// the test's steps without asserting anything about elapsed time (the
// bound is for calls that never come).
func waitCalls(t *testing.T, s *telegramtest.Server, method string, n int) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for s.Calls(method) < n {
		if time.Now().After(deadline) {
			t.Fatalf("after %s the fake has seen %d calls to %s, want %d", waitBound, s.Calls(method), method, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// waitBound bounds every wait for something that should happen at once.
const waitBound = 10 * time.Second

func TestGetUpdatesLongPoll(t *testing.T) {
	s, c := newFake(t)
	type result struct {
		us  []telegram.Update
		err error
	}
	done := make(chan result, 1)
	go func() {
		us, err := c.GetUpdates(context.Background(), 0, 60, nil)
		done <- result{us, err}
	}()
	waitCalls(t, s, "getUpdates", 1)
	id := s.PushText(7, "hello")
	r := testsupport.Receive(t, done, waitBound, "the long poll's answer to a pushed update")
	if r.err != nil || len(r.us) != 1 || r.us[0].UpdateID != id || r.us[0].Message.Text != "hello" {
		t.Fatalf("long poll = %+v, %v", r.us, r.err)
	}
}

func TestGetUpdatesCancel(t *testing.T) {
	s, c := newFake(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.GetUpdates(ctx, 0, 60, nil)
		done <- err
	}()
	waitCalls(t, s, "getUpdates", 1)
	cancel()
	err := testsupport.Receive(t, done, waitBound, "the cancelled long poll's return")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if k := telegram.Classify(err); k != telegram.Other {
		t.Fatalf("cancelled call classified %v", k)
	}
	if strings.Contains(err.Error(), token) {
		t.Fatalf("token leaked: %v", err)
	}
}

func TestSendMethods(t *testing.T) {
	s, c := newFake(t)
	ctx := context.Background()
	kb := &telegram.InlineKeyboardMarkup{InlineKeyboard: [][]telegram.InlineKeyboardButton{
		{{Text: "Renew", URL: "https://herald.example/renew"}},
		{{Text: "Help", URL: "tg://resolve?domain=herald_support"}, {Text: "Site", URL: "https://herald.example"}},
	}}
	text, mode := telegram.FormatMarkdown("**Renew** now: 4.99 (50% off!)")
	m, err := c.SendMessage(ctx, "42", text, telegram.SendOptions{
		ParseMode: mode, DisableNotification: true, ReplyMarkup: kb})
	if err != nil {
		t.Fatal(err)
	}
	if m.MessageID == 0 || m.Chat.ID != 42 || m.Text != "Renew now: 4.99 (50% off!)" {
		t.Fatalf("message = %+v", m)
	}

	p, err := c.SendPhoto(ctx, "@herald_news", "https://cdn.example/p.png", "<b>New</b> servers", telegram.SendOptions{ParseMode: "HTML"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Chat.Type != "channel" || p.Chat.Username != "herald_news" || p.Caption != "New servers" {
		t.Fatalf("photo message = %+v", p)
	}
	d, err := c.SendDocument(ctx, "-1001234567890", "https://cdn.example/guide.pdf", "Guide", telegram.SendOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Chat.ID != -1001234567890 {
		t.Fatalf("document message = %+v", d)
	}

	sent := s.Sent()
	if len(sent) != 3 {
		t.Fatalf("sent %d", len(sent))
	}
	if g := sent[0]; g.Method != "sendMessage" || g.ChatID != "42" || g.Text != text || g.ParseMode != "HTML" ||
		!g.DisableNotification || g.MessageID != m.MessageID || g.ReplyMarkup == nil ||
		len(g.ReplyMarkup.InlineKeyboard) != 2 || g.ReplyMarkup.InlineKeyboard[1][0].URL != "tg://resolve?domain=herald_support" {
		t.Fatalf("sent[0] = %+v", g)
	}
	if g := sent[1]; g.Method != "sendPhoto" || g.ChatID != "@herald_news" || g.PhotoURL != "https://cdn.example/p.png" ||
		g.Caption != "<b>New</b> servers" || g.DisableNotification {
		t.Fatalf("sent[1] = %+v", g)
	}
	if g := sent[2]; g.Method != "sendDocument" || g.ChatID != "-1001234567890" || g.DocumentURL != "https://cdn.example/guide.pdf" || g.Caption != "Guide" {
		t.Fatalf("sent[2] = %+v", g)
	}
	for _, meth := range []string{"sendMessage", "sendPhoto", "sendDocument"} {
		if s.Calls(meth) != 1 {
			t.Fatalf("%s calls = %d", meth, s.Calls(meth))
		}
	}
}

func TestClassify(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		fail    func() telegramtest.Failure
		text    string
		mode    string
		want    telegram.Kind
		wantMsg string
	}{
		{name: "chat not found", fail: telegramtest.FailChatNotFound, text: "x", want: telegram.ChatNotFound},
		{name: "blocked", fail: telegramtest.FailBlocked, text: "x", want: telegram.Blocked},
		{name: "deactivated", fail: telegramtest.FailDeactivated, text: "x", want: telegram.Blocked},
		{name: "kicked", fail: telegramtest.FailKicked, text: "x", want: telegram.Blocked},
		{name: "injected parse", fail: telegramtest.FailParse, text: "x", want: telegram.BadMessage},
		{name: "server error", fail: telegramtest.FailServer, text: "x", want: telegram.ServerError},
		{name: "other 400", fail: func() telegramtest.Failure {
			return telegramtest.Failure{Code: 400, Description: "Bad Request: something odd"}
		}, text: "x", want: telegram.Other},
		{name: "real bad html", text: "<script>alert(1)</script>", mode: "HTML", want: telegram.BadMessage, wantMsg: "can't parse entities"},
		{name: "too long", text: strings.Repeat("a", telegram.MaxMessageLen+1), want: telegram.BadMessage, wantMsg: "message is too long"},
		{name: "empty", text: "  ", want: telegram.BadMessage, wantMsg: "message text is empty"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newFake(t)
			if tc.fail != nil {
				s.FailChat("42", tc.fail())
			}
			_, err := c.SendMessage(ctx, "42", tc.text, telegram.SendOptions{ParseMode: tc.mode})
			if got := telegram.Classify(err); got != tc.want {
				t.Fatalf("Classify(%v) = %v, want %v", err, got, tc.want)
			}
			if !strings.Contains(fmt.Sprint(err), tc.wantMsg) {
				t.Fatalf("err %v lacks %q", err, tc.wantMsg)
			}
			if len(s.Sent()) != 0 {
				t.Fatal("failed send recorded as sent")
			}
		})
	}

	t.Run("rate limited", func(t *testing.T) {
		s, c := newFake(t)
		s.FailChat("@chan", telegramtest.FailRateLimited(7))
		_, err := c.SendMessage(ctx, "@chan", "x", telegram.SendOptions{})
		var ae *telegram.APIError
		if telegram.Classify(err) != telegram.RateLimited || !errors.As(err, &ae) || ae.RetryAfter != 7*time.Second || ae.Code != 429 {
			t.Fatalf("err = %#v", err)
		}
		if d, ok := telegram.RetryAfter(err); !ok || d != 7*time.Second {
			t.Fatalf("RetryAfter = %v %v", d, ok)
		}
	})
	t.Run("failure times out", func(t *testing.T) {
		s, c := newFake(t)
		f := telegramtest.FailRateLimited(1)
		f.Times = 1
		s.FailChat("42", f)
		if _, err := c.SendMessage(ctx, "42", "x", telegram.SendOptions{}); telegram.Classify(err) != telegram.RateLimited {
			t.Fatalf("first send: %v", err)
		}
		if _, err := c.SendMessage(ctx, "42", "x", telegram.SendOptions{}); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if s.Calls("sendMessage") != 2 || len(s.Sent()) != 1 {
			t.Fatalf("calls %d sent %d", s.Calls("sendMessage"), len(s.Sent()))
		}
	})
	t.Run("conflict", func(t *testing.T) {
		s, c := newFake(t)
		s.FailMethod("getUpdates", telegramtest.FailConflict())
		_, err := c.GetUpdates(ctx, 0, 0, nil)
		if telegram.Classify(err) != telegram.Conflict {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unauthorized", func(t *testing.T) {
		s, _ := newFake(t)
		bad := "999:wrong-token"
		_, err := telegram.New(bad, s.URL, nil).GetMe(ctx)
		var ae *telegram.APIError
		if telegram.Classify(err) != telegram.Unauthorized || !errors.As(err, &ae) || ae.Code != 401 || ae.Description != "Unauthorized" {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), bad) {
			t.Fatalf("token leaked: %v", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		s, c := newFake(t)
		s.Close()
		_, err := c.SendMessage(ctx, "42", "x", telegram.SendOptions{})
		if telegram.Classify(err) != telegram.Unreachable {
			t.Fatalf("err = %v", err)
		}
		if strings.Contains(err.Error(), token) {
			t.Fatalf("token leaked: %v", err)
		}
	})
	t.Run("non-json gateway error", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "<html>bad gateway</html>", http.StatusBadGateway)
		}))
		defer srv.Close()
		_, err := telegram.New(token, srv.URL, nil).GetMe(ctx)
		if telegram.Classify(err) != telegram.ServerError {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("nil and foreign", func(t *testing.T) {
		if telegram.Classify(nil) != telegram.Other || telegram.Classify(errors.New("x")) != telegram.Other {
			t.Fatal("expected Other")
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTokenRedaction(t *testing.T) {
	// A transport that fails quoting the full URL, as many do.
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		return nil, fmt.Errorf("dial failed for %s (token %s)", r.URL, token)
	})}
	c := telegram.New(token, "https://api.example", hc)
	_, err := c.SendMessage(context.Background(), "42", "x", telegram.SendOptions{})
	if err == nil {
		t.Fatal("expected error")
	}
	if telegram.Classify(err) != telegram.Unreachable {
		t.Fatalf("kind = %v", telegram.Classify(err))
	}
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, token) || strings.Contains(s, "AAH-secret") {
				t.Fatalf("token leaked in %q", s)
			}
		}
	}
	if !strings.Contains(err.Error(), "sendMessage") {
		t.Fatalf("error should still name the method: %v", err)
	}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c)} {
		if strings.Contains(s, token) {
			t.Fatalf("client prints token: %q", s)
		}
	}
}

func TestRequestBodyIsObject(t *testing.T) {
	// Methods without parameters still send a JSON object, never null.
	var bodies []string
	hc := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return nil, err
		}
		bodies = append(bodies, string(b))
		return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(`{"ok":true,"result":true}`))}, nil
	})}
	c := telegram.New(token, "https://api.example", hc)
	ctx := context.Background()
	if err := c.DeleteWebhook(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteWebhook(ctx, true); err != nil {
		t.Fatal(err)
	}
	want := []string{`{}`, `{"drop_pending_updates":true}`}
	if strings.Join(bodies, " ") != strings.Join(want, " ") {
		t.Fatalf("bodies = %q, want %q", bodies, want)
	}
}

func TestFakeRejectsBadHTML(t *testing.T) {
	s, c := newFake(t)
	for _, bad := range []string{
		"<script>x</script>",
		"<b>unclosed",
		"stray</b>",
		"<b><i>x</b></i>",
		"fish & chips",
		"a > b",
		"&nbsp;",
		`<a href="https://x>x</a>`,
		"<span>x</span>",
	} {
		_, err := c.SendMessage(context.Background(), "42", bad, telegram.SendOptions{ParseMode: telegram.ParseModeHTML})
		var ae *telegram.APIError
		if !errors.As(err, &ae) || ae.Code != 400 || !strings.HasPrefix(ae.Description, "Bad Request: can't parse entities: ") {
			t.Errorf("%q: err = %v", bad, err)
		}
		if telegram.Classify(err) != telegram.BadMessage {
			t.Errorf("%q: kind %v", bad, telegram.Classify(err))
		}
	}
	// The same text without a parse mode is just text.
	if _, err := c.SendMessage(context.Background(), "42", "<b>fish & chips", telegram.SendOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(s.Sent()) != 1 {
		t.Fatalf("sent = %d", len(s.Sent()))
	}
}
