package main

// The Telegram bot end to end (issue 6), through the real server
// (harness_test.go) on every dialect and a fake Bot API (telegramtest):
// the status when connected and when not, webhook registration and
// delivery, polling, subscribers, and sendMessengerMessage's options and
// errors.

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

const (
	botToken      = "123456:AAE-herald_e2e_token"
	webhookURL    = "https://example.test/webhooks/telegram"
	webhookSecret = "s3cret_token-1"
)

// Messenger operations (GraphQL, scope admin); messengerBotStatus is
// opBotStatus of the sessions tests.
const (
	opSubscribers = "messengerSubscribers"
	opSendMessage = "sendMessengerMessage"
)

var messengerDocs = map[string]string{
	opBotStatus: sessionDocs[opBotStatus],
	opSubscribers: `query Subs($first: Int, $after: String) {
  messengerSubscribers(first: $first, after: $after) { nodes { chatId username firstName startPayload subscribedSince status } pageInfo { endCursor hasNextPage } }
}`,
	opSendMessage: `mutation Send($chatId: String!, $message: String!, $options: MessengerMessageOptions) {
  sendMessengerMessage(chatId: $chatId, message: $message, options: $options) { success messageId }
}`,
}

func botStatus(t testing.TB, h *herald, admin string) map[string]any {
	t.Helper()
	r := gql(t, h, opBotStatus, messengerDocs[opBotStatus], nil, withBearer(admin))
	expectOK(t, "messengerBotStatus", r, http.StatusOK)
	return r.data.(map[string]any)
}

func subscriberCount(t testing.TB, h *herald, admin string) int {
	t.Helper()
	return asInt(t, botStatus(t, h, admin)["subscriberCount"])
}

// waitSubscribers polls messengerBotStatus until subscriberCount is n.
func waitSubscribers(t testing.TB, h *herald, admin string, n int) {
	t.Helper()
	eventually(t, func() bool { return subscriberCount(t, h, admin) == n }, "subscriberCount never became %d", n)
}

// subscribers walks messengerSubscribers in pages of first and returns
// every node, checking the cursors.
func subscribers(t testing.TB, h *herald, admin string, first int) []map[string]any {
	t.Helper()
	out := walkPages(t, h, opSubscribers, messengerDocs[opSubscribers], nil, first, withBearer(admin))
	for _, m := range out {
		if s, _ := m["subscribedSince"].(string); !isoUTC.MatchString(s) {
			t.Errorf("subscribedSince %v is not ISO 8601 UTC", m["subscribedSince"])
		}
	}
	return out
}

// subscriber is one chat of the listing, nil when absent.
func subscriber(t testing.TB, h *herald, admin string, chatID int64) map[string]any {
	t.Helper()
	for _, s := range subscribers(t, h, admin, 100) {
		if s["chatId"] == fmt.Sprint(chatID) {
			return s
		}
	}
	return nil
}

func sendMessage(t testing.TB, h *herald, admin, chatID, message string, options map[string]any) result {
	t.Helper()
	vars := map[string]any{"chatId": chatID, "message": message}
	if options != nil {
		vars["options"] = options
	}
	return gql(t, h, opSendMessage, messengerDocs[opSendMessage], vars, withBearer(admin))
}

// Without a working bot the status is the not-connected shape, the reason
// is logged, and sends are MESSENGER_NOT_CONNECTED.
func TestMessengerNotConnectedE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := telegramtest.NewServer(t, botToken)
		cases := []struct {
			name, reason string
			env          map[string]string
		}{
			{"no token", "no bot token configured", nil},
			{"token Telegram rejects", "telegram rejected the bot token",
				map[string]string{"HERALD_TELEGRAM_BOT_TOKEN": "654321:not-this-bot", "HERALD_TELEGRAM_API_URL": fake.URL}},
			{"Telegram unreachable", "telegram unreachable",
				map[string]string{"HERALD_TELEGRAM_BOT_TOKEN": botToken, "HERALD_TELEGRAM_API_URL": "http://" + freeAddr(t)}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				h := startHerald(t, d, sessionEnv(c.env))
				admin := newAdminToken(t, h, "ops@example.com")
				want := map[string]any{"connected": false, "botUsername": nil, "botName": nil, "webhookUrl": nil, "subscriberCount": float64(0)}
				if got := botStatus(t, h, admin); !reflect.DeepEqual(got, want) {
					t.Fatalf("status %v, want %v", got, want)
				}
				// Lines at INFO reach the log in batches (HERALD_LOG_FLUSH_INTERVAL).
				eventually(t, func() bool { return strings.Contains(h.logs(), c.reason) }, "the log does not say %q", c.reason)
				expectError(t, "send", sendMessage(t, h, admin, "42", "Hello", nil), http.StatusServiceUnavailable, "MESSENGER_NOT_CONNECTED")
				user, _ := newUserToken(t, h, restDoor.name, "link@example.com")
				expectError(t, "link url", gql(t, h, opLinkURL, linkDocs[opLinkURL], nil, withBearer(user)), http.StatusServiceUnavailable, "MESSENGER_NOT_CONNECTED")
				expectError(t, "REST link url", restCall(t, h, http.MethodPost, linkPath, nil, withBearer(user)), http.StatusServiceUnavailable, "MESSENGER_NOT_CONNECTED")
				r := gql(t, h, opSubscribers, messengerDocs[opSubscribers], nil, withBearer(admin))
				expectOK(t, "messengerSubscribers", r, http.StatusOK)
				if nodes, _ := jsonPath(r.data, "nodes").([]any); len(nodes) != 0 {
					t.Fatalf("subscribers %v", nodes)
				}
				if strings.Contains(h.logs(), botToken) {
					t.Error("the bot token is in the log")
				}
			})
		}
	})
}

// Webhook mode: the server registers the webhook with the secret; updates
// with the right secret move subscribers, others are refused and change
// nothing; a replay counts once.
func TestMessengerWebhookE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := telegramtest.NewServer(t, botToken)
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_TELEGRAM_BOT_TOKEN":      botToken,
			"HERALD_TELEGRAM_API_URL":        fake.URL,
			"HERALD_TELEGRAM_WEBHOOK_URL":    webhookURL,
			"HERALD_TELEGRAM_WEBHOOK_SECRET": webhookSecret,
		}))
		admin := newAdminToken(t, h, "ops@example.com")
		hook := fake.Webhook()
		if hook.URL != webhookURL || hook.SecretToken != webhookSecret || !slices.Equal(hook.AllowedUpdates, []string{"message", "my_chat_member"}) {
			t.Fatalf("setWebhook registered %+v, want %s with the secret and message, my_chat_member", hook, webhookURL)
		}
		st := botStatus(t, h, admin)
		if st["connected"] != true || st["webhookUrl"] != webhookURL || st["botUsername"] != "herald_test_bot" || st["botName"] != "Herald Test" {
			t.Fatalf("status %v", st)
		}

		post := func(u telegram.Update, header ...string) (int, map[string]any) {
			t.Helper()
			var opts []reqOption
			if len(header) > 0 {
				opts = append(opts, withHeader(telegram.SecretTokenHeader, header[0]))
			}
			status, env, _ := h.rest(t, http.MethodPost, "/webhooks/telegram", u, opts...)
			return status, env
		}
		deliver := func(u telegram.Update) {
			t.Helper()
			if status, env := post(u, webhookSecret); status != http.StatusOK || env["success"] != true {
				t.Fatalf("update %d: %d %v", u.UpdateID, status, env)
			}
		}

		deliver(textUpdate(1, 501, "/start from-webhook"))
		if n := subscriberCount(t, h, admin); n != 1 {
			t.Fatalf("subscriberCount %d after /start, want 1", n)
		}
		if s := subscriber(t, h, admin, 501); s == nil || s["status"] != "subscribed" || s["startPayload"] != "from-webhook" || s["username"] != "user501" {
			t.Fatalf("subscriber 501: %v", s)
		}
		if n := len(fake.SentTo("501")); n != 1 {
			t.Fatalf("chat 501 got %d replies to /start, want the welcome", n)
		}

		for _, c := range []struct {
			name   string
			header []string
			code   string
		}{
			{"wrong secret", []string{"not-the-secret"}, "TOKEN_INVALID"},
			{"empty secret", []string{""}, "TOKEN_INVALID"},
			{"secret of another case", []string{strings.ToUpper(webhookSecret)}, "TOKEN_INVALID"},
			{"no secret", nil, "AUTH_REQUIRED"},
		} {
			status, env := post(textUpdate(2, 502, "/start"), c.header...)
			r := envelopeResult(t, c.name, status, env, nil)
			expectError(t, c.name, r, http.StatusUnauthorized, c.code)
			status, env = post(textUpdate(3, 501, "/stop"), c.header...)
			expectError(t, c.name+": /stop", envelopeResult(t, c.name, status, env, nil), http.StatusUnauthorized, c.code)
		}
		// The HTTP side: the method, the body, the envelope.
		for _, c := range []struct {
			name, method string
			body         []byte
			status       int
			code         string
		}{
			{"GET", http.MethodGet, nil, 405, "METHOD_NOT_ALLOWED"},
			{"malformed JSON", http.MethodPost, []byte(`{"update_id":`), 400, "VALIDATION_ERROR"},
			{"not an update", http.MethodPost, []byte(`{"hello":"world"}`), 400, "VALIDATION_ERROR"},
			{"body over 1 MiB", http.MethodPost, append(append([]byte(`{"update_id":5,"x":"`), bytes.Repeat([]byte("a"), 1<<20)...), `"}`...), 413, "PAYLOAD_TOO_LARGE"},
		} {
			status, hdr, raw := h.do(t, c.method, "/webhooks/telegram", c.body, withHeader(telegram.SecretTokenHeader, webhookSecret))
			expectError(t, c.name, envelopeResult(t, c.name, status, restEnvelope(t, c.name, hdr, raw), hdr), c.status, c.code)
		}
		if n := subscriberCount(t, h, admin); n != 1 || subscriber(t, h, admin, 502) != nil {
			t.Fatalf("refused updates changed the subscribers: count %d, chat 502 %v", n, subscriber(t, h, admin, 502))
		}

		deliver(textUpdate(1, 501, "/start from-webhook")) // a replay
		if n := subscriberCount(t, h, admin); n != 1 {
			t.Fatalf("subscriberCount %d after a replay, want 1", n)
		}
		deliver(textUpdate(3, 501, "/stop"))
		if n := subscriberCount(t, h, admin); n != 0 {
			t.Fatalf("subscriberCount %d after /stop, want 0", n)
		}
		deliver(textUpdate(1, 501, "/start from-webhook")) // replayed after /stop: still applied once
		if n := subscriberCount(t, h, admin); n != 0 {
			t.Fatalf("a replayed /start subscribed again (count %d)", n)
		}
		// The bot answers before the webhook call returns, so every reply
		// has arrived by now.
		if n := len(fake.SentTo("501")); n != 2 {
			t.Fatalf("chat 501 got %d replies, want 2 (welcome, goodbye; none for replays)", n)
		}

		// Block and unblock (my_chat_member) move a subscribed chat.
		deliver(textUpdate(4, 503, "/start"))
		deliver(memberUpdate(5, 503, "kicked"))
		if s := subscriber(t, h, admin, 503); s["status"] != "blocked" || subscriberCount(t, h, admin) != 0 {
			t.Fatalf("after a block: %v, count %d", s, subscriberCount(t, h, admin))
		}
		deliver(memberUpdate(6, 503, "member"))
		if s := subscriber(t, h, admin, 503); s["status"] != "subscribed" || subscriberCount(t, h, admin) != 1 {
			t.Fatalf("after an unblock: %v", s)
		}
		if fake.Calls("getUpdates") != 0 {
			t.Error("the server polled getUpdates in webhook mode")
		}

		// Without HERALD_TELEGRAM_WEBHOOK_SECRET a secret is generated once
		// and kept: a restart registers the same one.
		env := maps.Clone(h.Env)
		env["HERALD_TELEGRAM_WEBHOOK_SECRET"] = ""
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		h = startHerald(t, d, env)
		generated := fake.Webhook().SecretToken
		if generated == "" || generated == webhookSecret || len(generated) > 256 || strings.Trim(generated, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Fatalf("generated secret %q", generated)
		}
		if status, _ := post(textUpdate(7, 504, "/start"), webhookSecret); status != http.StatusUnauthorized {
			t.Fatalf("the configured secret still works after it was removed: %d", status)
		}
		deliver2 := func(u telegram.Update) {
			if status, env := post(u, generated); status != http.StatusOK {
				t.Fatalf("update with the generated secret: %d %v", status, env)
			}
		}
		deliver2(textUpdate(7, 504, "/start"))
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		h = startHerald(t, d, env)
		if again := fake.Webhook().SecretToken; again != generated {
			t.Fatalf("after a restart the secret is %q, want the kept %q", again, generated)
		}
		deliver2(textUpdate(8, 505, "/start"))
		admin = login(t, h, restDoor.name, "ops@example.com", testPassword).access
		if n := subscriberCount(t, h, admin); n != 3 {
			t.Fatalf("subscriberCount %d, want 3 (503, 504, 505)", n)
		}
	})
}

// textUpdate is a private-chat text message from user chatID.
func textUpdate(id, chatID int64, text string) telegram.Update {
	user := telegram.User{ID: chatID, FirstName: "Test", Username: fmt.Sprintf("user%d", chatID)}
	return telegram.Update{UpdateID: id, Message: &telegram.Message{
		MessageID: id, From: &user, Date: time.Now().Unix(), Text: text,
		Chat: telegram.Chat{ID: chatID, Type: "private", FirstName: user.FirstName, Username: user.Username},
	}}
}

// memberUpdate is the bot's membership in chatID changing to status
// (kicked: the user blocked the bot; member: unblocked).
func memberUpdate(id, chatID int64, status string) telegram.Update {
	user := telegram.User{ID: chatID, FirstName: "Test", Username: fmt.Sprintf("user%d", chatID)}
	old := map[string]string{"kicked": "member", "member": "kicked"}[status]
	return telegram.Update{UpdateID: id, MyChatMember: &telegram.ChatMemberUpdated{
		Chat: telegram.Chat{ID: chatID, Type: "private", FirstName: user.FirstName, Username: user.Username},
		From: user, Date: time.Now().Unix(),
		OldChatMember: telegram.ChatMember{Status: old, User: telegram.User{ID: 123456, IsBot: true, FirstName: "Herald Test"}},
		NewChatMember: telegram.ChatMember{Status: status, User: telegram.User{ID: 123456, IsBot: true, FirstName: "Herald Test"}},
	}}
}

// Polling mode end to end: updates pushed into the fake reach the server
// through getUpdates; subscribers page; every send option and error.
func TestMessengerPollingE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := telegramtest.NewServer(t, botToken)
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_TELEGRAM_BOT_TOKEN": botToken,
			"HERALD_TELEGRAM_API_URL":   fake.URL,
		}))
		admin := newAdminToken(t, h, "ops@example.com")
		user, _ := newUserToken(t, h, restDoor.name, "user@example.com")

		want := map[string]any{"connected": true, "botUsername": "herald_test_bot", "botName": "Herald Test", "webhookUrl": nil, "subscriberCount": float64(0)}
		if got := botStatus(t, h, admin); !reflect.DeepEqual(got, want) {
			t.Fatalf("status %v, want %v", got, want)
		}
		if fake.Calls("setWebhook") != 0 {
			t.Error("setWebhook called in polling mode")
		}
		for _, op := range []string{opBotStatus, opSubscribers} {
			expectError(t, op+" with a user token", gql(t, h, op, messengerDocs[op], nil, withBearer(user)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
			expectError(t, op+" without a token", gql(t, h, op, messengerDocs[op], nil), http.StatusUnauthorized, "AUTH_REQUIRED")
		}
		expectError(t, "send with a user token", gql(t, h, opSendMessage, messengerDocs[opSendMessage], map[string]any{"chatId": "1", "message": "x"}, withBearer(user)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		expectError(t, "send without a token", gql(t, h, opSendMessage, messengerDocs[opSendMessage], map[string]any{"chatId": "1", "message": "x"}), http.StatusUnauthorized, "AUTH_REQUIRED")

		t.Run("Subscribers", func(t *testing.T) {
			fake.PushText(1001, "/start promo-42")
			waitSubscribers(t, h, admin, 1)
			s := subscriber(t, h, admin, 1001)
			if s["username"] != "user1001" || s["firstName"] != "Test" || s["startPayload"] != "promo-42" || s["status"] != "subscribed" {
				t.Fatalf("subscriber %v", s)
			}
			eventually(t, func() bool { return len(fake.SentTo("1001")) == 1 }, "no welcome reply")
			for id := int64(1002); id <= 1006; id++ {
				fake.PushText(id, "/start")
			}
			waitSubscribers(t, h, admin, 6)
			for _, size := range []int{1, 2, 4, 100} {
				all := subscribers(t, h, admin, size)
				var ids []string
				for _, s := range all {
					ids = append(ids, s["chatId"].(string))
				}
				slices.Sort(ids)
				if want := []string{"1001", "1002", "1003", "1004", "1005", "1006"}; !slices.Equal(ids, want) {
					t.Fatalf("pages of %d: %v, want each of %v once", size, ids, want)
				}
				if !slices.IsSortedFunc(all, func(a, b map[string]any) int {
					return strings.Compare(b["subscribedSince"].(string), a["subscribedSince"].(string))
				}) {
					t.Fatalf("pages of %d: not newest first", size)
				}
			}
			fake.PushText(1002, "/stop")
			fake.PushUpdate(memberUpdate(0, 1003, "kicked"))
			waitSubscribers(t, h, admin, 4)
			if a, b := subscriber(t, h, admin, 1002)["status"], subscriber(t, h, admin, 1003)["status"]; a != "unsubscribed" || b != "blocked" {
				t.Fatalf("statuses %v and %v, want unsubscribed and blocked", a, b)
			}
			fake.PushUpdate(memberUpdate(0, 1003, "member"))
			waitSubscribers(t, h, admin, 5)
		})

		t.Run("Send", func(t *testing.T) { testMessengerSend(t, h, fake, admin) })
		t.Run("SendErrors", func(t *testing.T) { testMessengerSendErrors(t, h, fake, admin) })
	})
}

func testMessengerSend(t *testing.T, h *herald, fake *telegramtest.Server, admin string) {
	const reserved = "Price: 4.99 (50% off!) _*[]()~`>#+-=|{}.!\\ <&> \"quotes\" 'single' 100% $5 @user #tag"
	buttons := []any{
		[]any{map[string]any{"text": "Open", "url": "https://example.com/open"}},
		[]any{map[string]any{"text": "A", "url": "https://example.com/a"}, map[string]any{"text": "B", "url": "http://example.com/b"}},
	}
	wantKeyboard := &telegram.InlineKeyboardMarkup{InlineKeyboard: [][]telegram.InlineKeyboardButton{
		{{Text: "Open", URL: "https://example.com/open"}},
		{{Text: "A", URL: "https://example.com/a"}, {Text: "B", URL: "http://example.com/b"}},
	}}
	cases := []struct {
		name, chat, message string
		options             map[string]any
		check               func(t *testing.T, m telegramtest.SentMessage)
	}{
		{"reserved characters", "2001", reserved, nil, func(t *testing.T, m telegramtest.SentMessage) {
			if m.Method != "sendMessage" || m.Visible != reserved || m.DisableNotification || m.ReplyMarkup != nil {
				t.Fatalf("sent %+v, want the text shown exactly as written", m)
			}
		}},
		{"markdown", "2002", "**Price:** 4.99 (50% off!) *now*", nil, func(t *testing.T, m telegramtest.SentMessage) {
			if m.Text != "<b>Price:</b> 4.99 (50% off!) <i>now</i>" || m.Visible != "Price: 4.99 (50% off!) now" {
				t.Fatalf("sent %q (shown %q)", m.Text, m.Visible)
			}
		}},
		{"silent", "2003", "Quiet", map[string]any{"silent": true}, func(t *testing.T, m telegramtest.SentMessage) {
			if !m.DisableNotification || m.Visible != "Quiet" {
				t.Fatalf("sent %+v, want disable_notification", m)
			}
		}},
		{"buttons", "2004", "Pick one", map[string]any{"buttons": buttons}, func(t *testing.T, m telegramtest.SentMessage) {
			if !reflect.DeepEqual(m.ReplyMarkup, wantKeyboard) {
				t.Fatalf("keyboard %+v, want %+v", m.ReplyMarkup, wantKeyboard)
			}
		}},
		{"image", "2005", "A *picture*", map[string]any{"imageUrl": "https://example.com/a.png"}, func(t *testing.T, m telegramtest.SentMessage) {
			if m.Method != "sendPhoto" || m.PhotoURL != "https://example.com/a.png" || m.Visible != "A picture" || m.Caption != "A <i>picture</i>" {
				t.Fatalf("sent %+v, want a photo with the message as caption", m)
			}
		}},
		{"document", "2006", "The report", map[string]any{"documentUrl": "https://example.com/r.pdf", "silent": true}, func(t *testing.T, m telegramtest.SentMessage) {
			if m.Method != "sendDocument" || m.DocumentURL != "https://example.com/r.pdf" || m.Visible != "The report" || !m.DisableNotification {
				t.Fatalf("sent %+v, want a silent document with the message as caption", m)
			}
		}},
		{"channel", "@herald_news", "To the channel", nil, func(t *testing.T, m telegramtest.SentMessage) {
			if m.Visible != "To the channel" {
				t.Fatalf("sent %+v", m)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := sendMessage(t, h, admin, c.chat, c.message, c.options)
			expectOK(t, c.name, r, http.StatusOK)
			sent := fake.SentTo(c.chat)
			if len(sent) != 1 {
				t.Fatalf("the fake got %d messages for %s, want 1", len(sent), c.chat)
			}
			if jsonPath(r.data, "success") != true || jsonPath(r.data, "messageId") != fmt.Sprint(sent[0].MessageID) {
				t.Fatalf("answer %v, want success and messageId %d", r.data, sent[0].MessageID)
			}
			if sent[0].ParseMode != "HTML" {
				t.Errorf("parse mode %q, want HTML", sent[0].ParseMode)
			}
			c.check(t, sent[0])
		})
	}
}

func testMessengerSendErrors(t *testing.T, h *herald, fake *telegramtest.Server, admin string) {
	// Chat 1004 subscribed in the Subscribers subtest; it blocks the bot.
	subscribed := subscriberCount(t, h, admin)
	cases := []struct {
		name, chat, message string
		options             map[string]any
		failure             *telegramtest.Failure
		status              int
		code                string
		upstream            bool // whether Telegram is called
	}{
		{"chat not found", "3001", "Hi", nil, ptr(telegramtest.FailChatNotFound()), 404, "CHAT_NOT_FOUND", true},
		{"not a chat id", "not a chat", "Hi", nil, nil, 404, "CHAT_NOT_FOUND", false},
		{"blocked", "1004", "Hi", nil, ptr(telegramtest.FailBlocked()), 403, "CHAT_BLOCKED", true},
		{"empty", "3002", "", nil, nil, 400, "INVALID_MESSAGE", false},
		{"blank", "3002", " \n\t ", nil, nil, 400, "INVALID_MESSAGE", false},
		{"too long", "3002", strings.Repeat("a", 4097), nil, nil, 400, "INVALID_MESSAGE", false},
		{"caption too long", "3002", strings.Repeat("a", 1025), map[string]any{"imageUrl": "https://example.com/a.png"}, nil, 400, "INVALID_MESSAGE", false},
		{"image and document", "3002", "Hi", map[string]any{"imageUrl": "https://example.com/a.png", "documentUrl": "https://example.com/a.pdf"}, nil, 400, "INVALID_MESSAGE", false},
		{"button without a web URL", "3002", "Hi", map[string]any{"buttons": []any{[]any{map[string]any{"text": "x", "url": "javascript:alert(1)"}}}}, nil, 400, "INVALID_MESSAGE", false},
		{"Telegram cannot parse it", "3003", "Hi", nil, ptr(telegramtest.FailParse()), 400, "INVALID_MESSAGE", true},
		{"rate limited", "3004", "Hi", nil, ptr(telegramtest.FailRateLimited(7)), 429, "RATE_LIMITED", true},
		{"Telegram answers 5xx", "3005", "Hi", nil, ptr(telegramtest.FailServer()), 502, "UPSTREAM_ERROR", true},
		{"other refusal", "3006", "Hi", nil, &telegramtest.Failure{Code: 400, Description: "Bad Request: something unexpected"}, 502, "UPSTREAM_ERROR", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.failure != nil {
				fake.FailChat(c.chat, *c.failure)
			}
			method := "sendMessage"
			if c.options["imageUrl"] != nil {
				method = "sendPhoto"
			}
			calls := fake.Calls(method)
			r := sendMessage(t, h, admin, c.chat, c.message, c.options)
			expectError(t, c.name, r, c.status, c.code)
			if called := fake.Calls(method) > calls; called != c.upstream {
				t.Errorf("Telegram called: %v, want %v", called, c.upstream)
			}
			if n := len(fake.SentTo(c.chat)); n != 0 && c.chat != "1004" {
				t.Errorf("the fake delivered %d messages to %s", n, c.chat)
			}
			if c.code == "RATE_LIMITED" {
				if r.details["retryAfter"] != float64(7) || r.header.Get("Retry-After") != "7" {
					t.Fatalf("details %v, Retry-After %q; want retryAfter 7 in both", r.details, r.header.Get("Retry-After"))
				}
			}
		})
	}
	if s := subscriber(t, h, admin, 1004); s["status"] != "blocked" {
		t.Fatalf("a send answering 403 left subscriber 1004 %v, want blocked", s["status"])
	}
	if n := subscriberCount(t, h, admin); n != subscribed-1 {
		t.Fatalf("subscriberCount %d, want %d", n, subscribed-1)
	}
	fake.ClearFailures()
}

func ptr[T any](v T) *T { return &v }
