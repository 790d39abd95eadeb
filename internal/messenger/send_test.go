package messenger_test

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

func TestSendOptions(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		buttons := [][]messenger.Button{
			{{Text: "Open", URL: "https://herald.example/app"}},
			{{Text: "Docs", URL: "http://docs.herald.example"}, {Text: " Help ", URL: "https://herald.example/help?q=1&r=2"}},
		}
		markup := &telegram.InlineKeyboardMarkup{InlineKeyboard: [][]telegram.InlineKeyboardButton{
			{{Text: "Open", URL: "https://herald.example/app"}},
			{{Text: "Docs", URL: "http://docs.herald.example"}, {Text: "Help", URL: "https://herald.example/help?q=1&r=2"}},
		}}
		const html = "Hello <b>world</b>"
		cases := []struct {
			name string
			opts messenger.SendOptions
			want telegramtest.SentMessage // MessageID and ChatID are filled in
		}{
			{"plain", messenger.SendOptions{}, telegramtest.SentMessage{Method: "sendMessage", Text: html}},
			{"silent", messenger.SendOptions{Silent: true}, telegramtest.SentMessage{Method: "sendMessage", Text: html, DisableNotification: true}},
			{"buttons", messenger.SendOptions{Buttons: buttons}, telegramtest.SentMessage{Method: "sendMessage", Text: html, ReplyMarkup: markup}},
			{"image", messenger.SendOptions{ImageURL: "https://cdn.herald.example/a.png"}, telegramtest.SentMessage{Method: "sendPhoto", Caption: html, PhotoURL: "https://cdn.herald.example/a.png"}},
			{"document", messenger.SendOptions{DocumentURL: "https://cdn.herald.example/guide.pdf"}, telegramtest.SentMessage{Method: "sendDocument", Caption: html, DocumentURL: "https://cdn.herald.example/guide.pdf"}},
			{"everything", messenger.SendOptions{Silent: true, Buttons: buttons, ImageURL: "https://cdn.herald.example/b.jpg"},
				telegramtest.SentMessage{Method: "sendPhoto", Caption: html, PhotoURL: "https://cdn.herald.example/b.jpg", DisableNotification: true, ReplyMarkup: markup}},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				chat := strconv.Itoa(1000 + i)
				id, err := e.svc.Send(context.Background(), chat, "Hello **world**", c.opts)
				if err != nil {
					t.Fatal(err)
				}
				sent := e.fake.Sent()
				got := sent[len(sent)-1]
				want := c.want
				want.ChatID, want.MessageID, want.ParseMode, want.Visible, want.At = chat, got.MessageID, "HTML", "Hello world", got.At
				if id != strconv.FormatInt(got.MessageID, 10) {
					t.Fatalf("message id %q, Telegram's is %d", id, got.MessageID)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("sent\n %+v\nwant\n %+v", got, want)
				}
			})
		}
	})
}

func TestSendErrors(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		long := strings.Repeat("a", 4097)
		img := messenger.SendOptions{ImageURL: "https://cdn.herald.example/a.png"}
		cases := []struct {
			name    string
			cfg     func(*messenger.Config)
			fail    *telegramtest.Failure // injected for the chat
			chat    string
			message string
			opts    messenger.SendOptions
			code    apperr.Code
			status  int
			called  bool // whether Telegram was asked at all
		}{
			{name: "empty message", message: "", code: apperr.InvalidMessage, status: 400},
			{name: "blank message", message: " \n\t ", code: apperr.InvalidMessage, status: 400},
			{name: "over 4096 characters", message: long, code: apperr.InvalidMessage, status: 400},
			{name: "over 4096 UTF-16 units", message: strings.Repeat("😀", 2049), code: apperr.InvalidMessage, status: 400},
			{name: "caption over 1024", message: strings.Repeat("b", 1025), opts: img, code: apperr.InvalidMessage, status: 400},
			{name: "document caption over 1024", message: strings.Repeat("b", 1025), opts: messenger.SendOptions{DocumentURL: "https://x.example/d.pdf"}, code: apperr.InvalidMessage, status: 400},
			{name: "image and document", message: "hi", opts: messenger.SendOptions{ImageURL: "https://x.example/a.png", DocumentURL: "https://x.example/d.pdf"}, code: apperr.InvalidMessage, status: 400},
			{name: "image not a web URL", message: "hi", opts: messenger.SendOptions{ImageURL: "file:///etc/passwd"}, code: apperr.InvalidMessage, status: 400},
			{name: "button without text", message: "hi", opts: messenger.SendOptions{Buttons: [][]messenger.Button{{{Text: " ", URL: "https://x.example"}}}}, code: apperr.InvalidMessage, status: 400},
			{name: "button without URL", message: "hi", opts: messenger.SendOptions{Buttons: [][]messenger.Button{{{Text: "Go"}}}}, code: apperr.InvalidMessage, status: 400},
			{name: "button with a script URL", message: "hi", opts: messenger.SendOptions{Buttons: [][]messenger.Button{{{Text: "Go", URL: "javascript:alert(1)"}}}}, code: apperr.InvalidMessage, status: 400},
			{name: "not a chat id", chat: "not a chat", message: "hi", code: apperr.ChatNotFound, status: 404},
			{name: "chat not found", fail: ptr(telegramtest.FailChatNotFound()), message: "hi", code: apperr.ChatNotFound, status: 404, called: true},
			{name: "blocked", fail: ptr(telegramtest.FailBlocked()), message: "hi", code: apperr.ChatBlocked, status: 403, called: true},
			{name: "deactivated", fail: ptr(telegramtest.FailDeactivated()), message: "hi", code: apperr.ChatBlocked, status: 403, called: true},
			{name: "unparsable", fail: ptr(telegramtest.FailParse()), message: "hi", code: apperr.InvalidMessage, status: 400, called: true},
			{name: "too long for Telegram", fail: ptr(telegramtest.FailTooLong()), message: "hi", code: apperr.InvalidMessage, status: 400, called: true},
			{name: "rate limited", fail: ptr(telegramtest.FailRateLimited(7)), message: "hi", code: apperr.RateLimited, status: 429, called: true},
			{name: "telegram answers 5xx", fail: ptr(telegramtest.FailServer()), message: "hi", code: apperr.UpstreamError, status: 502, called: true},
			{name: "other refusal", fail: &telegramtest.Failure{Code: 400, Description: "Bad Request: something new"}, message: "hi", code: apperr.UpstreamError, status: 502, called: true},
			{name: "conflict", fail: ptr(telegramtest.FailConflict()), message: "hi", code: apperr.UpstreamError, status: 502, called: true},
			{name: "no token", cfg: func(c *messenger.Config) { c.Token = "" }, message: "hi", code: apperr.MessengerNotConnected, status: 503},
			{name: "bad token", cfg: func(c *messenger.Config) { c.Token = "999:wrong" }, message: "hi", code: apperr.MessengerNotConnected, status: 503},
			{name: "unreachable", cfg: func(c *messenger.Config) { c.APIURL = closedURL() }, message: "hi", code: apperr.MessengerNotConnected, status: 503},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var opts []option
				if c.cfg != nil {
					opts = append(opts, withConfig(c.cfg))
				}
				e := newEnv(t, db, opts...)
				chat := c.chat
				if chat == "" {
					chat = strconv.Itoa(2000 + i)
				}
				if c.fail != nil {
					e.fake.FailChat(chat, *c.fail)
				}
				_, err := e.svc.Send(context.Background(), chat, c.message, c.opts)
				ae := apperr.As(err)
				if !apperr.Is(err, c.code) || ae.Status() != c.status {
					t.Fatalf("err = %v (status %d), want %s (%d)", err, ae.Status(), c.code, c.status)
				}
				if strings.Contains(ae.Message, "AAH") || strings.Contains(err.Error(), token) {
					t.Fatalf("error leaks the token: %v", err)
				}
				calls := e.fake.Calls("sendMessage") + e.fake.Calls("sendPhoto") + e.fake.Calls("sendDocument")
				if (calls > 0) != c.called {
					t.Fatalf("%d send calls reached Telegram, want called=%v", calls, c.called)
				}
				if c.code == apperr.RateLimited {
					if ae.RetryAfterSeconds != 7 || ae.Details["retryAfter"] != 7 {
						t.Fatalf("retry after %d, details %v; want 7", ae.RetryAfterSeconds, ae.Details)
					}
				}
			})
		}
	})
}

func TestSendBlockedMarksSubscriber(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		e.svc.HandleUpdate(ctx, textUpdate(1, 77, "/start"))
		e.svc.HandleUpdate(ctx, textUpdate(2, 78, "/start"))
		e.fake.FailChat("77", telegramtest.FailBlocked())
		if _, err := e.svc.Send(ctx, "77", "hi", messenger.SendOptions{}); !apperr.Is(err, apperr.ChatBlocked) {
			t.Fatalf("err = %v", err)
		}
		if st, _ := e.svc.Status(ctx); st.SubscriberCount != 1 {
			t.Fatalf("subscriberCount %d after the 403, want 1", st.SubscriberCount)
		}
		p, _ := e.svc.Subscribers(ctx, "", 10, "")
		for _, s := range p.Items {
			if s.ChatID == "77" && s.Status != messenger.Blocked {
				t.Fatalf("chat 77 is %q", s.Status)
			}
		}
		// Unblocking restores the subscription.
		e.fake.ClearFailures()
		e.svc.HandleUpdate(ctx, memberUpdate(3, 77, "member"))
		if st, _ := e.svc.Status(ctx); st.SubscriberCount != 2 {
			t.Fatalf("subscriberCount %d after unblocking, want 2", st.SubscriberCount)
		}
	})
}

func TestSendEscaping(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		cases := []struct {
			name, message, visible string
		}{
			{"reserved characters pass through",
				`Price: 4.99 (50% off!) a \ b <not a tag> & &amp; "quoted" 'single' #hash +plus -minus =eq |pipe| {brace} [bracket] .dot ~tilde > quote_mark snake_case_name https://x.example/a_b*c*`,
				`Price: 4.99 (50% off!) a \ b <not a tag> & &amp; "quoted" 'single' #hash +plus -minus =eq |pipe| {brace} [bracket] .dot ~tilde > quote_mark snake_case_name https://x.example/a_b*c*`},
			{"escaped markers stay literal", `\*not bold\* and \_not italic\_ and a trailing \`, `*not bold* and _not italic_ and a trailing \`},
			{"markdown is formatted", "**Bold** _it_ ~~gone~~ `code <x> & y` [link](https://x.example/?a=1&b=2)", "Bold it gone code <x> & y link"},
			{"unbalanced markers", "**open _half ~~ ` [x](", "**open _half ~~ ` [x]("},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				chat := strconv.Itoa(3000 + i)
				if _, err := e.svc.Send(context.Background(), chat, c.message, messenger.SendOptions{}); err != nil {
					t.Fatalf("Telegram refused the formatted text: %v", err)
				}
				sent := e.fake.Sent()
				got := sent[len(sent)-1]
				if got.ParseMode != "HTML" || got.Visible != c.visible {
					t.Fatalf("sent %q (%s), shown as\n %q\nwant\n %q", got.Text, got.ParseMode, got.Visible, c.visible)
				}
			})
		}
	})
}

func TestSendPacing(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		// Bursts to one chat wait for their slot rather than being refused.
		var wg sync.WaitGroup
		errs := make([]error, 5)
		for i := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = e.svc.Send(ctx, "555", "burst "+strconv.Itoa(i), messenger.SendOptions{})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("send %d: %v", i, err)
			}
		}
		if n := len(e.sentTo("555")); n != 5 {
			t.Fatalf("%d of 5 messages delivered", n)
		}
		// The pacer's clock shows the 1-per-second-per-chat spacing.
		if slept := e.clock.Slept(); slept < 4*time.Second {
			t.Fatalf("the sends waited %v in all, want at least 4s of pacing", slept)
		}
		// After a 429, later sends to that chat wait Telegram's retry_after.
		e.fake.FailChat("556", telegramtest.Failure{Code: 429, Description: "Too Many Requests: retry after 9", RetryAfter: 9, Times: 1})
		if _, err := e.svc.Send(ctx, "556", "one", messenger.SendOptions{}); !apperr.Is(err, apperr.RateLimited) {
			t.Fatalf("err = %v", err)
		}
		before := e.clock.Slept()
		if _, err := e.svc.Send(ctx, "556", "two", messenger.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		if waited := e.clock.Slept() - before; waited < 9*time.Second {
			t.Fatalf("the send after a 429 waited %v, want retry_after's 9s", waited)
		}
	})
}

func TestSendWhileStatusNotConnectedIsStillTried(t *testing.T) {
	// Status caches; Send never relies on the cache. A bot whose status was
	// cached as unreachable sends as soon as Telegram answers again.
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		e.fake.FailMethod("getMe", telegramtest.FailServer())
		if st, _ := e.svc.Status(context.Background()); st.Connected {
			t.Fatal("connected while getMe fails")
		}
		if _, err := e.svc.Send(context.Background(), "42", "hi", messenger.SendOptions{}); err != nil {
			t.Fatalf("send: %v", err)
		}
	})
}

// A preview is exactly what a send gives Telegram: the same HTML, and the
// length Telegram counts (UTF-16 units of the visible text).
func TestPreviewIsWhatIsSent(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		for i, md := range []string{
			"Hello **world**",
			"**Price:** 4.99 (50% off!) <b>&amp;</b>",
			"[docs](https://herald.example/a?b=1&c=2) and `code` and ~~old~~",
			"Emoji 👋🏽 count twice in UTF-16\r\nand *italic*",
			"```go\nfmt.Println(\"<hi>\")\n```",
		} {
			p, err := e.svc.Preview(md)
			if err != nil {
				t.Fatalf("%q: %v", md, err)
			}
			chat := strconv.Itoa(2000 + i)
			if _, err := e.svc.Send(context.Background(), chat, md, messenger.SendOptions{}); err != nil {
				t.Fatal(err)
			}
			sent := e.fake.Sent()
			got := sent[len(sent)-1]
			if p.HTML != got.Text || got.ParseMode != "HTML" {
				t.Errorf("%q: preview %q, sent %q (%s)", md, p.HTML, got.Text, got.ParseMode)
			}
			if want := len(utf16.Encode([]rune(got.Visible))); p.Length != want {
				t.Errorf("%q: length %d, Telegram counts %d (%q)", md, p.Length, want, got.Visible)
			}
		}
		for _, md := range []string{"", " \n ", strings.Repeat("a", 4097)} {
			if _, err := e.svc.Preview(md); !apperr.Is(err, apperr.InvalidMessage) {
				t.Errorf("preview of %d characters: %v, want INVALID_MESSAGE", len(md), err)
			}
		}
	})
}
