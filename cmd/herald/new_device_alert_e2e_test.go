package main

// The new-device alert end to end (internal/securityalert): a user with a
// phone (the FCM fake) and a linked Telegram chat (the Bot API fake)
// signs in, signs in again from the same device (no alert), then from
// another browser and network: an email (the harness's SMTP server), a
// push and a Telegram message each name the IP and the device and carry
// the link that ends that session. The email's link ends exactly that
// session, once; a tampered link is 400.

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const (
	alertPublicURL = "https://api.example.test"
	alertIP        = "203.0.113.77"
	alertUA        = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36"
)

var endLink = regexp.MustCompile(regexp.QuoteMeta(alertPublicURL) + `/api/v1/auth/sessions/end\?token=[A-Za-z0-9%._-]+`)

// newDeviceEntries counts the account's new_device_sign_in entries.
func newDeviceEntries(t *testing.T, h *herald, accountID string) int {
	t.Helper()
	evs, err := h.store(t).SecurityEvents(t.Context(), accountID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == securitylog.NewDeviceSignIn {
			n++
		}
	}
	return n
}

func TestNewDeviceAlertE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fcm := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		tg := telegramtest.NewServer(t, botToken)
		h := startHerald(t, d, pushEnv(t, fcm, fcm.URL, map[string]string{
			"HERALD_PUBLIC_URL":         alertPublicURL,
			"HERALD_TRUSTED_PROXIES":    "127.0.0.1/32",
			"HERALD_TELEGRAM_BOT_TOKEN": botToken,
			"HERALD_TELEGRAM_API_URL":   tg.URL,
		}))
		const email, phone, chat = "alerted@example.com", "alerted-phone", int64(8101)

		// The first sign-in (newUserToken's) is no new device: the
		// account had none before.
		access, id := newUserToken(t, h, restDoor.name, email)
		mustRegister(t, h, restDoor.name, access, "android", phone, "Pixel")
		if reply := startAndReply(t, tg, chat, "/start "+linkToken(t, h, restDoor.name, access)); !strings.Contains(reply, "now linked") {
			t.Fatalf("linking the chat: %q", reply)
		}
		chatMsgs := len(tg.SentTo(fmt.Sprint(chat)))

		// Again from the same device: no alert.
		same := login(t, h, restDoor.name, email, testPassword)
		if n := newDeviceEntries(t, h, id); n != 0 {
			t.Fatalf("%d new_device_sign_in entries after two sign-ins from one device, want 0", n)
		}

		// From another browser and network: the alert.
		fresh := login(t, h, restDoor.name, email, testPassword, withHeader("User-Agent", alertUA), withHeader("X-Forwarded-For", alertIP))
		if n := newDeviceEntries(t, h, id); n != 1 {
			t.Fatalf("%d new_device_sign_in entries after a sign-in from a new device, want 1", n)
		}

		// Email: the verification code's, then the alert.
		msgs := h.SMTP.WaitForMessages(t, email, 2, mailWait)
		if len(msgs) != 2 {
			t.Fatalf("%d emails to %s, want the verification and the alert", len(msgs), email)
		}
		m := msgs[1]
		if m.ParseErr != nil {
			t.Fatal(m.ParseErr)
		}
		for _, w := range []string{alertIP, alertUA} {
			if !strings.Contains(m.Text, w) || !strings.Contains(m.HTML, w) {
				t.Fatalf("the alert email lacks %q:\n%s\n%s", w, m.Text, m.HTML)
			}
		}
		link := endLink.FindString(m.Text)
		if link == "" || !strings.Contains(m.HTML, link) {
			t.Fatalf("the alert email has no end-session link under %s in both parts:\n%s\n%s", alertPublicURL, m.Text, m.HTML)
		}

		// Push, to the phone.
		var pushes []fcmtest.Message
		testsupport.Eventually(t, mailWait, func() bool { pushes = fcm.MessagesFor(phone); return len(pushes) >= 1 }, "no push to %s", phone)
		p := pushes[0]
		if !strings.Contains(p.Body, alertIP) || !strings.Contains(p.Body, alertUA) || p.Data["type"] != "security" ||
			p.Data["event"] != "new_device_sign_in" || p.Data["ip"] != alertIP || p.Data["endSessionUrl"] != link {
			t.Fatalf("push %q / %q data %v, want the IP, the device and the link %s", p.Title, p.Body, p.Data, link)
		}

		// Telegram, to the linked chat.
		testsupport.Eventually(t, mailWait, func() bool { return len(tg.SentTo(fmt.Sprint(chat))) > chatMsgs }, "no Telegram message to chat %d", chat)
		tm := tg.SentTo(fmt.Sprint(chat))[chatMsgs]
		if !strings.Contains(tm.Visible, alertIP) || !strings.Contains(tm.Visible, alertUA) || !strings.Contains(tm.Visible, link) {
			t.Fatalf("Telegram message %q, want the IP, the device and the link %s", tm.Visible, link)
		}

		// Each channel told once: the sign-ins before sent nothing.
		time.Sleep(500 * time.Millisecond)
		if n := len(h.SMTP.WaitForMessages(t, email, 2, mailWait)); n != 2 {
			t.Fatalf("%d emails to %s, want 2", n, email)
		}
		if n := len(fcm.MessagesFor(phone)); n != 1 {
			t.Fatalf("%d pushes to %s, want 1", n, phone)
		}
		if n := len(tg.SentTo(fmt.Sprint(chat))); n != chatMsgs+1 {
			t.Fatalf("%d Telegram messages after linking, want 1", n-chatMsgs)
		}

		// The link ends that session, and only it.
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		path := u.Path + "?" + u.RawQuery
		status, hdr, body := h.do(t, http.MethodGet, path, nil)
		if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "The session is ended") {
			t.Fatalf("following the link: %d %s\n%s", status, hdr.Get("Content-Type"), body)
		}
		expectError(t, "refresh of the ended session", call(t, h, restDoor.name, opRefresh, map[string]any{"refreshToken": fresh.refresh}), http.StatusUnauthorized, "TOKEN_INVALID")
		expectOK(t, "refresh of the other session", call(t, h, restDoor.name, opRefresh, map[string]any{"refreshToken": same.refresh}), http.StatusOK)
		evs, err := h.store(t).SecurityEvents(t.Context(), id, "", 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].Kind != securitylog.SessionRevoked || evs[0].Detail["sessionId"] == "" {
			t.Fatalf("the newest security-log entry %+v, want session_revoked of the session", evs)
		}

		// A second time: already ended (the page, and the envelope for JSON).
		status, hdr, body = h.do(t, http.MethodGet, path, nil)
		if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "had already ended") {
			t.Fatalf("following the link again: %d %s\n%s", status, hdr.Get("Content-Type"), body)
		}
		again := restCall(t, h, http.MethodGet, path, nil, withHeader("Accept", "application/json"))
		expectOK(t, "the link again, as JSON", again, http.StatusOK)
		if ended := jsonPath(again.data, "ended"); ended != false {
			t.Fatalf("the link again, as JSON: ended %v, want false", ended)
		}

		// A tampered token: 400, a page for a browser, the envelope for JSON.
		// (The first character: it carries six bits of the account id,
		// where the MAC's last one carries padding bits a decoder drops.)
		tok := u.Query().Get("token")
		swap := "A"
		if tok[0] == 'A' {
			swap = "B"
		}
		bad := u.Path + "?token=" + url.QueryEscape(swap+tok[1:])
		status, hdr, body = h.do(t, http.MethodGet, bad, nil)
		if status != http.StatusBadRequest || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), "not valid") {
			t.Fatalf("a tampered link: %d %s\n%s", status, hdr.Get("Content-Type"), body)
		}
		expectError(t, "a tampered link, as JSON", restCall(t, h, http.MethodGet, bad, nil, withHeader("Accept", "application/json")), http.StatusBadRequest, "VALIDATION_ERROR")
		expectOK(t, "the other session still works", me(t, h, restDoor.name, access), http.StatusOK)
	})
}
