package clients

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// hookReceiver is a webhook endpoint of the test: it records what Herald
// delivers and answers 204, or 500 under /failing.
type hookReceiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	got []receivedHook
}

type receivedHook struct {
	Path string `json:"path"`
	ID   string `json:"id"`   // webhook-id
	Type string `json:"type"` // the body's type
}

func newHookReceiver(t *testing.T) *hookReceiver {
	t.Helper()
	r := &hookReceiver{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct{ Type string }
		raw, _ := io.ReadAll(req.Body)
		json.Unmarshal(raw, &body)
		r.mu.Lock()
		r.got = append(r.got, receivedHook{Path: req.URL.Path, ID: req.Header.Get("webhook-id"), Type: body.Type})
		r.mu.Unlock()
		if req.URL.Path == "/failing" {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *hookReceiver) received() []receivedHook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedHook(nil), r.got...)
}

// controlServer lets a script read what the fakes saw: the messages the
// fake Telegram accepted for a chat (with the visible text it parsed) and
// the webhook deliveries received (hooks may be nil); and write to the fake
// what a chat types (POST /telegram/text?chat=…&text=…).
func controlServer(t *testing.T, fake *telegramtest.Server, hooks *hookReceiver) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /telegram/sent", func(w http.ResponseWriter, r *http.Request) {
		type sent struct {
			Method  string `json:"method"`
			Text    string `json:"text"`
			Visible string `json:"visible"`
			Silent  bool   `json:"silent"`
			Buttons any    `json:"buttons"`
		}
		out := []sent{}
		for _, m := range fake.SentTo(r.URL.Query().Get("chat")) {
			s := sent{Method: m.Method, Text: m.Text, Visible: m.Visible, Silent: m.DisableNotification}
			if m.ReplyMarkup != nil {
				s.Buttons = m.ReplyMarkup.InlineKeyboard
			}
			out = append(out, s)
		}
		json.NewEncoder(w).Encode(out)
	})
	// A 429 for the chat's next send: the broadcast walking it waits.
	mux.HandleFunc("POST /telegram/hold", func(w http.ResponseWriter, r *http.Request) {
		secs, err := strconv.Atoi(r.URL.Query().Get("seconds"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f := telegramtest.FailRateLimited(secs)
		f.Times = 1
		fake.FailChat(r.URL.Query().Get("chat"), f)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /telegram/text", func(w http.ResponseWriter, r *http.Request) {
		chat, err := strconv.ParseInt(r.URL.Query().Get("chat"), 10, 64)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fake.PushText(chat, r.URL.Query().Get("text"))
		w.WriteHeader(http.StatusNoContent)
	})
	if hooks != nil {
		mux.HandleFunc("GET /hooks", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(hooks.received())
		})
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestConsoleOps drives the console's operator pages in Chromium
// (console_ops_browser.mjs) against the real binary with a fake Telegram
// and a webhook receiver: messenger (subscribers, a Markdown message whose
// preview is what Telegram shows, a broadcast followed live), API keys
// (the secret shown once works, and is refused once revoked), webhooks
// (create, ping, redeliver, disable, rotate, delete) and bans. It fails on
// any CSP violation or uncaught page error. Screenshots of each page go to
// $HERALD_CONSOLE_SCREENSHOTS when set (docs/console holds the committed
// ones), to a temporary directory otherwise.
func TestConsoleOps(t *testing.T) {
	needNode(t)
	needChromium(t)
	const botToken = "123456:console-ops-test"
	fake := telegramtest.NewServer(t, botToken)
	hooks := newHookReceiver(t)
	s := startServer(t, map[string]string{
		"HERALD_TELEGRAM_BOT_TOKEN":      botToken,
		"HERALD_TELEGRAM_API_URL":        fake.URL,
		"HERALD_WEBHOOKS_ALLOW_INSECURE": "on",
		"HERALD_WEBHOOKS_ALLOW_PRIVATE":  "on",
		// The script makes in a minute what an operator makes in ten;
		// the default 100 a minute per address would refuse it.
		"HERALD_RATE_LIMIT_GLOBAL": "1000",
	})
	const email = "console-ops@example.com"
	admin := s.adminToken(t, email)

	// 25 chats: two pages of subscribers, and two batches of a broadcast
	// (20 chats each), so that a cancel lands between them.
	var chats []int64
	for c := int64(4242001); c <= 4242025; c++ {
		chats = append(chats, c)
		fake.PushText(c, "/start console")
	}
	testsupport.Eventually(t, 20*time.Second, func() bool {
		_, body := s.call(t, http.MethodPost, "/graphql", admin, map[string]any{"query": "{ messengerBotStatus { subscriberCount } }"})
		n, _ := testsupport.JSONPath(body, "data", "messengerBotStatus", "subscriberCount").(float64)
		return int(n) == len(chats)
	}, "the bot did not record %d subscribers from the fake's /start updates", len(chats))

	const missingChat = "4242999" // Telegram answers "chat not found"
	fake.FailChat(missingChat, telegramtest.FailChatNotFound())

	shots := os.Getenv("HERALD_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if abs, err := filepath.Abs(shots); err == nil {
		shots = abs
	}
	control := controlServer(t, fake, hooks)
	// A key made and revoked at the command line: the API keys page lists
	// both in the operators' log.
	made := regexp.MustCompile(`hk_([0-9a-f]{16})_`).FindStringSubmatch(s.cli(t, "", "apikeys", "create", "--name", "cli-made", "--scopes", "accounts:read"))
	if made == nil {
		t.Fatal("apikeys create printed no key")
	}
	s.cli(t, "", "apikeys", "revoke", made[1])
	out := runNode(t, s, "console_ops_browser.mjs", map[string]string{
		"CLI_KEY_ID":   made[1],
		"CHROMIUM":     chromiumPath,
		"EMAIL":        email,
		"PASSWORD":     password,
		"CHAT_ID":      fmt.Sprint(chats[0]),
		"CHATS":        fmt.Sprint(len(chats)),
		"MISSING_CHAT": missingChat,
		"CONTROL_URL":  control.URL,
		"HOOK_URL":     hooks.srv.URL + "/herald",
		"SHOTS":        shots,
	})
	t.Logf("console_ops_browser.mjs:\n%s", out)

	// What the pages did, seen from the server's side.
	for _, c := range chats {
		var broadcast bool
		for _, m := range fake.SentTo(fmt.Sprint(c)) {
			broadcast = broadcast || strings.Contains(m.Visible, "Broadcast from the console")
		}
		if !broadcast {
			t.Errorf("chat %d did not get the console's broadcast: %+v", c, fake.SentTo(fmt.Sprint(c)))
		}
	}
	// The cancelled broadcast stopped after its first batch at most.
	reached := 0
	for _, c := range chats {
		for _, m := range fake.SentTo(fmt.Sprint(c)) {
			if strings.Contains(m.Visible, "A broadcast to cancel") {
				reached++
			}
		}
	}
	t.Logf("the cancelled broadcast reached %d chats", reached)
	if reached > 20 {
		t.Errorf("the cancelled broadcast reached %d chats, more than its first batch of 20", reached)
	}
	pings := 0
	for _, h := range hooks.received() {
		if h.Type == "webhook.ping" && h.Path == "/herald" {
			pings++
		}
	}
	if pings < 2 {
		t.Errorf("the receiver got %d webhook.ping deliveries, want the ping and its redelivery: %+v", pings, hooks.received())
	}
	_, body := s.call(t, http.MethodPost, "/graphql", admin, map[string]any{"query": "{ webhookEndpoints { id } apiKeys { name revokedAt } bans { nodes { ip } } }"})
	if bans, _ := testsupport.JSONPath(body, "data", "bans", "nodes").([]any); len(bans) != 0 {
		t.Errorf("bans after the console added and lifted one: %v", bans)
	}
	if eps, _ := testsupport.JSONPath(body, "data", "webhookEndpoints").([]any); len(eps) != 0 {
		t.Errorf("webhook endpoints after the console deleted its one: %v", eps)
	}
	keys, _ := testsupport.JSONPath(body, "data", "apiKeys").([]any)
	if len(keys) != 2 || testsupport.JSONPath(keys[0], "name") != "ops-test" || testsupport.JSONPath(keys[0], "revokedAt") == nil {
		t.Errorf("API keys after the console created and revoked one (beside the command line's, revoked): %v", keys)
	}
}
