package clients

import (
	"net/http"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// TestConsoleCapsAndPasskeysOff drives the console (console_caps_browser.mjs,
// headless Chromium) against a server with passkeys off and product capped
// at 2 a day: at http://localhost (a secure context, where the browser
// could use a passkey) the sign-in page has no passkey button and "My
// account" says passkeys are off, as GET /api/v1/auth/methods and
// authMethods say on both doors; the user's page shows each category's
// cap, and a test send in product after the user's two of the day shows
// the phone skipped as capped; the broadcast form names the cap, and a
// job's counters include skipped.capped as the API reads it; a broadcast
// on push and email shows its emails queued as the API reads them, and
// the form offers the channels, push ticked.
func TestConsoleCapsAndPasskeysOff(t *testing.T) {
	needNode(t)
	needChromium(t)
	port := freePort(t)
	s := startServer(t, map[string]string{
		"HERALD_ADDR":                    "127.0.0.1:" + port,
		"HERALD_NOTIFICATION_CATEGORIES": "product:2/day",
		"HERALD_RATE_LIMIT_GLOBAL":       "5000",
		"HERALD_RATE_LIMIT_AUTH":         "200",
		"HERALD_RATE_LIMIT_PROTECTED":    "5000",
	})
	// Both doors say passkeys are off.
	status, body := s.call(t, http.MethodGet, "/api/v1/auth/methods", "", nil)
	if on, ok := testsupport.JSONPath(body, "data", "passkeys").(bool); status != http.StatusOK || !ok || on {
		t.Fatalf("GET /api/v1/auth/methods: %d %v; want passkeys false", status, body)
	}
	status, body = s.call(t, http.MethodPost, "/graphql", "", map[string]any{"query": "{ authMethods { passkeys } }"})
	if on, ok := testsupport.JSONPath(body, "data", "authMethods", "passkeys").(bool); status != http.StatusOK || !ok || on {
		t.Fatalf("authMethods: %d %v; want passkeys false", status, body)
	}

	admin := s.adminToken(t, "ops@example.com")
	s.userToken(t, "cap@example.com")
	if out := s.cli(t, `{"email":"cap@example.com","platform":"android","pushToken":"cap-pixel","name":"Cap's Pixel"}`+"\n", "devices", "import", "--file", "-"); !strings.Contains(out, "imported 1,") {
		t.Fatalf("devices import: %s", out)
	}
	status, body = s.call(t, http.MethodGet, "/api/v1/admin/users?email=cap@example.com", admin, nil)
	nodes, _ := testsupport.JSONPath(body, "data", "nodes").([]any)
	if status != http.StatusOK || len(nodes) != 1 {
		t.Fatalf("find cap@example.com: %d %v", status, body)
	}
	userID, _ := nodes[0].(map[string]any)["id"].(string)
	// The user's two product sends of the day: the page's is the third.
	for range 2 {
		status, body := s.call(t, http.MethodPost, "/api/v1/notifications/users/"+userID, admin, map[string]any{
			"notification": map[string]any{"subject": "News", "content": "Product news"}, "category": "product"})
		if status != http.StatusOK || testsupport.JSONPath(body, "data", "status") != "sent" {
			t.Fatalf("a product send under the cap: %d %v", status, body)
		}
	}
	// A broadcast in product, finished before the page reads it.
	status, body = s.call(t, http.MethodPost, "/api/v1/notifications/broadcasts", admin, map[string]any{
		"notification": map[string]any{"subject": "Spring news", "content": "For everyone"}, "category": "product"})
	jobID, _ := testsupport.JSONPath(body, "data", "jobId").(string)
	if status != http.StatusAccepted || jobID == "" {
		t.Fatalf("broadcast: %d %v", status, body)
	}

	// A broadcast on push and email: its row shows the emails.
	status, body = s.call(t, http.MethodPost, "/api/v1/notifications/broadcasts", admin, map[string]any{
		"notification": map[string]any{"subject": "Service news", "content": "By email too"}, "channels": []string{"push", "email"}})
	emailJobID, _ := testsupport.JSONPath(body, "data", "jobId").(string)
	if status != http.StatusAccepted || emailJobID == "" {
		t.Fatalf("broadcast by email: %d %v", status, body)
	}

	out := runNode(t, s, "console_caps_browser.mjs", map[string]string{
		"CHROMIUM":     chromiumPath,
		"ADMIN_EMAIL":  "ops@example.com",
		"ADMIN_TOKEN":  admin,
		"PASSWORD":     password,
		"USER_ID":      userID,
		"JOB_ID":       jobID,
		"EMAIL_JOB_ID": emailJobID,
		"CONSOLE_URL":  "http://localhost:" + port,
	})
	t.Logf("console_caps_browser.mjs:\n%s", out)
}
