package clients

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
)

// TestLiveProgressGraphQLWS follows a broadcast with the graphql-ws npm
// client (live_progress.mjs), sent to a fake FCM that answers each send
// after a few milliseconds, two at a time, so the job lasts a second or
// two.
func TestLiveProgressGraphQLWS(t *testing.T) {
	needNode(t)
	const devices = 120
	fake := fcmtest.NewServer(t, fcmtest.PlainHTTP(), fcmtest.Latency(20*time.Millisecond, 30*time.Millisecond))
	creds := filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(creds, fake.CredentialsJSON("herald-live"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, map[string]string{
		"HERALD_FCM_CREDENTIALS_FILE": creds,
		"HERALD_FCM_ENDPOINT":         fake.URL,
		"HERALD_PUSH_CONCURRENCY":     "2",
		"HERALD_PUSH_BATCH_SIZE":      "10",
	})
	admin := s.adminToken(t, "ops@example.com")
	s.userToken(t, "owner@example.com")
	var rows strings.Builder
	for i := range devices {
		fmt.Fprintf(&rows, `{"email":"owner@example.com","platform":"android","pushToken":"live-%03d"}`+"\n", i)
	}
	s.cli(t, rows.String(), "devices", "import", "--file", "-")
	t.Log(runNode(t, s, "live_progress.mjs", map[string]string{"TOKEN": admin, "TOTAL": fmt.Sprint(devices)}))
}

// TestGraphQLWSClientWithoutPongs: a graphql-ws client that stops
// answering pings (live_pong.mjs) is closed with 4408 within about two
// ping intervals, whatever the idle timeout; while it answered, it stayed
// connected.
func TestGraphQLWSClientWithoutPongs(t *testing.T) {
	needNode(t)
	s := startServer(t, map[string]string{
		"HERALD_WS_PING_INTERVAL": "1s",
		"HERALD_WS_IDLE_TIMEOUT":  "1h",
	})
	admin := s.adminToken(t, "ops@example.com")
	t.Log(runNode(t, s, "live_pong.mjs", map[string]string{"TOKEN": admin, "ANSWERED": "3"}))
}
