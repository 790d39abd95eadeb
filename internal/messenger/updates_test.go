package messenger_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

const hookURL = "https://herald.example/webhooks/telegram"

func TestWebhookRegistration(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		fake := telegramtest.NewServer(t, token)
		e := newEnvWith(t, db, fake, withConfig(func(c *messenger.Config) { c.WebhookURL = hookURL }))
		if err := e.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		hook := fake.Webhook()
		if hook.URL != hookURL || !messenger.ValidSecret(hook.SecretToken) || len(hook.SecretToken) < 32 {
			t.Fatalf("webhook registered as %+v", hook)
		}
		if want := []string{"message", "my_chat_member"}; !slices.Equal(hook.AllowedUpdates, want) {
			t.Fatalf("allowed updates %v, want %v", hook.AllowedUpdates, want)
		}
		if e.fake.Calls("getUpdates") != 0 {
			t.Fatal("webhook mode polled getUpdates")
		}
		st, err := e.svc.Status(ctx)
		if err != nil || st.WebhookURL == nil || *st.WebhookURL != hookURL {
			t.Fatalf("status webhookUrl %v (%v)", st.WebhookURL, err)
		}

		// The generated secret is kept: another replica registers the same.
		first := hook.SecretToken
		e2 := newEnvWith(t, db, fake, withConfig(func(c *messenger.Config) { c.WebhookURL = hookURL }))
		if err := e2.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if got := fake.Webhook().SecretToken; got != first {
			t.Fatalf("second replica registered secret %q, want the stored %q", got, first)
		}
		// And it is what the webhook handler accepts.
		w := postWebhook(e2.svc.WebhookHandler(), &first, mustJSON(t, textUpdate(1, 42, "/start")))
		if w.Code != http.StatusOK || e.count() != 1 {
			t.Fatalf("delivery with the generated secret: %d %s, count %d", w.Code, w.Body, e.count())
		}

		// A configured secret is used as given.
		e3 := newEnvWith(t, db, fake, withConfig(func(c *messenger.Config) {
			c.WebhookURL = hookURL
			c.WebhookSecret = "configured_Secret-1"
		}))
		if err := e3.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if got := fake.Webhook().SecretToken; got != "configured_Secret-1" {
			t.Fatalf("registered secret %q, want the configured one", got)
		}
	})
}

func TestWebhookRequests(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		secret := "s3cret_Value-with-dash"
		e := newEnv(t, db, withConfig(func(c *messenger.Config) { c.WebhookURL = hookURL; c.WebhookSecret = secret }))
		h := e.svc.WebhookHandler()
		start := mustJSON(t, textUpdate(1, 42, "/start"))
		cases := []struct {
			name      string
			method    string
			secret    *string
			body      []byte
			status    int
			code      string
			wantCount int
		}{
			{"no secret header", http.MethodPost, nil, start, 401, "AUTH_REQUIRED", 0},
			{"empty secret", http.MethodPost, ptr(""), start, 401, "TOKEN_INVALID", 0},
			{"wrong secret", http.MethodPost, ptr("s3cret_Value-with-dasH"), start, 401, "TOKEN_INVALID", 0},
			{"secret prefix", http.MethodPost, ptr("s3cret"), start, 401, "TOKEN_INVALID", 0},
			{"GET", http.MethodGet, &secret, nil, 405, "METHOD_NOT_ALLOWED", 0},
			{"malformed JSON", http.MethodPost, &secret, []byte(`{"update_id":`), 400, "VALIDATION_ERROR", 0},
			{"not an update", http.MethodPost, &secret, []byte(`{"hello":"world"}`), 400, "VALIDATION_ERROR", 0},
			{"body over 1 MiB", http.MethodPost, &secret, append(append([]byte(`{"update_id":5,"x":"`), bytes.Repeat([]byte("a"), 1<<20)...), `"}`...), 413, "PAYLOAD_TOO_LARGE", 0},
			{"right secret", http.MethodPost, &secret, start, 200, "", 1},
			{"replayed update", http.MethodPost, &secret, start, 200, "", 1},
			{"ignored text", http.MethodPost, &secret, mustJSON(t, textUpdate(2, 42, "hello")), 200, "", 1},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := httptest.NewRequest(c.method, "/webhooks/telegram", bytes.NewReader(c.body))
				r.Header.Set("Content-Type", "application/json")
				if c.secret != nil {
					r.Header.Set(telegram.SecretTokenHeader, *c.secret)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				var env struct {
					Success bool
					Error   struct{ Code string }
				}
				if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
					t.Fatalf("body %q is not the JSON envelope: %v", w.Body, err)
				}
				if w.Code != c.status || env.Error.Code != c.code || env.Success != (c.status == 200) {
					t.Fatalf("answered %d %s, want %d %s", w.Code, w.Body, c.status, c.code)
				}
				if n := e.count(); n != c.wantCount {
					t.Fatalf("%d subscribers, want %d", n, c.wantCount)
				}
			})
		}
		if got := e.sentTo("42"); len(got) != 1 {
			t.Fatalf("replies %q, want one welcome", got)
		}
	})
}

// TestSubscriptionFlow walks one chat through /start, /stop, blocking and
// unblocking, and a replayed update, watching subscriberCount and replies.
func TestSubscriptionFlow(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		secret := "flow-secret"
		e := newEnv(t, db, withConfig(func(c *messenger.Config) { c.WebhookSecret = secret }))
		h := e.svc.WebhookHandler()
		ctx := context.Background()
		steps := []struct {
			name      string
			update    telegram.Update
			wantCount int
			wantReply string // a fragment of the bot's answer, "" for none
			status    messenger.SubscriberStatus
		}{
			{"start with payload", textUpdate(10, 7, "/start campaign_42"), 1, "Welcome", messenger.Subscribed},
			{"another chat starts", textUpdate(11, 8, "/start@herald_test_bot"), 2, "Welcome", messenger.Subscribed},
			{"start again", textUpdate(12, 7, "/start"), 2, "already subscribed", messenger.Subscribed},
			{"replayed start", textUpdate(10, 7, "/start campaign_42"), 2, "", messenger.Subscribed},
			{"help", textUpdate(13, 7, "/help"), 2, "/start", messenger.Subscribed},
			{"plain text", textUpdate(14, 7, "hello bot"), 2, "", messenger.Subscribed},
			{"block", memberUpdate(15, 7, "kicked"), 1, "", messenger.Blocked},
			{"replayed block", memberUpdate(15, 7, "kicked"), 1, "", messenger.Blocked},
			{"unblock", memberUpdate(16, 7, "member"), 2, "", messenger.Subscribed},
			{"stop", textUpdate(17, 7, "/stop"), 1, "unsubscribed", messenger.Unsubscribed},
			{"stop again", textUpdate(18, 7, "/stop"), 1, "not subscribed", messenger.Unsubscribed},
			{"replayed unblock", memberUpdate(16, 7, "member"), 1, "", messenger.Unsubscribed},
			{"block after stop", memberUpdate(19, 7, "kicked"), 1, "", messenger.Unsubscribed},
			{"unblock after stop", memberUpdate(20, 7, "member"), 1, "", messenger.Unsubscribed},
			{"start after stop", textUpdate(21, 7, "/start"), 2, "Welcome", messenger.Subscribed},
		}
		for _, st := range steps {
			chat := "7"
			if st.update.Message != nil {
				chat = strconv.FormatInt(st.update.Message.Chat.ID, 10)
			}
			before := len(e.sentTo(chat))
			w := postWebhook(h, &secret, mustJSON(t, st.update))
			if w.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", st.name, w.Code, w.Body)
			}
			status, err := e.svc.Status(ctx)
			if err != nil || status.SubscriberCount != st.wantCount {
				t.Fatalf("%s: subscriberCount %d (%v), want %d", st.name, status.SubscriberCount, err, st.wantCount)
			}
			replies := e.sentTo(chat)[before:]
			switch {
			case st.wantReply == "" && len(replies) != 0:
				t.Fatalf("%s: unexpected replies %q", st.name, replies)
			case st.wantReply != "" && (len(replies) != 1 || !strings.Contains(replies[0], st.wantReply)):
				t.Fatalf("%s: replies %q, want one containing %q", st.name, replies, st.wantReply)
			}
			page, _ := e.svc.Subscribers(ctx, 10, "")
			for _, s := range page.Items {
				if s.ChatID == "7" && s.Status != st.status {
					t.Fatalf("%s: chat 7 is %q, want %q", st.name, s.Status, st.status)
				}
			}
		}
		page, _ := e.svc.Subscribers(ctx, 10, "")
		for _, s := range page.Items {
			if s.ChatID == "7" && (s.StartPayload != "campaign_42" || s.Username != "ann" || s.FirstName != "Ann") {
				t.Fatalf("chat 7 stored as %+v", s)
			}
		}
	})
}

func TestPolling(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		fake := telegramtest.NewServer(t, token)
		// A webhook left over from an earlier deployment blocks getUpdates;
		// the poller removes it.
		if err := fake.Client().SetWebhook(ctx, hookURL, "", nil); err != nil {
			t.Fatal(err)
		}
		e := newEnvWith(t, db, fake)
		if err := e.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.svc.Start(ctx); err == nil {
			t.Fatal("a second Start was accepted")
		}
		fake.PushText(10, "/start from_poll")
		eventually(t, "the polled /start", func() bool { return e.count() == 1 })
		eventually(t, "the welcome", func() bool { return len(e.sentTo("10")) == 1 })
		if fake.Webhook().URL != "" {
			t.Fatal("the stale webhook is still registered")
		}
		st, _ := e.svc.Status(ctx)
		if !st.Connected || st.WebhookURL != nil {
			t.Fatalf("polling status: connected=%v webhookUrl=%v", st.Connected, st.WebhookURL)
		}
		if err := e.svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}

		// A restarted server carries on where the first stopped: the /start
		// is not handled again, the next update is.
		e2 := newEnvWith(t, db, fake)
		if err := e2.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		fake.PushText(10, "/stop")
		eventually(t, "the polled /stop", func() bool { return e.count() == 0 })
		eventually(t, "the goodbye", func() bool { return len(e.sentTo("10")) == 2 })
		got := e.sentTo("10")
		if !strings.Contains(got[0], "Welcome") || !strings.Contains(got[1], "unsubscribed") {
			t.Fatalf("replies %q, want one welcome then one goodbye", got)
		}
	})
}

func TestTwoPollersOneLease(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		fake := telegramtest.NewServer(t, token)
		ta, tb := &countingTransport{}, &countingTransport{}
		a := newEnvWith(t, db, fake, withHTTPClient(&http.Client{Transport: ta}))
		b := newEnvWith(t, db, fake, withHTTPClient(&http.Client{Transport: tb}))
		if err := a.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the first poller", func() bool { return ta.calls("getUpdates") > 0 })
		if err := b.svc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		for i := int64(1); i <= 3; i++ {
			fake.PushText(100+i, "/start")
			eventually(t, "a polled /start", func() bool { return a.count() == int(i) })
		}
		if n := tb.calls("getUpdates"); n != 0 {
			t.Fatalf("the replica without the lease polled %d times", n)
		}
		// When the holder stops it gives the lease up; the other takes over.
		if err := a.svc.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the second poller", func() bool { return tb.calls("getUpdates") > 0 })
		fake.PushText(200, "/start")
		eventually(t, "the /start polled by the second replica", func() bool { return a.count() == 4 })
		// The reply is sent after the subscriber is stored: wait for it.
		eventually(t, "a reply to each of the 4 /start", func() bool { return len(fake.Sent()) == 4 })
		if n := ta.calls("sendMessage") + tb.calls("sendMessage"); n != 4 {
			t.Fatalf("%d replies sent for 4 /start, want 4", n)
		}
	})
}

func TestNoTokenStartsNothing(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db, withConfig(func(c *messenger.Config) { c.Token = "" }))
		if err := e.svc.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if e.svc.Enabled() {
			t.Fatal("enabled without a token")
		}
		if n := strings.Count(e.logs.String(), "disabled"); n != 1 {
			t.Fatalf("logged %d times that the bot is disabled, want 1:\n%s", n, e.logs.String())
		}
		if e.fake.Calls("getUpdates")+e.fake.Calls("setWebhook") != 0 {
			t.Fatal("a bot without a token called Telegram")
		}
	})
}
