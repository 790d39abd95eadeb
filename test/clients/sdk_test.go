package clients

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
)

// sdkDir is the TypeScript SDK, @herald/sdk.
const sdkDir = "../../sdk/typescript"

// TestTypeScriptSDK runs the SDK's end-to-end tests (sdk/typescript/test/e2e,
// node:test) against the real binary on SQLite with a fake FCM and the SMTP
// fake: signup with the emailed code (which the test serves to the script
// at HERALD_CODE_URL), login, refresh, the current user, devices, sends,
// a broadcast, the admin API with an API key, webhooks verified with the
// SDK's verifyWebhook. The SDK is built first (tsc), so the test runs the
// sources as they are.
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
	s := startServer(t, map[string]string{
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
