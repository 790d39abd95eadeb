package clients

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// Web Push checked by independent code: a Node script is the browser and
// its push service (webpush_ece.mjs). Herald's push must decrypt with
// http_ece, the reference implementation of RFC 8188 that the web-push
// library uses, under the subscription's key alone, and its VAPID JWT
// must verify with jose against the key Herald publishes. (A real
// Chromium subscription needs Google's push service, which a test cannot
// reach; the Go fake in internal/push/webpush/webpushtest decrypts with
// Go's crypto.)
func TestWebPushReadByHTTPECE(t *testing.T) {
	pemKey, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "vapid.pem")
	if err := os.WriteFile(file, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, map[string]string{
		"HERALD_VAPID_PRIVATE_KEY_FILE": file,
		"HERALD_VAPID_SUBJECT":          "mailto:ops@example.com",
		"HERALD_WEBPUSH_ALLOW_PRIVATE":  "on", // the script's push service is on 127.0.0.1
	})
	admin := s.adminToken(t, "ops@example.com")
	user := s.userToken(t, "browser@example.com")
	status, me := s.call(t, http.MethodGet, "/api/v1/users/me", user, nil)
	id, _ := testsupport.JSONPath(me, "data", "id").(string)
	if status != http.StatusOK || id == "" {
		t.Fatalf("users/me: %d %v", status, me)
	}
	out := runNode(t, s, "webpush_ece.mjs", map[string]string{"USER_TOKEN": user, "ADMIN_TOKEN": admin, "USER_ID": id})
	line := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	var res struct {
		OK      bool   `json:"ok"`
		Alg     string `json:"alg"`
		Status  string `json:"status"`
		Message struct {
			Title string `json:"title"`
		} `json:"message"`
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil || !res.OK || res.Alg != "ES256" || res.Message.Title != "Maintenance tonight" {
		t.Fatalf("the script's result %q (%v); output:\n%s", line, err, out)
	}
	t.Logf("decrypted by http_ece: %s", line)
}
