package main

// Telegram chats linked to accounts end to end (issue 14), polling the
// fake Bot API: messengerLinkUrl through both doors, /start <token> links
// and confirms, an expired and an already-used token link nothing,
// relinking moves the link, /stop and unlinkMessenger unlink, and
// sendNotificationToUser's telegram channel reaches the linked chat.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

const (
	opLinkURL = "messengerLinkUrl"
	opUnlink  = "unlinkMessenger"
	linkPath  = "/api/v1/users/me/messenger-link"
)

var linkDocs = map[string]string{
	opLinkURL: `mutation { messengerLinkUrl { url expiresAt } }`,
	opUnlink:  `mutation { unlinkMessenger }`,
	opSubscribers: `query Subs($first: Int, $after: String) {
  messengerSubscribers(first: $first, after: $after) { nodes { chatId status userId subscribedSince } pageInfo { endCursor hasNextPage } }
}`,
	"sendNotificationToUser": `mutation ToUser($id: ID!, $n: NotificationInput!, $channels: [String!]) {
  sendNotificationToUser(userId: $id, notification: $n, channels: $channels) { userId status message outcomes { deviceId chatId platform channel status error } }
}`,
}

// linkTokenShape is Telegram's start parameter: at most 64 of A-Za-z0-9_-.
var linkTokenShape = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// linkToken asks for a link through the door and returns its token,
// checking the URL's shape and the 15 minutes.
func linkToken(t *testing.T, h *herald, door, user string) string {
	t.Helper()
	var r result
	if door == graphQLDoor.name {
		r = gql(t, h, opLinkURL, linkDocs[opLinkURL], nil, withBearer(user))
	} else {
		r = restCall(t, h, http.MethodPost, linkPath, nil, withBearer(user))
	}
	expectOK(t, door+" link url", r, http.StatusOK)
	raw, _ := jsonPath(r.data, "url").(string)
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host != "t.me" || u.Path != "/herald_test_bot" {
		t.Fatalf("link url %q, want https://t.me/herald_test_bot?start=...", raw)
	}
	token := u.Query().Get("start")
	if !linkTokenShape.MatchString(token) {
		t.Fatalf("start parameter %q is not a valid Telegram start parameter", token)
	}
	exp, err := time.Parse(time.RFC3339, jsonPath(r.data, "expiresAt").(string))
	if left := time.Until(exp); err != nil || left < 13*time.Minute || left > 16*time.Minute {
		t.Fatalf("expiresAt %v (%v), want about 15 minutes ahead", r.data, err)
	}
	return token
}

// linkedUser is the userId of chat in messengerSubscribers ("" for none).
func linkedUser(t *testing.T, h *herald, admin string, chat int64) string {
	t.Helper()
	for _, s := range walkPages(t, h, opSubscribers, linkDocs[opSubscribers], nil, 100, withBearer(admin)) {
		if s["chatId"] == fmt.Sprint(chat) {
			id, _ := s["userId"].(string)
			return id
		}
	}
	t.Fatalf("chat %d is not a subscriber", chat)
	return ""
}

// startAndReply sends text from chat and waits for the bot's answer,
// which comes after the change is stored.
func startAndReply(t *testing.T, fake *telegramtest.Server, chat int64, text string) string {
	t.Helper()
	before := len(fake.SentTo(fmt.Sprint(chat)))
	fake.PushText(chat, text)
	eventually(t, func() bool { return len(fake.SentTo(fmt.Sprint(chat))) > before }, "chat %d got no answer to %q", chat, text)
	return fake.SentTo(fmt.Sprint(chat))[before].Visible
}

func TestMessengerLinkE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := telegramtest.NewServer(t, botToken)
		h := startHerald(t, d, sessionEnv(map[string]string{
			"HERALD_TELEGRAM_BOT_TOKEN": botToken,
			"HERALD_TELEGRAM_API_URL":   fake.URL,
		}))
		admin := newAdminToken(t, h, "ops@example.com")
		user, userID := newUserToken(t, h, restDoor.name, "linked@example.com")
		toUser := func(channels ...string) result {
			t.Helper()
			vars := map[string]any{"id": userID, "n": notify("Your VPN", "Renews tomorrow", nil), "channels": channels}
			return gql(t, h, "sendNotificationToUser", linkDocs["sendNotificationToUser"], vars, withBearer(admin))
		}
		expectError(t, "link url without a token", gql(t, h, opLinkURL, linkDocs[opLinkURL], nil), http.StatusUnauthorized, "AUTH_REQUIRED")

		// No linked chat yet: the telegram channel has nobody to reach.
		r := toUser("telegram")
		expectOK(t, "send before linking", r, http.StatusOK)
		if jsonPath(r.data, "status") != "no_recipients" {
			t.Fatalf("send before linking = %v, want no_recipients", r.data)
		}

		token := linkToken(t, h, graphQLDoor.name, user)
		if reply := startAndReply(t, fake, 7001, "/start "+token); !strings.Contains(reply, "now linked") {
			t.Fatalf("confirmation %q, want the chat linked", reply)
		}
		if got := linkedUser(t, h, admin, 7001); got != userID {
			t.Fatalf("chat 7001 linked to %q, want %s", got, userID)
		}
		if s := subscriber(t, h, admin, 7001); s["startPayload"] != nil {
			t.Errorf("the link token was kept as the start payload: %v", s)
		}

		// The same token again, from another chat: used, nothing linked.
		if reply := startAndReply(t, fake, 7002, "/start "+token); !strings.Contains(reply, "already been used") {
			t.Fatalf("reused token answered %q", reply)
		}
		if got := linkedUser(t, h, admin, 7002); got != "" {
			t.Fatalf("a used token linked chat 7002 to %q", got)
		}

		// An expired token (stored as messengerLinkUrl stores one, 16
		// minutes ago): nothing linked.
		expired := "link-" + strings.Repeat("e", 43)
		sum := sha256.Sum256([]byte(expired))
		if err := h.store(t).CreateTelegramLinkToken(context.Background(), userID, hex.EncodeToString(sum[:]), time.Now().Add(-time.Minute)); err != nil {
			t.Fatal(err)
		}
		if reply := startAndReply(t, fake, 7003, "/start "+expired); !strings.Contains(reply, "expired") {
			t.Fatalf("expired token answered %q", reply)
		}
		if got := linkedUser(t, h, admin, 7003); got != "" {
			t.Fatalf("an expired token linked chat 7003 to %q", got)
		}
		// Plain /start still only subscribes.
		if reply := startAndReply(t, fake, 7006, "/start"); !strings.Contains(reply, "Welcome") {
			t.Fatalf("plain /start answered %q", reply)
		}

		// A link through REST from another chat moves the link there; a
		// group cannot use it first.
		token = linkToken(t, h, restDoor.name, user)
		group := textUpdate(0, -100500, "/start "+token)
		group.Message.Chat.Type, group.Message.Chat.Title = "group", "A group"
		fake.PushUpdate(group)
		eventually(t, func() bool { return len(fake.SentTo("-100500")) == 1 }, "the group got no answer")
		if reply := fake.SentTo("-100500")[0].Visible; !strings.Contains(reply, "private chat") {
			t.Fatalf("a link token in a group answered %q", reply)
		}
		if got := linkedUser(t, h, admin, -100500); got != "" {
			t.Fatalf("a group was linked to %q", got)
		}
		if reply := startAndReply(t, fake, 7004, "/start "+token); !strings.Contains(reply, "now linked") {
			t.Fatalf("relink answered %q", reply)
		}
		if a, b := linkedUser(t, h, admin, 7001), linkedUser(t, h, admin, 7004); a != "" || b != userID {
			t.Fatalf("after relinking 7001 is linked to %q and 7004 to %q, want only 7004", a, b)
		}

		// The telegram channel reaches the linked chat.
		before := len(fake.SentTo("7004"))
		r = toUser("push", "telegram")
		expectOK(t, "send to the linked chat", r, http.StatusOK)
		outs, _ := jsonPath(r.data, "outcomes").([]any)
		if jsonPath(r.data, "status") != "sent" || len(outs) != 1 || jsonPath(outs[0], "chatId") != "7004" ||
			jsonPath(outs[0], "status") != "sent" || jsonPath(outs[0], "channel") != "telegram" || jsonPath(outs[0], "deviceId") != nil {
			t.Fatalf("send to the linked chat = %v, want one sent telegram outcome for chat 7004", r.data)
		}
		sent := fake.SentTo("7004")
		if len(sent) != before+1 || sent[before].Visible != "Your VPN\n\nRenews tomorrow" {
			t.Fatalf("the chat got %+v, want the subject and content", sent[before:])
		}
		// Through REST as well, in the envelope the OpenAPI document describes.
		key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "sender", "scopes": []string{"notifications:send"}})
		rr := restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+userID,
			map[string]any{"notification": notify("Again", "Hello", nil), "channels": []string{"telegram"}}, withAPIKey(key))
		expectOK(t, "REST send to the linked chat", rr, http.StatusOK)
		if outs, _ := jsonPath(rr.data, "outcomes").([]any); len(outs) != 1 || jsonPath(outs[0], "chatId") != "7004" {
			t.Fatalf("REST send = %v", rr.data)
		}

		// /stop unlinks.
		if reply := startAndReply(t, fake, 7004, "/stop"); !strings.Contains(reply, "unsubscribed") {
			t.Fatalf("/stop answered %q", reply)
		}
		if got := linkedUser(t, h, admin, 7004); got != "" {
			t.Fatalf("/stop left chat 7004 linked to %q", got)
		}
		if r = toUser("telegram"); jsonPath(r.data, "status") != "no_recipients" {
			t.Fatalf("send after /stop = %v, want no_recipients", r.data)
		}

		// A chat that blocked the bot answers blocked, and is marked so.
		token = linkToken(t, h, graphQLDoor.name, user)
		startAndReply(t, fake, 7005, "/start "+token)
		fake.FailChat("7005", telegramtest.FailBlocked())
		r = toUser("telegram")
		outs, _ = jsonPath(r.data, "outcomes").([]any)
		if jsonPath(r.data, "status") != "failed" || len(outs) != 1 || jsonPath(outs[0], "status") != "blocked" || jsonPath(outs[0], "error") != "CHAT_BLOCKED" {
			t.Fatalf("send to a blocked chat = %v, want one blocked outcome", r.data)
		}
		if s := subscriber(t, h, admin, 7005); s["status"] != "blocked" {
			t.Fatalf("chat 7005 is %v, want blocked", s)
		}
		fake.ClearFailures()

		// unlinkMessenger (GraphQL) and DELETE (REST) unlink; twice is false.
		token = linkToken(t, h, restDoor.name, user)
		startAndReply(t, fake, 7006, "/start "+token)
		r = gql(t, h, opUnlink, linkDocs[opUnlink], nil, withBearer(user))
		if expectOK(t, "unlinkMessenger", r, http.StatusOK); r.data != true {
			t.Fatalf("unlinkMessenger = %v, want true", r.data)
		}
		if got := linkedUser(t, h, admin, 7006); got != "" {
			t.Fatalf("unlinkMessenger left chat 7006 linked to %q", got)
		}
		rr = restCall(t, h, http.MethodDelete, linkPath, nil, withBearer(user))
		if expectOK(t, "DELETE messenger-link", rr, http.StatusOK); jsonPath(rr.data, "unlinked") != false {
			t.Fatalf("second unlink = %v, want unlinked false", rr.data)
		}
		if s := subscriber(t, h, admin, 7006); s["status"] != "subscribed" {
			t.Fatalf("unlinking unsubscribed chat 7006: %v", s)
		}
	})
}
