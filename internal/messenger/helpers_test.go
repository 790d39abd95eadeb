package messenger_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

// token is the fake bot's token; no log line or error may contain it.
const token = "123456:AAH-test-token_Xy9"

// eachDB runs fn once per covered database with a fresh, migrated store.
func eachDB(t *testing.T, fn func(t *testing.T, db *sqlstore.DB)) {
	t.Helper()
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		db, err := sqlstore.Open(ctx, url, sqlstore.JobsConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		if _, err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		fn(t, db)
	})
}

// logBuffer collects a service's log and checks at the end of the test
// that the token never appeared in it.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// env is a service over a real database and the fake Bot API.
type env struct {
	t     *testing.T
	db    *sqlstore.DB
	fake  *telegramtest.Server
	svc   *messenger.Service
	logs  *logBuffer
	clock *telegramtest.Clock
}

type option func(*messenger.Config, **http.Client, *func() time.Time)

func withConfig(f func(*messenger.Config)) option {
	return func(c *messenger.Config, _ **http.Client, _ *func() time.Time) { f(c) }
}

func withHTTPClient(hc *http.Client) option {
	return func(_ *messenger.Config, h **http.Client, _ *func() time.Time) { *h = hc }
}

func withNow(now func() time.Time) option {
	return func(_ *messenger.Config, _ **http.Client, n *func() time.Time) { *n = now }
}

// newEnv starts a fake Bot API and a service for it on db.
func newEnv(t *testing.T, db *sqlstore.DB, opts ...option) *env {
	t.Helper()
	return newEnvWith(t, db, telegramtest.NewServer(t, token), opts...)
}

func newEnvWith(t *testing.T, db *sqlstore.DB, fake *telegramtest.Server, opts ...option) *env {
	t.Helper()
	e := &env{t: t, db: db, fake: fake, logs: &logBuffer{}, clock: telegramtest.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), true)}
	cfg := messenger.Config{
		Token:       token,
		APIURL:      fake.URL,
		PollTimeout: time.Second,
		PollRetry:   20 * time.Millisecond,
		Pacer:       telegram.PacerConfig{Clock: e.clock},
	}
	var hc *http.Client
	var now func() time.Time
	for _, o := range opts {
		o(&cfg, &hc, &now)
	}
	logger := slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	svc, err := messenger.NewService(context.Background(), db, cfg, hc, logger, now)
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sentTo returns the texts the bot sent to chat.
func (e *env) sentTo(chat string) []string {
	var out []string
	for _, m := range e.fake.Sent() {
		if m.ChatID == chat {
			out = append(out, m.Text)
		}
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

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// postWebhook delivers body to the webhook handler with the given secret
// header (nil: no header).
func postWebhook(h http.Handler, secret *string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/webhooks/telegram", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if secret != nil {
		r.Header.Set(telegram.SecretTokenHeader, *secret)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
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
