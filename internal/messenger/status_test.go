package messenger_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/texts"
)

func closedURL() string {
	srv := httptest.NewServer(nil)
	u := srv.URL
	srv.Close()
	return u
}

func TestStatus(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		cases := []struct {
			name    string
			cfg     func(*messenger.Config)
			want    messenger.Status
			wantLog string
		}{
			{"connected", nil, messenger.Status{Connected: true, BotUsername: ptr("herald_test_bot"), BotName: ptr("Herald Test"), SubscriberCount: 1}, ""},
			{"no token", func(c *messenger.Config) { c.Token = "" }, messenger.Status{}, "no bot token"},
			{"bad token", func(c *messenger.Config) { c.Token = "999:wrong" }, messenger.Status{}, "rejected the bot token"},
			{"unreachable", func(c *messenger.Config) { c.APIURL = closedURL() }, messenger.Status{}, "telegram unreachable"},
		}
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				var opts []option
				if c.cfg != nil {
					opts = append(opts, withConfig(c.cfg))
				}
				e := newEnv(t, db, opts...)
				// One subscriber exists; a bot that is not connected reports 0.
				if err := e.svc.HandleUpdate(context.Background(), textUpdate(int64(i+1), 500, "/start")); err != nil {
					t.Fatal(err)
				}
				got, err := e.svc.Status(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if !sameStatus(got, c.want) {
					t.Fatalf("status %s, want %s", show(got), show(c.want))
				}
				if c.wantLog != "" && !strings.Contains(e.logs.String(), c.wantLog) {
					t.Fatalf("log does not give the reason %q:\n%s", c.wantLog, e.logs.String())
				}
			})
		}
	})
}

func sameStatus(a, b messenger.Status) bool {
	eq := func(x, y *string) bool { return x == nil && y == nil || x != nil && y != nil && *x == *y }
	return a.Connected == b.Connected && a.SubscriberCount == b.SubscriberCount &&
		eq(a.BotUsername, b.BotUsername) && eq(a.BotName, b.BotName) && eq(a.WebhookURL, b.WebhookURL)
}

func show(s messenger.Status) string {
	str := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return *p
	}
	return fmt.Sprintf("{connected=%v user=%s name=%s webhook=%s count=%d}", s.Connected, str(s.BotUsername), str(s.BotName), str(s.WebhookURL), s.SubscriberCount)
}

func TestStatusCached(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		clock := testsupport.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
		e := newEnv(t, db, withNow(clock.Now), withConfig(func(c *messenger.Config) { c.StatusCacheTTL = time.Minute }))
		ctx := context.Background()
		for i := 0; i < 3; i++ {
			if st, _ := e.svc.Status(ctx); !st.Connected {
				t.Fatal("not connected")
			}
		}
		if n, m := e.fake.Calls("getMe"), e.fake.Calls("getWebhookInfo"); n != 1 || m != 1 {
			t.Fatalf("three status queries made %d getMe and %d getWebhookInfo calls, want 1 each", n, m)
		}
		// The subscriber count is never cached.
		e.svc.HandleUpdate(ctx, textUpdate(1, 42, "/start"))
		if st, _ := e.svc.Status(ctx); st.SubscriberCount != 1 {
			t.Fatalf("count %d after a /start", st.SubscriberCount)
		}
		clock.Advance(time.Minute + time.Second)
		e.svc.Status(ctx)
		if n := e.fake.Calls("getMe"); n != 2 {
			t.Fatalf("getMe called %d times after the cache expired, want 2", n)
		}
	})
}

func TestNewServiceConfig(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		cases := []struct {
			name string
			cfg  messenger.Config
			ok   bool
		}{
			{"nothing configured", messenger.Config{}, true},
			{"good secret", messenger.Config{Token: token, WebhookSecret: "A-z_09"}, true},
			{"longest secret", messenger.Config{Token: token, WebhookSecret: strings.Repeat("x", 256)}, true},
			{"secret too long", messenger.Config{Token: token, WebhookSecret: strings.Repeat("x", 257)}, false},
			{"secret with a space", messenger.Config{Token: token, WebhookSecret: "two words"}, false},
			{"secret with punctuation", messenger.Config{Token: token, WebhookSecret: "abc!"}, false},
			{"http webhook", messenger.Config{Token: token, WebhookURL: "http://herald.example/webhooks/telegram"}, false},
			{"relative webhook", messenger.Config{Token: token, WebhookURL: "/webhooks/telegram"}, false},
			{"bad API URL", messenger.Config{Token: token, APIURL: "api.telegram.org"}, false},
			{"token with a slash", messenger.Config{Token: "123/abc"}, false},
			// Replies is set below for every case but this one.
			{"token without replies", messenger.Config{Token: token}, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				if c.name != "token without replies" {
					c.cfg.Replies = texts.TelegramReply
				}
				_, err := messenger.NewService(context.Background(), db, c.cfg, nil, nil)
				if (err == nil) != c.ok {
					t.Fatalf("err = %v, want ok=%v", err, c.ok)
				}
				if err != nil && strings.Contains(err.Error(), token) {
					t.Fatalf("error leaks the token: %v", err)
				}
			})
		}
	})
}

func TestSubscribersPages(t *testing.T) {
	eachDB(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		for i := int64(1); i <= 5; i++ {
			if err := e.svc.HandleUpdate(ctx, textUpdate(i, 1000+i, "/start ref"+string(rune('0'+i)))); err != nil {
				t.Fatal(err)
			}
		}
		e.svc.HandleUpdate(ctx, textUpdate(6, 1002, "/stop"))
		e.svc.HandleUpdate(ctx, memberUpdate(7, 1003, "kicked"))

		seen := map[string]messenger.Subscriber{}
		after := ""
		pages := 0
		for {
			p, err := e.svc.Subscribers(ctx, "", 2, after)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, s := range p.Items {
				if _, dup := seen[s.ChatID]; dup {
					t.Fatalf("chat %s listed twice", s.ChatID)
				}
				seen[s.ChatID] = s
			}
			if !p.HasNextPage {
				break
			}
			after = p.EndCursor
		}
		if pages != 3 || len(seen) != 5 {
			t.Fatalf("%d pages, %d chats; want 3 pages of 5 chats", pages, len(seen))
		}
		want := map[string]messenger.SubscriberStatus{"1001": messenger.Subscribed, "1002": messenger.Unsubscribed, "1003": messenger.Blocked}
		for id, st := range want {
			if seen[id].Status != st {
				t.Errorf("chat %s is %q, want %q", id, seen[id].Status, st)
			}
		}
		if s := seen["1004"]; s.Username != "ann" || s.FirstName != "Ann" || s.StartPayload != "ref4" || s.SubscribedSince.IsZero() {
			t.Errorf("subscriber fields %+v", s)
		}

		for _, bad := range []struct {
			first int
			after string
		}{{-1, ""}, {2, "not a cursor"}, {2, "djF8eHx5"}} {
			_, err := e.svc.Subscribers(ctx, "", bad.first, bad.after)
			if !apperr.Is(err, apperr.ValidationError) {
				t.Errorf("Subscribers(%d, %q) = %v, want VALIDATION_ERROR", bad.first, bad.after, err)
			}
		}
		if p, _ := e.svc.Subscribers(ctx, "", 0, ""); len(p.Items) != 5 || p.HasNextPage {
			t.Errorf("default page: %d items, next=%v", len(p.Items), p.HasNextPage)
		}
		for status, want := range map[string]string{"subscribed": "[1005 1004 1001]", "unsubscribed": "[1002]", "blocked": "[1003]"} {
			p, err := e.svc.Subscribers(ctx, status, 0, "")
			var got []string
			for _, s := range p.Items {
				got = append(got, s.ChatID)
			}
			if err != nil || fmt.Sprint(got) != want {
				t.Errorf("status %s: %v %v, want %s", status, got, err, want)
			}
		}
		for _, bad := range []string{"Subscribed", "active", " "} {
			if _, err := e.svc.Subscribers(ctx, bad, 0, ""); !apperr.Is(err, apperr.ValidationError) {
				t.Errorf("status %q: %v, want VALIDATION_ERROR", bad, err)
			}
		}
	})
}
