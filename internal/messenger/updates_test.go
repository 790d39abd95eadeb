package messenger_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
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
		// And it is what the webhook check accepts.
		if err := e2.svc.CheckWebhookSecret(first, true); err != nil {
			t.Fatalf("the generated secret was refused: %v", err)
		}
		if err := e2.svc.HandleUpdate(ctx, textUpdate(1, 42, "/start")); err != nil || e.count() != 1 {
			t.Fatalf("delivery with the generated secret: %v, count %d", err, e.count())
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

// TestWebhookSecretAndUpdates: the secret check of webhook calls, and
// what HandleUpdate does with what they carry. The HTTP side (methods,
// bodies, the envelope) is tested through the server in
// cmd/herald's TestMessengerWebhookE2E.
func TestWebhookSecretAndUpdates(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		secret := "s3cret_Value-with-dash"
		e := newEnv(t, db, withConfig(func(c *messenger.Config) { c.WebhookURL = hookURL; c.WebhookSecret = secret }))
		for _, c := range []struct {
			name    string
			got     string
			present bool
			code    apperr.Code
		}{
			{"no secret header", "", false, apperr.AuthRequired},
			{"empty secret", "", true, apperr.TokenInvalid},
			{"wrong secret", "s3cret_Value-with-dasH", true, apperr.TokenInvalid},
			{"secret prefix", "s3cret", true, apperr.TokenInvalid},
			{"right secret", secret, true, ""},
		} {
			err := e.svc.CheckWebhookSecret(c.got, c.present)
			if c.code == "" && err != nil || c.code != "" && !apperr.Is(err, c.code) {
				t.Errorf("%s: %v, want %q", c.name, err, c.code)
			}
		}
		ctx := context.Background()
		if err := e.svc.HandleUpdate(ctx, telegram.Update{}); !apperr.Is(err, apperr.ValidationError) {
			t.Fatalf("an update without an id: %v, want VALIDATION_ERROR", err)
		}
		for i, u := range []telegram.Update{textUpdate(1, 42, "/start"), textUpdate(1, 42, "/start"), textUpdate(2, 42, "hello")} {
			if err := e.svc.HandleUpdate(ctx, u); err != nil {
				t.Fatalf("update %d: %v", i, err)
			}
			if n := e.count(); n != 1 {
				t.Fatalf("after update %d: %d subscribers, want 1", i, n)
			}
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
			if err := e.svc.HandleUpdate(ctx, st.update); err != nil {
				t.Fatalf("%s: %v", st.name, err)
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
			page, _ := e.svc.Subscribers(ctx, "", 10, "")
			for _, s := range page.Items {
				if s.ChatID == "7" && s.Status != st.status {
					t.Fatalf("%s: chat 7 is %q, want %q", st.name, s.Status, st.status)
				}
			}
		}
		page, _ := e.svc.Subscribers(ctx, "", 10, "")
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
			// Its reply goes out after the change is stored; a Stop while
			// it is in flight would cancel it (replies are never retried).
			eventually(t, "the reply to a polled /start", func() bool { return len(fake.Sent()) == int(i) })
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
