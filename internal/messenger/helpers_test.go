package messenger_test

import (
	"context"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/texts"
)

// token is the fake bot's token; no log line or error may contain it.
const token = "123456:AAH-test-token_Xy9"

// eachDB runs fn once per covered database with a fresh, migrated store.
func eachDB(t *testing.T, fn func(t *testing.T, db *sqlstore.DB)) {
	t.Helper()
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		db, _ := jobstest.Open(t, url, jobs.Config{})
		fn(t, db)
	})
}

// env is a service over a real database and the fake Bot API.
type env struct {
	t     *testing.T
	db    *sqlstore.DB
	fake  *telegramtest.Server
	svc   *messenger.Service
	logs  *testsupport.Buffer // checked at the end of the test: the token never appears
	clock *testsupport.SleepingClock
}

type option func(*messenger.Config, **http.Client)

func withConfig(f func(*messenger.Config)) option {
	return func(c *messenger.Config, _ **http.Client) { f(c) }
}

func withHTTPClient(hc *http.Client) option {
	return func(_ *messenger.Config, h **http.Client) { *h = hc }
}

func withNow(now func() time.Time) option {
	return func(c *messenger.Config, _ **http.Client) { c.Now = now }
}

// newEnv starts a fake Bot API and a service for it on db.
func newEnv(t *testing.T, db *sqlstore.DB, opts ...option) *env {
	t.Helper()
	return newEnvWith(t, db, telegramtest.NewServer(t, token), opts...)
}

func newEnvWith(t *testing.T, db *sqlstore.DB, fake *telegramtest.Server, opts ...option) *env {
	t.Helper()
	e := &env{t: t, db: db, fake: fake, logs: &testsupport.Buffer{}, clock: testsupport.NewSleepingClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), true)}
	cfg := messenger.Config{
		Token:       token,
		APIURL:      fake.URL,
		PollTimeout: time.Second,
		PollRetry:   20 * time.Millisecond,
		Pacer:       limits.ChatPaceConfig{Clock: e.clock},
		Replies:     texts.TelegramReply,
	}
	var hc *http.Client
	for _, o := range opts {
		o(&cfg, &hc)
	}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := messenger.NewService(context.Background(), db, cfg, hc, logger)
	if err != nil {
		t.Fatal(err)
	}
	e.svc = svc
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := svc.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
		if strings.Contains(e.logs.String(), token) || strings.Contains(e.logs.String(), "AAH-test-token") {
			t.Errorf("the bot token leaked into the log:\n%s", e.logs.String())
		}
		if t.Failed() {
			t.Logf("messenger log:\n%s", testsupport.Tail(e.logs.String(), 100))
		}
	})
	return e
}

func (e *env) count() int {
	e.t.Helper()
	n, err := e.db.CountTelegramSubscribers(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// eventually waits up to 10 seconds for cond; it asserts no duration.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testsupport.Eventually(t, 10*time.Second, cond, "timed out waiting for %s", what)
}

// sentTo returns the texts the bot sent to chat.
func (e *env) sentTo(chat string) []string {
	var out []string
	for _, m := range e.fake.SentTo(chat) {
		out = append(out, m.Text)
	}
	return out
}

// Updates in Telegram's shapes.

func textUpdate(id, chat int64, text string) telegram.Update {
	u := &telegram.User{ID: chat, FirstName: "Ann", Username: "ann"}
	return telegram.Update{UpdateID: id, Message: &telegram.Message{
		MessageID: id, From: u, Date: 1764000000, Text: text,
		Chat: telegram.Chat{ID: chat, Type: "private", FirstName: "Ann", Username: "ann"},
	}}
}

func memberUpdate(id, chat int64, status string) telegram.Update {
	u := telegram.User{ID: chat, FirstName: "Ann", Username: "ann"}
	return telegram.Update{UpdateID: id, MyChatMember: &telegram.ChatMemberUpdated{
		Chat: telegram.Chat{ID: chat, Type: "private", FirstName: "Ann", Username: "ann"},
		From: u, Date: 1764000000,
		OldChatMember: telegram.ChatMember{Status: "member", User: telegram.User{ID: 123456, IsBot: true}},
		NewChatMember: telegram.ChatMember{Status: status, User: telegram.User{ID: 123456, IsBot: true}},
	}}
}

// countingTransport counts the Bot API methods one client calls.
type countingTransport struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[path.Base(r.URL.Path)]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) calls(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[method]
}

func ptr[T any](v T) *T { return &v }
