package clients

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

// sdkDir is the TypeScript SDK, @herald/sdk.
const sdkDir = "../../sdk/typescript"

// TestTypeScriptSDK runs the SDK's end-to-end tests (sdk/typescript/test/e2e,
// node:test) against the real binary on SQLite with a fake FCM, the SMTP
// fake and the fake Telegram: signup with the emailed code (which the test
// serves to the script at HERALD_CODE_URL), login, a TOTP second factor,
// refresh, the current user, devices, sends, a broadcast, the admin API
// with an API key, webhooks verified with the SDK's verifyWebhook, the
// messenger (a chat linked through the SDK's link, typed into the fake at
// HERALD_TELEGRAM_CONTROL_URL, which also answers what the fake was sent),
// and a user's own inbox followed live. The SDK is built first (tsc), so
// the test runs the sources as they are.
func TestTypeScriptSDK(t *testing.T) {
	needNode(t)
	if _, err := os.Stat(filepath.Join(sdkDir, "node_modules")); err != nil {
		t.Skip("SDK tests not run: run `npm ci` in sdk/typescript first")
	}
	build := exec.Command("node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	build.Dir = sdkDir
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("tsc (sdk/typescript): %v\n%s", err, out)
	}

	fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
	creds := filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(creds, fake.CredentialsJSON("herald-sdk"), 0o600); err != nil {
		t.Fatal(err)
	}
	const botToken = "123456:sdk-test"
	bot := telegramtest.NewServer(t, botToken)
	s := startServer(t, map[string]string{
		"HERALD_TELEGRAM_BOT_TOKEN":      botToken,
		"HERALD_TELEGRAM_API_URL":        bot.URL,
		"HERALD_FCM_CREDENTIALS_FILE":    creds,
		"HERALD_FCM_ENDPOINT":            fake.URL,
		"HERALD_WEBHOOKS_ALLOW_INSECURE": "on",
		"HERALD_WEBHOOKS_ALLOW_PRIVATE":  "on",
		"HERALD_ACCESS_TOKEN_TTL":        "2s",
		"HERALD_RATE_LIMIT_AUTH":         "0", // the test logs in and refreshes more than 10 times a minute from one address
	})
	s.cli(t, password+"\n", "admin", "create", "--email", "sdk-admin@example.com")

	// GET /code?email=… answers the code of the newest email to that
	// address (404 until one has come).
	codes := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to := r.URL.Query().Get("email")
		msgs := s.SMTP.Messages()
		for i := len(msgs) - 1; i >= 0; i-- {
			for _, rcpt := range msgs[i].To {
				if rcpt != to {
					continue
				}
				if code, ok := mailtest.ExtractCode(msgs[i].Text); ok {
					_, _ = w.Write([]byte(code))
					return
				}
			}
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(codes.Close)

	ctx, cancel := context.WithTimeout(context.Background(), nodeWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--test", "--test-reporter=spec", "--test-timeout=120000", "test/e2e/")
	cmd.Dir = sdkDir
	cmd.Env = append(os.Environ(),
		"HERALD_URL="+s.URL,
		"HERALD_CODE_URL="+codes.URL+"/code",
		"HERALD_TELEGRAM_CONTROL_URL="+controlServer(t, bot, nil).URL,
		"HERALD_ADMIN_EMAIL=sdk-admin@example.com",
		"HERALD_PASSWORD="+password,
		"HERALD_ACCESS_TOKEN_TTL_SECONDS=2",
	)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the SDK's e2e tests did not finish within %s:\n%s", nodeWait, out)
	}
	if err != nil {
		t.Fatalf("the SDK's e2e tests failed: %v\n%s", err, out)
	}
	t.Logf("the SDK's e2e tests passed in %s:\n%s", time.Since(start).Round(time.Millisecond), out)
}

// TestTypeScriptSDKInChromium bundles sdk/typescript/test/browser/page.js
// (the SDK as an app would ship it, with esbuild) and opens it in headless
// Chromium from an origin in HERALD_CORS_ORIGINS (sdk_browser.mjs): the
// page logs in as an admin, reads the user and the rate-limit headers,
// queues a broadcast to one device and follows it to completion over the
// browser's own WebSocket. Then test/browser/passkey.js, with a virtual
// authenticator, goes through the SDK's passkey steps: registration,
// a passwordless sign-in, and a password login's second step. The pages
// are at http://localhost:<port>, the WebAuthn relying party's origin.
func TestTypeScriptSDKInChromium(t *testing.T) {
	needNode(t)
	needChromium(t)
	if _, err := os.Stat(filepath.Join(sdkDir, "node_modules")); err != nil {
		t.Skip("SDK tests not run: run `npm ci` in sdk/typescript first")
	}
	bundles := t.TempDir()
	for _, args := range [][]string{
		{"node_modules/typescript/bin/tsc", "-p", "tsconfig.json"},
		{"-e", `import("esbuild").then((e) => e.build({ entryPoints: ["test/browser/page.js", "test/browser/passkey.js"], bundle: true, format: "esm", platform: "browser", target: "es2022", outdir: process.argv[1], logLevel: "error" }))`, bundles},
	} {
		cmd := exec.Command("node", args...)
		cmd.Dir = sdkDir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("node %v (sdk/typescript): %v\n%s", args[0], err, out)
		}
	}

	mux := http.NewServeMux()
	page := func(script string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write([]byte(`<!doctype html><html><head><meta charset="utf-8"><title>@herald/sdk</title></head>` +
				`<body><pre id="result">running</pre><script type="module" src="/` + script + `"></script></body></html>`))
		}
	}
	mux.HandleFunc("GET /{$}", page("page.js"))
	mux.HandleFunc("GET /passkey", page("passkey.js"))
	mux.HandleFunc("GET /{script}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		http.ServeFile(w, r, filepath.Join(bundles, filepath.Base(r.PathValue("script"))))
	})
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	// WebAuthn needs the page at a domain: localhost, the relying party.
	origin := "http://localhost:" + strings.TrimPrefix(srv.URL, "http://127.0.0.1:")

	fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
	creds := filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(creds, fake.CredentialsJSON("herald-sdk-browser"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, map[string]string{
		"HERALD_CORS_ORIGINS":         origin,
		"HERALD_WEBAUTHN_RP_ID":       "localhost",
		"HERALD_WEBAUTHN_ORIGINS":     origin,
		"HERALD_FCM_CREDENTIALS_FILE": creds,
		"HERALD_FCM_ENDPOINT":         fake.URL,
		"HERALD_RATE_LIMIT_AUTH":      "0", // the pages log in more than 10 times a minute from one address
	})
	const admin, userEmail = "sdk-browser-admin@example.com", "sdk-browser-user@example.com"
	s.cli(t, password+"\n", "admin", "create", "--email", admin)
	user := s.userToken(t, userEmail)
	if status, body := s.call(t, http.MethodPost, "/api/v1/devices", user, map[string]any{"platform": "android", "pushToken": "browser-1"}); status != http.StatusCreated {
		t.Fatalf("register a device: %d %v", status, body)
	}
	q := url.Values{"herald": {s.URL}, "email": {admin}, "password": {password}}
	pq := url.Values{"herald": {s.URL}, "email": {userEmail}, "password": {password}}
	t.Log(runNode(t, s, "sdk_browser.mjs", map[string]string{
		"CHROMIUM":      chromiumPath,
		"PAGE":          origin + "/?" + q.Encode(),
		"EMAIL":         admin,
		"PASSKEY_PAGE":  origin + "/passkey?" + pq.Encode(),
		"PASSKEY_EMAIL": userEmail,
	}))
}
