package main

// The lifecycle notices of store purchases end to end (internal/billing/
// notices): a failed renewal, an expiry and a refund told by the App Store
// (its fake), and a trial that the billing sweep finds ending within three
// days, reach the account's owner by push (the FCM fake), by email (the
// harness's SMTP server) and by Telegram (the Bot API fake), in the
// owner's language, with the App Store's renew link and the code an app
// shows its screen for.

import (
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/billing/appstore/appstorefake"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/herald-vpn/herald/internal/webhooks"
)

const (
	noticeProduct = "Acme VPN"
	// sweepWait bounds the wait for the billing sweep, a periodic job
	// that first runs a minute after the server starts.
	sweepWait = 3 * time.Minute
)

// noticeWant is one notice as every channel must say it.
type noticeWant struct {
	event  string // subscriptions.Event… or trial_ending
	locale string
	plan   string
	date   time.Time // zero: none
	code   string    // "" for none
	// words the email's text must hold, in its language
	words []string
}

// noticeUser is an account that gets notices, and what it got so far.
type noticeUser struct {
	email, access, id string
	pushToken         string
	chat              int64 // 0: no linked chat
	emails, pushes    int   // so far, the verification email included
	chats             int   // messages to the chat so far
}

// expectNotice waits for the next notice on each channel the user has and
// checks it says want; no channel has more than that one.
func expectNotice(t *testing.T, h *herald, fcm *fcmtest.Server, tg *telegramtest.Server, u *noticeUser, want noticeWant, limit time.Duration) {
	t.Helper()
	title, body, ok := texts.Notice(want.event, want.locale, texts.NoticeVars{Product: noticeProduct, Plan: want.plan, Date: want.date})
	if !ok {
		t.Fatalf("no texts for %s", want.event)
	}

	// Email.
	u.emails++
	msgs := h.SMTP.WaitForMessages(t, u.email, u.emails, limit)
	if len(msgs) != u.emails {
		t.Fatalf("%s: %d emails to %s, want %d", want.event, len(msgs), u.email, u.emails)
	}
	m := msgs[len(msgs)-1]
	if m.ParseErr != nil {
		t.Fatalf("%s email: %v", want.event, m.ParseErr)
	}
	words := append([]string{noticeProduct, want.plan, appleRenewURL}, want.words...)
	if !want.date.IsZero() {
		layout := map[string]string{"de": "02.01.2006"}[want.locale]
		if layout == "" {
			layout = "January 2, 2006"
		}
		words = append(words, want.date.Format(layout))
	}
	for _, w := range words {
		if !strings.Contains(m.Text, w) {
			t.Fatalf("%s email's text lacks %q:\n%s", want.event, w, m.Text)
		}
	}
	if !strings.Contains(m.Subject, noticeProduct) || !strings.Contains(m.HTML, `href="`+appleRenewURL+`"`) || strings.Contains(m.Text, appleOtherRenewURL) {
		t.Fatalf("%s email: subject %q, want the product; HTML with the App Store's renew link:\n%s", want.event, m.Subject, m.HTML)
	}

	// Push.
	u.pushes++
	var got []fcmtest.Message
	testsupport.Eventually(t, limit, func() bool { got = fcm.MessagesFor(u.pushToken); return len(got) >= u.pushes },
		"%s: %d pushes to %s, want %d", want.event, len(fcm.MessagesFor(u.pushToken)), u.pushToken, u.pushes)
	if len(got) != u.pushes {
		t.Fatalf("%s: %d pushes to %s, want %d", want.event, len(got), u.pushToken, u.pushes)
	}
	p := got[len(got)-1]
	data := map[string]string{"type": "subscription", "event": want.event, "plan": want.plan, "renewUrl": appleRenewURL}
	if want.code != "" {
		data["code"] = want.code
	}
	if p.Title != title || p.Body != body || !reflect.DeepEqual(p.Data, data) {
		t.Fatalf("%s push: %q / %q data %v\nwant %q / %q data %v", want.event, p.Title, p.Body, p.Data, title, body, data)
	}

	// Telegram.
	if u.chat == 0 {
		return
	}
	u.chats++
	chat := fmt.Sprint(u.chat)
	testsupport.Eventually(t, limit, func() bool { return len(tg.SentTo(chat)) >= u.chats },
		"%s: %d messages to chat %s, want %d", want.event, len(tg.SentTo(chat)), chat, u.chats)
	sent := tg.SentTo(chat)
	if len(sent) != u.chats {
		t.Fatalf("%s: %d messages to chat %s, want %d", want.event, len(sent), chat, u.chats)
	}
	if text := title + "\n\n" + body + "\n\n" + appleRenewURL; sent[len(sent)-1].Visible != text {
		t.Fatalf("%s Telegram message %q, want %q", want.event, sent[len(sent)-1].Visible, text)
	}
}

func TestBillingNoticesE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fcm := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		tg := telegramtest.NewServer(t, botToken)
		store := appstorefake.New(t, appleBundle)
		env := pushEnv(t, fcm, fcm.URL, map[string]string{
			"HERALD_PRODUCT_NAME":       noticeProduct,
			"HERALD_TELEGRAM_BOT_TOKEN": botToken,
			"HERALD_TELEGRAM_API_URL":   tg.URL,
		})
		maps.Copy(env, appleConfig(t, store, true))
		h := startHerald(t, d, env)
		r := &appleRig{h: h, fake: store, api: true}
		// Whole days at noon UTC: a notice's date reads the same in any
		// zone within twelve hours of UTC.
		noon := time.Now().UTC().Truncate(day).Add(12 * time.Hour)
		on := appstorefake.RenewalFields{AutoRenewStatus: 1}
		tell := func(what string, status int, typ, subtype string, tx appstorefake.TransactionFields, renewal appstorefake.RenewalFields) {
			t.Helper()
			r.fake.SetSubscription(status, tx, renewal)
			id := uuid.NewString()
			r.deliver(t, what, r.fake.NotificationWithUUID(id, typ, subtype, tx, renewal))
			if n := r.processed(t, id); !strings.HasPrefix(n.Outcome, "recorded: ") {
				t.Fatalf("%s: worked %q, want it recorded", what, n.Outcome)
			}
		}

		// Lee, who reads German, starts a free trial in the App Store that
		// ends in two days: the sweep, a minute after the start, tells her.
		// Her notice is checked last, while the other notices go out.
		lee := &noticeUser{email: "lee@example.com", pushToken: "lee-phone", emails: 1}
		lee.access, lee.id = newUserToken(t, h, restDoor.name, lee.email)
		expectOK(t, "lee's locale", restCall(t, h, http.MethodPut, "/api/v1/users/me/locale", map[string]any{"locale": "de"}, withBearer(lee.access)), http.StatusOK)
		mustRegister(t, h, restDoor.name, lee.access, "android", lee.pushToken, "Pixel")
		trial := appstorefake.TransactionFields{
			OriginalTransactionID: "9000000000000001", ProductID: appleBasic, AppAccountToken: lee.id, OfferType: 1, OfferDiscountType: "FREE_TRIAL",
			OriginalPurchaseDate: time.Now().Add(-time.Hour), ExpiresDate: noon.Add(2 * day),
		}
		tell("lee's free trial", appstorefake.StatusActive, "SUBSCRIBED", "INITIAL_BUY", trial, on)
		sub := mySubscription(t, h, lee.access)
		expectOK(t, "lee's subscription", sub, http.StatusOK)
		if !slices.ContainsFunc(asObjects(t, jsonPath(sub.data, "entitlements")), func(e map[string]any) bool {
			return e["source"] == "app_store" && e["state"] == "trial"
		}) {
			t.Fatalf("lee's entitlements %v, want an App Store trial", jsonPath(sub.data, "entitlements"))
		}

		// Kim has a phone and a linked Telegram chat.
		kim := &noticeUser{email: "kim@example.com", pushToken: "kim-phone", chat: 8001, emails: 1, chats: 1}
		kim.access, kim.id = newUserToken(t, h, restDoor.name, kim.email)
		mustRegister(t, h, restDoor.name, kim.access, "android", kim.pushToken, "Pixel")
		if reply := startAndReply(t, tg, kim.chat, "/start "+linkToken(t, h, restDoor.name, kim.access)); !strings.Contains(reply, "now linked") {
			t.Fatalf("linking kim's chat: %q", reply)
		}

		tx := func(id string, ago, period time.Duration) appstorefake.TransactionFields {
			return appstorefake.TransactionFields{
				OriginalTransactionID: "9100000000000001", TransactionID: id, ProductID: appleBasic, AppAccountToken: kim.id,
				OriginalPurchaseDate: time.Now().Add(-time.Hour), PurchaseDate: time.Now().Add(-ago), ExpiresDate: noon.Add(period),
			}
		}
		first := tx("9100000000000001", 50*time.Minute, 30*day)
		recovered := tx("9100000000000002", 40*time.Minute, 60*day)
		offer := tx("9100000000000003", 30*time.Minute, 90*day)
		offer.OfferType = 3
		refunded := offer
		refunded.RevocationDate, refunded.RevocationReason = time.Now().Add(-time.Minute), new(int)
		grace := noon.Add(46 * day)
		for _, s := range []struct {
			name         string
			status       int
			typ, subtype string
			tx           appstorefake.TransactionFields
			renewal      appstorefake.RenewalFields
			notice       *noticeWant
		}{
			{"bought", appstorefake.StatusActive, "SUBSCRIBED", "INITIAL_BUY", first, on, nil},
			{"renewal fails, in grace", appstorefake.StatusGrace, "DID_FAIL_TO_RENEW", "GRACE_PERIOD", first,
				appstorefake.RenewalFields{AutoRenewStatus: 1, IsInBillingRetryPeriod: true, GracePeriodExpiresDate: grace},
				&noticeWant{event: webhooks.SubscriptionPaymentFailed, plan: "basic", date: grace, code: "PAYMENT_FAILED", words: []string{"payment failed", "Update"}}},
			{"billing recovers", appstorefake.StatusActive, "DID_RENEW", "BILLING_RECOVERY", recovered, on, nil},
			{"expired", appstorefake.StatusExpired, "EXPIRED", "VOLUNTARY", recovered, appstorefake.RenewalFields{ExpirationIntent: 1},
				&noticeWant{event: webhooks.SubscriptionExpired, plan: "basic", date: recovered.ExpiresDate, code: "SUBSCRIPTION_EXPIRED", words: []string{"expired", "Renew"}}},
			{"resubscribed", appstorefake.StatusActive, "OFFER_REDEEMED", "RESUBSCRIBE", offer, on, nil},
			{"refunded", appstorefake.StatusRevoked, "REFUND", "", refunded, appstorefake.RenewalFields{},
				&noticeWant{event: webhooks.SubscriptionRefunded, plan: "basic", code: "SUBSCRIPTION_EXPIRED", words: []string{"refunded", "access has ended"}}},
		} {
			tell(s.name, s.status, s.typ, s.subtype, s.tx, s.renewal)
			if s.notice != nil {
				expectNotice(t, h, fcm, tg, kim, *s.notice, pollWait)
			}
		}

		expectNotice(t, h, fcm, tg, lee, noticeWant{
			event: texts.NoticeTrialEnding, locale: "de", plan: "basic", date: trial.ExpiresDate, words: []string{"Testzeitraum", "endet"},
		}, sweepWait)
	})
}
