package main

// The email channel of sends to a user (issue 26) end to end, on both
// databases and both doors: a send with channel email is a queued job
// whose email reaches the harness's SMTP server in the account's locale,
// with the one-click unsubscribe link and RFC 8058's headers for a
// product send and without them for a billing one. The link's GET page
// changes nothing; its one-click POST turns product email off once; a
// second use and a tampered token are refused with their codes; the next
// product email is skipped (optedOut), as is a category the user turned
// off in the preferences; an account without a verified address gets no
// email.

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const emailPublicURL = "https://api.example.test"

var (
	unsubscribeLink = regexp.MustCompile(regexp.QuoteMeta(emailPublicURL) + `/api/v1/notifications/unsubscribe\?token=[A-Za-z0-9%._-]+`)
	emailSendDoc    = `mutation ($id: ID!, $n: NotificationInput!, $c: String, $ch: [String!]) {
  sendNotificationToUser(userId: $id, notification: $n, category: $c, channels: $ch) { userId status message skipped { optedOut } outcomes { deviceId platform channel status } } }`
)

// sendByEmail sends n to userID on channels through the door dn.
func sendByEmail(t *testing.T, f *sendsFixture, dn, userID, category string, n map[string]any, channels ...string) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, f.h, "sendNotificationToUser", emailSendDoc, map[string]any{"id": userID, "n": n, "c": category, "ch": channels}, withBearer(f.admin))
	}
	return restCall(t, f.h, http.MethodPost, "/api/v1/notifications/users/"+userID, map[string]any{"notification": n, "category": category, "channels": channels}, withAPIKey(f.key))
}

// emailJobs counts the notification_email jobs of accountID with
// subject, read from the server's database.
func emailJobs(t *testing.T, h *herald, d sqlstoretest.Dialect, accountID, subject string) int {
	t.Helper()
	db := h.store(t)
	var n int
	var err error
	if d == "postgres" {
		err = db.Pool().QueryRow(context.Background(), `SELECT COUNT(*) FROM river_job WHERE kind = 'notification_email' AND args->>'account_id' = $1 AND args->>'subject' = $2`, accountID, subject).Scan(&n)
	} else {
		err = db.SQL().QueryRowContext(context.Background(), `SELECT COUNT(*) FROM river_job WHERE kind = 'notification_email' AND json_extract(args, '$.account_id') = ? AND json_extract(args, '$.subject') = ?`, accountID, subject).Scan(&n)
	}
	if err != nil {
		t.Fatalf("counting the email jobs of %s: %v", accountID, err)
	}
	return n
}

// emailOutcome is the send's outcome of channel email, nil when none.
func emailOutcome(t *testing.T, r result) map[string]any {
	t.Helper()
	list, _ := jsonPath(r.data, "outcomes").([]any)
	for _, o := range list {
		if m, _ := o.(map[string]any); m["channel"] == "email" {
			return m
		}
	}
	return nil
}

// oneClick posts RFC 8058's one-click body to the link's path.
func oneClick(t *testing.T, h *herald, link string) result {
	t.Helper()
	return restCall(t, h, http.MethodPost, strings.TrimPrefix(link, emailPublicURL), "List-Unsubscribe=One-Click",
		withHeader("Content-Type", "application/x-www-form-urlencoded"))
}

// oneClickMultipart posts the one-click body as multipart/form-data, the
// other encoding RFC 8058 allows.
func oneClickMultipart(t *testing.T, h *herald, link string) result {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.WriteField("List-Unsubscribe", "One-Click"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return restCall(t, h, http.MethodPost, strings.TrimPrefix(link, emailPublicURL), b.Bytes(), withHeader("Content-Type", w.FormDataContentType()))
}

func TestEmailChannelE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_PUBLIC_URL": emailPublicURL})
		h := f.h
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				email := "mailed-" + dn + "@example.com"
				access, userID := newUserToken(t, h, dn, email)
				mustRegister(t, h, dn, access, "android", dn+"-mailed-phone", "")
				// The REST door's user reads German; the GraphQL door's the default.
				locale, unsubscribeWords := "en", "To stop them"
				if dn == restDoor.name {
					locale, unsubscribeWords = "de", "abzubestellen"
					expectOK(t, "set the locale", restCall(t, h, http.MethodPut, "/api/v1/users/me/locale", map[string]any{"locale": "de"}, withBearer(access)), http.StatusOK)
				}
				mails := 1 // the verification code's

				// A product send on push and email: the email is queued.
				r := sendByEmail(t, f, dn, userID, "product", notify("Winter sale", "Half price\nfor a week", nil), "push", "email")
				expectOK(t, "a product send by email", r, http.StatusOK)
				o := emailOutcome(t, r)
				if jsonPath(r.data, "status") != "sent" || o == nil || o["status"] != "queued" || o["platform"] != "email" || len(jsonPath(r.data, "outcomes").([]any)) != 2 {
					t.Fatalf("a product send on push and email = %v; want sent, with the email queued", r.data)
				}
				mails++
				m := h.SMTP.WaitForMessages(t, email, mails, mailWait)[mails-1]
				if m.ParseErr != nil {
					t.Fatal(m.ParseErr)
				}
				if m.Subject != "Winter sale" || !strings.Contains(m.Text, "Half price\nfor a week") || !strings.Contains(m.HTML, "Half price") || !strings.Contains(m.Text, unsubscribeWords) {
					t.Fatalf("the %s email: subject %q\n%s\n%s", locale, m.Subject, m.Text, m.HTML)
				}
				link := unsubscribeLink.FindString(m.Text)
				if link == "" || !strings.Contains(m.HTML, link) {
					t.Fatalf("the product email has no unsubscribe link under %s in both parts:\n%s\n%s", emailPublicURL, m.Text, m.HTML)
				}
				if got := m.Header.Get("List-Unsubscribe"); got != "<"+link+">" {
					t.Fatalf("List-Unsubscribe %q, want <%s>", got, link)
				}
				if got := m.Header.Get("List-Unsubscribe-Post"); got != "List-Unsubscribe=One-Click" {
					t.Fatalf("List-Unsubscribe-Post %q, want List-Unsubscribe=One-Click", got)
				}

				// A billing send: neither link nor headers.
				r = sendByEmail(t, f, dn, userID, "billing", notify("Payment failed", "Update your card.", nil), "email")
				expectOK(t, "a billing send by email", r, http.StatusOK)
				if o := emailOutcome(t, r); jsonPath(r.data, "status") != "sent" || o == nil || o["status"] != "queued" {
					t.Fatalf("a billing send by email = %v", r.data)
				}
				mails++
				m = h.SMTP.WaitForMessages(t, email, mails, mailWait)[mails-1]
				if m.Subject != "Payment failed" || !strings.Contains(m.Text, "Update your card.") {
					t.Fatalf("the billing email: %q\n%s", m.Subject, m.Text)
				}
				if m.Header.Get("List-Unsubscribe") != "" || m.Header.Get("List-Unsubscribe-Post") != "" || strings.Contains(m.Text, "/unsubscribe") || strings.Contains(m.HTML, "/unsubscribe") {
					t.Fatalf("the billing email offers to unsubscribe: %v\n%s", m.Header, m.Text)
				}

				productEmail := func() bool {
					t.Helper()
					r := preferencesOp(t, h, dn, "myNotificationPreferences", "", nil, access)
					expectOK(t, "read preferences", r, http.StatusOK)
					return channelOf(t, r.data, "product", "email")
				}

				// Opening the link shows a page and changes nothing.
				path := strings.TrimPrefix(link, emailPublicURL)
				status, hdr, body := h.do(t, http.MethodGet, path, nil)
				if status != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") || !strings.Contains(string(body), `name="List-Unsubscribe" value="One-Click"`) || !strings.Contains(string(body), "product") {
					t.Fatalf("GET the link: %d %s\n%s", status, hdr.Get("Content-Type"), body)
				}
				if !productEmail() {
					t.Fatal("opening the unsubscribe link turned product email off")
				}

				// A tampered token is refused and changes nothing.
				u, _ := url.Parse(link)
				tok := u.Query().Get("token")
				payload, mac, _ := strings.Cut(tok, ".")
				flipped := "A"
				if mac[0] == 'A' {
					flipped = "B"
				}
				r = oneClick(t, h, emailPublicURL+"/api/v1/notifications/unsubscribe?token="+url.QueryEscape(payload+"."+flipped+mac[1:]))
				expectError(t, "a tampered token", r, http.StatusBadRequest, "UNSUBSCRIBE_LINK_INVALID")
				if r.details["reason"] != "signature" {
					t.Fatalf("a tampered token: details %v, want reason signature", r.details)
				}
				r = oneClick(t, h, emailPublicURL+"/api/v1/notifications/unsubscribe?token=not-a-token")
				expectError(t, "a malformed token", r, http.StatusBadRequest, "UNSUBSCRIBE_LINK_INVALID")
				r = restCall(t, h, http.MethodPost, path, "something=else", withHeader("Content-Type", "application/x-www-form-urlencoded"))
				expectError(t, "a post without the one-click body", r, http.StatusBadRequest, "VALIDATION_ERROR")
				r = restCall(t, h, http.MethodPost, path, "List-Unsubscribe=One-Click&pad="+strings.Repeat("a", 5000), withHeader("Content-Type", "application/x-www-form-urlencoded"))
				expectError(t, "a post of 5 kB", r, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
				if !productEmail() {
					t.Fatal("a refused unsubscribe turned product email off")
				}

				// One click turns product email off, once (urlencoded on
				// one door's run, multipart on the other's).
				if dn == graphQLDoor.name {
					r = oneClickMultipart(t, h, link)
				} else {
					r = oneClick(t, h, link)
				}
				expectOK(t, "one-click unsubscribe", r, http.StatusOK)
				if jsonPath(r.data, "category") != "product" || jsonPath(r.data, "channel") != "email" || jsonPath(r.data, "enabled") != false {
					t.Fatalf("one-click unsubscribe = %v", r.data)
				}
				if productEmail() {
					t.Fatal("product email is still on after the one-click unsubscribe")
				}
				r = preferencesOp(t, h, dn, "myNotificationPreferences", "", nil, access)
				if !channelOf(t, r.data, "product", "push") || !channelOf(t, r.data, "service", "email") {
					t.Fatalf("the unsubscribe turned off more than product email: %v", r.data)
				}
				expectError(t, "the link used again", oneClick(t, h, link), http.StatusBadRequest, "UNSUBSCRIBE_LINK_USED")

				// The next product email is skipped, and counted.
				r = sendByEmail(t, f, dn, userID, "product", notify("Spring sale", "Again", nil), "email")
				expectOK(t, "a product send after the unsubscribe", r, http.StatusOK)
				if jsonPath(r.data, "status") != "no_recipients" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 1 || emailOutcome(t, r) != nil {
					t.Fatalf("a product email to a user who unsubscribed = %v", r.data)
				}
				// A category turned off in the preferences: no email either.
				expectOK(t, "turn messages email off", preferencesOp(t, h, dn, "updateMyNotificationPreferences", "", []map[string]any{setting("messages", "email", false)}, access), http.StatusOK)
				r = sendByEmail(t, f, dn, userID, "messages", notify("New message", "Hi", nil), "push", "email")
				expectOK(t, "a messages send", r, http.StatusOK)
				if jsonPath(r.data, "status") != "sent" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 1 || emailOutcome(t, r) != nil {
					t.Fatalf("a messages send to a user who turned its email off = %v", r.data)
				}
				// The same send twice under one idempotency key queues one
				// job; the answer is the first again.
				for i := range 2 {
					var r result
					if dn == graphQLDoor.name {
						r = gql(t, h, "sendNotificationToUser", strings.NewReplacer("$ch: [String!])", "$ch: [String!], $k: String)", "channels: $ch)", "channels: $ch, idempotencyKey: $k)").Replace(emailSendDoc),
							map[string]any{"id": userID, "n": notify("Once", "Only once", nil), "c": "security", "ch": []string{"email"}, "k": "once-" + dn}, withBearer(f.admin))
					} else {
						r = restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+userID, map[string]any{"notification": notify("Once", "Only once", nil), "category": "security", "channels": []string{"email"}},
							withAPIKey(f.key), withHeader("Idempotency-Key", "once-"+dn))
					}
					expectOK(t, "an idempotent email send", r, http.StatusOK)
					if o := emailOutcome(t, r); o == nil || o["status"] != "queued" {
						t.Fatalf("send %d under one key = %v", i+1, r.data)
					}
				}
				if n := emailJobs(t, h, d, userID, "Once"); n != 1 {
					t.Fatalf("two sends under one idempotency key queued %d email jobs, want 1", n)
				}
				mails++
				if m := h.SMTP.WaitForMessages(t, email, mails, mailWait)[mails-1]; m.Subject != "Once" || m.Header.Get("List-Unsubscribe") != "" {
					t.Fatalf("the security email: %q, List-Unsubscribe %q", m.Subject, m.Header.Get("List-Unsubscribe"))
				}

				// A service email still goes out: it is the last one.
				expectOK(t, "a service send", sendByEmail(t, f, dn, userID, "service", notify("Maintenance", "Tonight", nil), "email"), http.StatusOK)
				mails++
				msgs := h.SMTP.WaitForMessages(t, email, mails, mailWait)
				if got := msgs[len(msgs)-1].Subject; got != "Maintenance" || len(msgs) != mails {
					t.Fatalf("%d emails, the last %q; want %d, the last the service one (no product or messages email)", len(msgs), got, mails)
				}

				// The page's button: the same post with the field page,
				// answered with the page.
				link = unsubscribeLink.FindString(msgs[len(msgs)-1].Text)
				pagePost := func() (int, string) {
					status, hdr, body := h.do(t, http.MethodPost, strings.TrimPrefix(link, emailPublicURL), "List-Unsubscribe=One-Click&page=1",
						withHeader("Content-Type", "application/x-www-form-urlencoded"))
					if !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
						t.Fatalf("the page's post answered %s, want the page", hdr.Get("Content-Type"))
					}
					return status, string(body)
				}
				if status, body := pagePost(); status != http.StatusOK || !strings.Contains(body, "Unsubscribed") || !strings.Contains(body, "service") {
					t.Fatalf("the page's button: %d\n%s", status, body)
				}
				r = preferencesOp(t, h, dn, "myNotificationPreferences", "", nil, access)
				if channelOf(t, r.data, "service", "email") {
					t.Fatal("service email is still on after the page's button")
				}
				if status, body := pagePost(); status != http.StatusBadRequest || !strings.Contains(body, "Not unsubscribed") || !strings.Contains(body, "used already") {
					t.Fatalf("the page's button again: %d\n%s", status, body)
				}
			})
		}

		// A user who turned product email off in the preferences gets no
		// product email: nothing is queued, the skip is counted.
		offAccess, offID := newUserToken(t, h, restDoor.name, "product-off@example.com")
		h.SMTP.WaitForMessages(t, "product-off@example.com", 1, mailWait) // the verification code's
		expectOK(t, "turn product email off", preferencesOp(t, h, restDoor.name, "updateMyNotificationPreferences", "", []map[string]any{setting("product", "email", false)}, offAccess), http.StatusOK)
		r := sendByEmail(t, f, restDoor.name, offID, "product", notify("Winter sale", "Half price", nil), "email")
		expectOK(t, "a product email to a user who turned it off", r, http.StatusOK)
		if jsonPath(r.data, "status") != "no_recipients" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 1 || emailJobs(t, h, d, offID, "Winter sale") != 0 {
			t.Fatalf("a product email to a user who turned it off = %v (%d jobs)", r.data, emailJobs(t, h, d, offID, "Winter sale"))
		}

		// An account without a verified address gets no email: the send
		// has no email outcome and, with nothing else, no recipients.
		signup(t, h, restDoor, "unverified@example.com", testPassword)
		h.SMTP.WaitForMessages(t, "unverified@example.com", 1, mailWait) // the verification code's
		unverified := h.account(t, "unverified@example.com")
		r = sendByEmail(t, f, restDoor.name, unverified.ID, "product", notify("Hello", "There", nil), "email")
		expectOK(t, "an email to an unverified account", r, http.StatusOK)
		if jsonPath(r.data, "status") != "no_recipients" || emailOutcome(t, r) != nil || !strings.Contains(jsonPath(r.data, "message").(string), "no verified email address") {
			t.Fatalf("an email to an unverified account = %v", r.data)
		}
		if n := emailJobs(t, h, d, unverified.ID, "Hello"); n != 0 {
			t.Fatalf("an email to an unverified account queued %d jobs, want none", n)
		}
		if n := h.SMTP.Count("unverified@example.com"); n != 1 {
			t.Fatalf("the unverified account got %d emails, want its verification code's alone", n)
		}
	})
}
