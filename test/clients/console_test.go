package clients

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/identities/provider/providertest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// consoleShotNames are the pages TestConsole photographs.
var consoleShotNames = []string{"overview", "users", "user", "broadcasts"}

// TestConsole drives the operator console (/console/) in headless
// Chromium (console_browser.mjs): sign-in refused to a non-admin and
// granted to an admin; a user found, their plan changed in the page, their
// sessions ended, the account disabled and enabled, each read back through
// the API; their notification preferences switched (product off on push),
// quiet hours 22:00–07:00 Europe/Berlin set and cleared, each read back
// through the API, security's switches disabled, a switch Herald refuses
// (the request rewritten to name an unknown category) shown with its
// VALIDATION_ERROR and put back, an unknown zone's VALIDATION_ERROR shown;
// their in-app inbox (25 items kept by sends, the oldest two read and seen
// by the user) shown 20 at a time with its counts, the rest by "Load
// more", the newest item archived and then all, each read back through
// the API (archived without being marked seen), and the archive listed;
// inside quiet hours set around now a test
// notification held until their end, an urgent one sent at once; a
// broadcast composed (a bad data field refused before any
// request), sent in category product to the imported devices and followed
// live to 100%, its counters (the user's phone opted out) and category
// compared with the job's; an API refusal shown with its code; a
// scheduled broadcast cancelled; an account deleted; a guest (made by
// POST /api/v1/auth/guest) not found by searching "guest", listed by the
// guest filter and named "guest <id>" there and on its page, and deleted
// by typing its id; sign-out, after which
// the session's refresh token is refused; then passkeys with Chromium's
// virtual authenticator (DevTools WebAuthn domain): one registered from
// the page, a sign-in with it alone, a password sign-in completed with it
// (MFA_REQUIRED), and its removal, each read back through the API; a
// passkey listed on its user's page and removed there by an admin (the
// security log names the admin), as the API reads it; the
// user's Apple and Google identities on their page, as the API reads
// them; an operator with an authenticator app signing in with the code
// computed in the script (a wrong one refused first), then with a recovery
// code, then, with a passkey added, with the passkey instead of a code,
// each session's aal and amr checked; and a second step whose challenge
// another client used sent back to the password. Every page is also laid out at
// 390 px, and any Content Security Policy violation or uncaught error
// fails the test. Pushes go to the development provider (no FCM or APNs
// configured), paced so that a broadcast lasts a few seconds.
func TestConsole(t *testing.T) {
	needNode(t)
	needChromium(t)
	const (
		android = 240
		ios     = 60
	)
	// Passkeys need the page at a domain: the browser opens the console at
	// http://localhost:<port> for them, so the port is chosen here.
	port := freePort(t)
	// Fake Apple and Google issuers: Ann's account gets one identity of
	// each, which her page shows.
	apple, google := providertest.NewIssuer(t), providertest.NewIssuer(t)
	s := startServer(t, map[string]string{
		"HERALD_ADDR":                 "127.0.0.1:" + port,
		"HERALD_WEBAUTHN_RP_ID":       "localhost",
		"HERALD_WEBAUTHN_ORIGINS":     "http://localhost:" + port,
		"HERALD_PUSH_RATE":            "80", // 241 android devices: about three seconds
		"HERALD_PUSH_BATCH_SIZE":      "25",
		"HERALD_RATE_LIMIT_GLOBAL":    "5000", // the browser and this test share one address
		"HERALD_RATE_LIMIT_AUTH":      "200",
		"HERALD_RATE_LIMIT_PROTECTED": "5000",
		"HERALD_APPLE_CLIENT_IDS":     consoleAppleClient,
		"HERALD_APPLE_ISSUER":         apple.URL,
		"HERALD_APPLE_JWKS_URL":       apple.JWKSURL(),
		"HERALD_GOOGLE_CLIENT_IDS":    consoleGoogleClient,
		"HERALD_GOOGLE_ISSUER":        google.URL,
		"HERALD_GOOGLE_JWKS_URL":      google.JWKSURL(),
	})
	admin := s.adminToken(t, "ops@example.com")
	ann := s.userToken(t, "ann@example.com") // not an admin: refused by the console
	// Ann signs in with Google (the same verified address: linked), then
	// links her Apple account, which hides her address.
	const annRelay = "x7k2ann@privaterelay.appleid.com"
	gtok := google.Mint(t, providertest.Token{Audience: consoleGoogleClient, Subject: "g-ann", Email: "ann@example.com", EmailVerified: true, Nonce: "n-g"})
	if status, body := s.call(t, http.MethodPost, "/api/v1/auth/oauth/google", "", map[string]any{"idToken": gtok, "nonce": "n-g"}); status != http.StatusOK {
		t.Fatalf("Ann's Google sign-in: %d %v", status, body)
	}
	atok := apple.Mint(t, providertest.Token{Audience: consoleAppleClient, Subject: "a-ann", Email: annRelay, EmailVerified: "true", PrivateEmail: "true", Nonce: providertest.AppleNonce("n-a")})
	if status, body := s.call(t, http.MethodPost, "/api/v1/users/me/identities", ann, map[string]any{"provider": "apple", "idToken": atok, "nonce": "n-a"}); status != http.StatusCreated {
		t.Fatalf("Ann links her Apple account: %d %v", status, body)
	}
	// Ann's in-app inbox: inboxItems items kept by sends to her (before
	// her phones are imported: nothing else is sent), "Inbox 1" the
	// oldest; she reads the oldest and sees the second, through her own
	// door. Her page shows the newest 20, "Load more" the rest.
	status, me := s.call(t, http.MethodGet, "/api/v1/users/me", ann, nil)
	annID, _ := me["data"].(map[string]any)["id"].(string)
	if status != http.StatusOK || annID == "" {
		t.Fatalf("Ann's account: %d %v", status, me)
	}
	var kept []string
	for i := 1; i <= inboxItems; i++ {
		status, body := s.call(t, http.MethodPost, "/api/v1/notifications/users/"+annID, admin, map[string]any{
			"notification": map[string]any{"subject": fmt.Sprintf("Inbox %d", i), "content": "Body of inbox item " + fmt.Sprint(i)}, "category": "product", "inbox": true})
		if status != http.StatusOK || body["data"].(map[string]any)["status"] != "sent" {
			t.Fatalf("send %d to Ann's inbox: %d %v", i, status, body)
		}
		status, list := s.call(t, http.MethodGet, "/api/v1/users/me/inbox?first=1", ann, nil)
		nodes, _ := list["data"].(map[string]any)["nodes"].([]any)
		if status != http.StatusOK || len(nodes) != 1 {
			t.Fatalf("Ann's inbox after send %d: %d %v", i, status, list)
		}
		kept = append(kept, nodes[0].(map[string]any)["id"].(string))
	}
	for i, mark := range []string{"read", "seen"} {
		if status, body := s.call(t, http.MethodPost, "/api/v1/users/me/inbox/"+kept[i]+"/"+mark, ann, nil); status != http.StatusOK {
			t.Fatalf("Ann marks inbox item %d %s: %d %v", i+1, mark, status, body)
		}
	}
	// An operator with an authenticator app (TOTP): the console asks for
	// its code after the password. The factor is confirmed with the code
	// of the step before this one, so that the browser's code (this step
	// or a later one) is not refused as reused.
	totpOps := s.adminToken(t, "totp-ops@example.com")
	secret, recovery := enrollTOTP(t, s, totpOps)
	s.userToken(t, "fleet@example.com")
	s.userToken(t, "gone@example.com") // deleted in the page
	// A guest (an app install signed in without an address): the page
	// names it "guest <id>" and deletes it when its id is typed.
	status, gbody := s.call(t, http.MethodPost, "/api/v1/auth/guest", "", map[string]any{"installId": "console-guest-install"})
	guestToken, _ := testsupport.JSONPath(gbody, "data", "session", "token").(string)
	if status != http.StatusCreated || guestToken == "" {
		t.Fatalf("a guest: %d %v", status, gbody)
	}
	status, gme := s.call(t, http.MethodGet, "/api/v1/users/me", guestToken, nil)
	guestID, _ := testsupport.JSONPath(gme, "data", "id").(string)
	if status != http.StatusOK || guestID == "" || testsupport.JSONPath(gme, "data", "guest") != true {
		t.Fatalf("the guest's account: %d %v", status, gme)
	}
	var rows strings.Builder
	for i := range android + ios {
		platform := "android"
		if i >= android {
			platform = "ios"
		}
		fmt.Fprintf(&rows, `{"email":"fleet@example.com","platform":%q,"pushToken":"console-%04d","name":"Fleet %d"}`+"\n", platform, i, i)
	}
	rows.WriteString(`{"email":"ann@example.com","platform":"android","pushToken":"ann-pixel","name":"Ann's Pixel"}` + "\n")
	rows.WriteString(`{"email":"ann@example.com","platform":"ios","pushToken":"ann-iphone","name":"Ann's iPhone"}` + "\n")
	if out := s.cli(t, rows.String(), "devices", "import", "--file", "-"); !strings.Contains(out, fmt.Sprintf("imported %d,", android+ios+2)) {
		t.Fatalf("devices import: %s", out)
	}

	// Screenshots go to $HERALD_CONSOLE_SCREENSHOTS when set (docs/console
	// holds those of docs/console.md), to a temporary directory otherwise, so that a
	// test run leaves the tree as it was.
	shots := os.Getenv("HERALD_CONSOLE_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shots, _ = filepath.Abs(shots)
	out := runNode(t, s, "console_browser.mjs", map[string]string{
		"CHROMIUM":       chromiumPath,
		"ADMIN_EMAIL":    "ops@example.com",
		"ADMIN_TOKEN":    admin,
		"USER_EMAIL":     "ann@example.com",
		"GONE_EMAIL":     "gone@example.com",
		"GUEST_ID":       guestID,
		"PASSWORD":       password,
		"ANDROID_COUNT":  fmt.Sprint(android + 1), // the fleet's and Ann's Pixel
		"SCREENSHOT_DIR": shots,
		"PASSKEY_URL":    "http://localhost:" + port,
		"APPLE_RELAY":    annRelay,
		"TOTP_EMAIL":     "totp-ops@example.com",
		"TOTP_SECRET":    secret,
		"RECOVERY_CODES": strings.Join(recovery[:2], ","),
		"INBOX_ITEMS":    fmt.Sprint(inboxItems),
	})
	t.Logf("console_browser.mjs:\n%s", out)
	for _, name := range consoleShotNames {
		if st, err := os.Stat(filepath.Join(shots, name+".png")); err != nil || st.Size() == 0 {
			t.Errorf("screenshot %s.png: %v", name, err)
		}
	}
}

// inboxItems is how many items Ann's inbox holds: more than the console's
// page of 20.
const inboxItems = 25

// The audiences of the fake providers' id_tokens.
const (
	consoleAppleClient  = "com.example.vpn"
	consoleGoogleClient = "1234-web.apps.googleusercontent.com"
)

// enrollTOTP gives the bearer's account an active authenticator app and
// returns its secret and its recovery codes. The confirming code is the
// previous step's (accepted: one step of drift either side).
func enrollTOTP(t *testing.T, s *server, bearer string) (secret string, recoveryCodes []string) {
	t.Helper()
	status, body := s.call(t, http.MethodPost, "/api/v1/users/me/mfa/totp", bearer, map[string]any{"name": "Authenticator"})
	secret, _ = testsupport.JSONPath(body, "data", "secret").(string)
	factorID, _ := testsupport.JSONPath(body, "data", "factor", "id").(string)
	if status != http.StatusCreated && status != http.StatusOK || secret == "" || factorID == "" {
		t.Fatalf("enroll TOTP: %d %v", status, body)
	}
	code, err := totp.GenerateCodeCustom(secret, time.Now().Add(-30*time.Second), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	status, body = s.call(t, http.MethodPost, "/api/v1/users/me/mfa/totp/"+factorID+"/confirm", bearer, map[string]any{"code": code})
	codes, _ := testsupport.JSONPath(body, "data", "recoveryCodes").([]any)
	if status != http.StatusOK || len(codes) != 10 {
		t.Fatalf("confirm TOTP: %d %v", status, body)
	}
	for _, c := range codes {
		code, _ := c.(string)
		recoveryCodes = append(recoveryCodes, code)
	}
	return secret, recoveryCodes
}
