package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/hms"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DatabaseURL != "sqlite:herald.db" || c.VerificationCodeTTL != 15*time.Minute ||
		c.ResendCooldown != time.Minute || c.ResendHourlyLimit != 5 || c.TrialPeriod != 168*time.Hour || c.MailFrom != "Herald <no-reply@localhost>" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestEveryProblemOnItsOwnLine(t *testing.T) {
	_, err := Load(env(map[string]string{
		"HERALD_ADDR":                "nowhere",
		"HERALD_DATABASE_URL":        "mysql://x",
		"HERALD_RESEND_COOLDOWN":     "soon",
		"HERALD_RESEND_HOURLY_LIMIT": "0",
		"HERALD_SMTP_URL":            "http://mail",
		"HERALD_TRUSTED_PROXIES":     "10.0.0.0/8, nope",
		"HERALD_LOG_FORMAT":          "xml",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	for _, name := range []string{"HERALD_ADDR", "HERALD_DATABASE_URL", "HERALD_RESEND_COOLDOWN", "HERALD_RESEND_HOURLY_LIMIT", "HERALD_SMTP_URL", "HERALD_TRUSTED_PROXIES", "HERALD_LOG_FORMAT"} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, name+": ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line for %s in:\n%s", name, err)
		}
	}
	if len(lines) != 7 {
		t.Errorf("%d lines, want 7:\n%s", len(lines), err)
	}
}

func TestTrustedProxies(t *testing.T) {
	c, err := Load(env(map[string]string{"HERALD_TRUSTED_PROXIES": "10.1.2.3/8, 127.0.0.1 ,::1"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.TrustedProxies) != 3 || c.TrustedProxies[0].String() != "10.0.0.0/8" || c.TrustedProxies[1].String() != "127.0.0.1/32" {
		t.Fatalf("%v", c.TrustedProxies)
	}
}

// The rate-limit window is reported in whole seconds (the window detail of
// a refusal, Retry-After, X-RateLimit-Reset), so it must be whole seconds.
func TestRateLimitWindow(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.RateLimitWindow != time.Minute {
		t.Fatalf("default window %s (%v), want 1m", c.RateLimitWindow, err)
	}
	for _, ok := range []string{"1s", "90s", "2h"} {
		c, err := Load(env(map[string]string{"HERALD_RATE_LIMIT_WINDOW": ok}))
		if d, _ := time.ParseDuration(ok); err != nil || c.RateLimitWindow != d {
			t.Errorf("HERALD_RATE_LIMIT_WINDOW=%s: window %s, %v", ok, c.RateLimitWindow, err)
		}
	}
	for _, bad := range []string{"1500ms", "500ms", "0s", "-1m", "soon"} {
		_, err := Load(env(map[string]string{"HERALD_RATE_LIMIT_WINDOW": bad}))
		if err == nil || !strings.HasPrefix(err.Error(), "HERALD_RATE_LIMIT_WINDOW: ") {
			t.Errorf("HERALD_RATE_LIMIT_WINDOW=%s: %v, want refused", bad, err)
		}
	}
}

// HERALD_CORS_ORIGINS holds exact origins as browsers send them, or a lone
// *; anything a browser could never send is refused at start, with why.
func TestCORSOrigins(t *testing.T) {
	for v, want := range map[string][]string{
		"":                        nil,
		" ":                       nil,
		"*":                       {"*"},
		"https://app.example.com": {"https://app.example.com"},
		" HTTPS://App.Example.com , http://127.0.0.1:5173,https://app.example.com,": {"https://app.example.com", "http://127.0.0.1:5173"},
		"http://[::1]:8080":            {"http://[::1]:8080"},
		"capacitor://localhost":        {"capacitor://localhost"},
		"https://app.example.com:8443": {"https://app.example.com:8443"},
	} {
		c, err := Load(env(map[string]string{"HERALD_CORS_ORIGINS": v}))
		if err != nil || !slices.Equal(c.CORSOrigins, want) {
			t.Errorf("HERALD_CORS_ORIGINS=%q: %q, %v; want %q", v, c.CORSOrigins, err, want)
		}
	}
	for _, bad := range []string{
		"*,https://app.example.com",   // * with others
		"https://*.example.com",       // wildcard
		"app.example.com",             // no scheme
		"https://app.example.com/",    // a path
		"https://app.example.com/app", // a path
		"https://app.example.com:443", // the default port
		"http://app.example.com:80",
		"https://app.example.com:0",
		"https://app.example.com:08443",
		"https://user@app.example.com",
		"https://app.example.com?x=1",
		"https://app.example.com#x",
		"null",
		"https://",
		"https://ok.example.com, nope",
	} {
		_, err := Load(env(map[string]string{"HERALD_CORS_ORIGINS": bad}))
		if err == nil || !strings.HasPrefix(err.Error(), "HERALD_CORS_ORIGINS: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("HERALD_CORS_ORIGINS=%q: %v, want one line refusing it", bad, err)
		}
	}
}

func TestGraphQLIntrospection(t *testing.T) {
	for v, want := range map[string]bool{"": true, "on": true, "off": false} {
		c, err := Load(env(map[string]string{"HERALD_GRAPHQL_INTROSPECTION": v}))
		if err != nil || c.GraphQLIntrospection != want {
			t.Errorf("%q: %v %v, want %v", v, c.GraphQLIntrospection, err, want)
		}
	}
	if _, err := Load(env(map[string]string{"HERALD_GRAPHQL_INTROSPECTION": "maybe"})); err == nil || !strings.Contains(err.Error(), "HERALD_GRAPHQL_INTROSPECTION: must be on or off") {
		t.Errorf("maybe: %v", err)
	}
}

// Every on/off variable (those whose default is on or off) also accepts
// true/false, 1/0 and yes/no, in any case, and means by each what on or
// off means; anything else is refused on the variable's line.
func TestOnOffSpellings(t *testing.T) {
	spellings := []struct {
		v  string
		on bool
	}{
		{"on", true}, {"ON", true}, {"On", true}, {"true", true}, {"TRUE", true}, {"True", true}, {"1", true}, {"yes", true}, {"YES", true}, {"Yes", true},
		{"off", false}, {"OFF", false}, {"false", false}, {"FALSE", false}, {"False", false}, {"0", false}, {"no", false}, {"NO", false}, {"No", false},
	}
	switches := 0
	for _, v := range Vars() {
		if v.Default != "on" && v.Default != "off" {
			continue
		}
		switches++
		want := map[bool]Config{}
		for _, canonical := range []string{"on", "off"} {
			c, err := Load(env(map[string]string{v.Name: canonical}))
			if err != nil {
				t.Fatalf("%s=%s: %v", v.Name, canonical, err)
			}
			want[canonical == "on"] = c
		}
		if reflect.DeepEqual(want[true], want[false]) {
			t.Fatalf("%s: on and off give the same configuration", v.Name)
		}
		for _, s := range spellings {
			c, err := Load(env(map[string]string{v.Name: s.v}))
			if err != nil || !reflect.DeepEqual(c, want[s.on]) {
				t.Errorf("%s=%s: %v, want it read as %v", v.Name, s.v, err, s.on)
			}
		}
		for _, bad := range []string{"y", "n", "2", "enabled", "onn", "tru"} {
			_, err := Load(env(map[string]string{v.Name: bad}))
			if err == nil || !strings.HasPrefix(err.Error(), v.Name+": must be on or off (or true/false, 1/0, yes/no)") {
				t.Errorf("%s=%s: %v, want refused naming the spellings", v.Name, bad, err)
			}
		}
	}
	if switches < 4 {
		t.Fatalf("%d on/off variables found, want at least 4 (HERALD_CONSOLE, HERALD_GRAPHQL_INTROSPECTION, HERALD_WEBHOOKS_ALLOW_*)", switches)
	}
}

// HERALD_ENV=development turns the auth tier off, and serves /metrics on
// the API's address when it has no listener of its own, unless the
// operator set either; nothing else changes.
func TestDevelopmentProfile(t *testing.T) {
	prod, err := Load(env(nil))
	if err != nil || prod.Env != "production" || prod.RateLimitAuth != 10 {
		t.Fatalf("default: %q auth=%d %v", prod.Env, prod.RateLimitAuth, err)
	}
	if prod.MetricsPublic {
		t.Fatal("production serves /metrics on HERALD_ADDR by default")
	}
	dev, err := Load(env(map[string]string{"HERALD_ENV": "development"}))
	if err != nil || dev.RateLimitAuth != 0 || !dev.MetricsPublic {
		t.Fatalf("development: auth=%d metrics public=%v %v, want 0 and true", dev.RateLimitAuth, dev.MetricsPublic, err)
	}
	dev.Env, dev.RateLimitAuth, dev.MetricsPublic = prod.Env, prod.RateLimitAuth, prod.MetricsPublic
	if !reflect.DeepEqual(dev, prod) {
		t.Fatal("development must change only the auth tier and where /metrics is")
	}
	for _, c := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"HERALD_ENV": "development", "HERALD_METRICS_PUBLIC": "off"}, false},
		{map[string]string{"HERALD_ENV": "development", "HERALD_METRICS_ADDR": "127.0.0.1:9090"}, false},
		{map[string]string{"HERALD_METRICS_PUBLIC": "on"}, true},
		{map[string]string{"HERALD_METRICS_PUBLIC": "on", "HERALD_METRICS_ADDR": "127.0.0.1:9090"}, true},
	} {
		if got, err := Load(env(c.env)); err != nil || got.MetricsPublic != c.want {
			t.Errorf("%v: metrics public %v (%v), want %v", c.env, got.MetricsPublic, err, c.want)
		}
	}
	set, err := Load(env(map[string]string{"HERALD_ENV": "development", "HERALD_RATE_LIMIT_AUTH": "30"}))
	if err != nil || set.RateLimitAuth != 30 {
		t.Fatalf("an explicit auth limit wins: %d %v", set.RateLimitAuth, err)
	}
	if _, err := Load(env(map[string]string{"HERALD_ENV": "dev"})); err == nil || !strings.Contains(err.Error(), "HERALD_ENV: must be production or development") {
		t.Fatalf("dev: %v", err)
	}
}

// The email brand: the product name defaults to Herald; the logo must be
// http(s) and the support address a bare address.
func TestEmailBrand(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.ProductName != "Herald" || c.EmailLogoURL != "" || c.SupportEmail != "" || c.EmailTemplatesDir != "" {
		t.Fatalf("defaults: %q %q %q %q (%v)", c.ProductName, c.EmailLogoURL, c.SupportEmail, c.EmailTemplatesDir, err)
	}
	c, err = Load(env(map[string]string{
		"HERALD_PRODUCT_NAME":        "Acme VPN",
		"HERALD_EMAIL_LOGO_URL":      "https://cdn.example.com/logo.png",
		"HERALD_SUPPORT_EMAIL":       "help@example.com",
		"HERALD_EMAIL_TEMPLATES_DIR": "/etc/herald/emails",
	}))
	if err != nil || c.ProductName != "Acme VPN" || c.EmailLogoURL != "https://cdn.example.com/logo.png" || c.SupportEmail != "help@example.com" || c.EmailTemplatesDir != "/etc/herald/emails" {
		t.Fatalf("set: %+v (%v)", c, err)
	}
	for name, bad := range map[string]string{
		"HERALD_PRODUCT_NAME":   strings.Repeat("x", 65),
		"HERALD_EMAIL_LOGO_URL": "javascript:alert(1)",
		"HERALD_SUPPORT_EMAIL":  "Help <help@example.com>",
	} {
		_, err := Load(env(map[string]string{name: bad}))
		if err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s=%q: %v, want refused", name, bad, err)
		}
	}
	if _, err := Load(env(map[string]string{"HERALD_SUPPORT_EMAIL": "not an address"})); err == nil {
		t.Error("HERALD_SUPPORT_EMAIL=not an address accepted")
	}
}

// The public base URL: HERALD_PUBLIC_URL, else an http(s) issuer, else
// none (never a guess); a value that is no base URL is refused.
func TestPublicBase(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"HERALD_JWT_ISSUER": "herald-prod"}, ""},
		{map[string]string{"HERALD_JWT_ISSUER": "https://auth.example.com/"}, "https://auth.example.com"},
		{map[string]string{"HERALD_PUBLIC_URL": "https://api.example.com/"}, "https://api.example.com"},
		{map[string]string{"HERALD_PUBLIC_URL": "http://10.0.0.5:8080/herald"}, "http://10.0.0.5:8080/herald"},
		{map[string]string{"HERALD_PUBLIC_URL": "https://api.example.com", "HERALD_JWT_ISSUER": "https://auth.example.com"}, "https://api.example.com"},
	} {
		cfg, err := Load(env(c.env))
		if err != nil || cfg.PublicBase() != c.want {
			t.Errorf("%v: public base %q (%v), want %q", c.env, cfg.PublicBase(), err, c.want)
		}
	}
	for _, bad := range []string{"api.example.com", "ftp://api.example.com", "https://", "https://user@api.example.com", "https://api.example.com/?x=1", "https://api.example.com/#x"} {
		if _, err := Load(env(map[string]string{"HERALD_PUBLIC_URL": bad})); err == nil || !strings.HasPrefix(err.Error(), "HERALD_PUBLIC_URL: ") {
			t.Errorf("HERALD_PUBLIC_URL=%s: %v, want refused", bad, err)
		}
	}
}

// The encryption key: 64 hex digits in the variable or in a file (not
// both), and previous keys only beside a current one.
func TestEncryptionKey(t *testing.T) {
	key, prev := strings.Repeat("1f", 32), strings.Repeat("2e", 32)
	file := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(file, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, vars := range []map[string]string{
		{"HERALD_ENCRYPTION_KEY": key},
		{"HERALD_ENCRYPTION_KEY_FILE": file},
		{"HERALD_ENCRYPTION_KEY": key, "HERALD_ENCRYPTION_KEY_PREVIOUS": prev + ", " + strings.Repeat("3d", 32)},
	} {
		c, err := Load(env(vars))
		if err != nil || len(c.EncryptionKey) != 32 || c.EncryptionKey[0] != 0x1f {
			t.Errorf("%v: key %x, %v", vars, c.EncryptionKey, err)
		}
		if _, ok := vars["HERALD_ENCRYPTION_KEY_PREVIOUS"]; ok && (len(c.EncryptionKeysPrevious) != 2 || c.EncryptionKeysPrevious[0][0] != 0x2e) {
			t.Errorf("%v: previous keys %x", vars, c.EncryptionKeysPrevious)
		}
	}
	if c, err := Load(env(nil)); err != nil || c.EncryptionKey != nil {
		t.Errorf("default: %x %v, want no key", c.EncryptionKey, err)
	}
	for name, vars := range map[string]map[string]string{
		"HERALD_ENCRYPTION_KEY":          {"HERALD_ENCRYPTION_KEY": key[:62]},
		"HERALD_ENCRYPTION_KEY_FILE":     {"HERALD_ENCRYPTION_KEY": key, "HERALD_ENCRYPTION_KEY_FILE": file},
		"HERALD_ENCRYPTION_KEY_PREVIOUS": {"HERALD_ENCRYPTION_KEY_PREVIOUS": prev},
	} {
		if _, err := Load(env(vars)); err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%v: %v, want refused on %s's line", vars, err, name)
		}
	}
	for _, vars := range []map[string]string{
		{"HERALD_ENCRYPTION_KEY": key, "HERALD_ENCRYPTION_KEY_PREVIOUS": key},
		{"HERALD_ENCRYPTION_KEY": key, "HERALD_ENCRYPTION_KEY_PREVIOUS": "nothex"},
		{"HERALD_ENCRYPTION_KEY_FILE": filepath.Join(t.TempDir(), "none")},
	} {
		if _, err := Load(env(vars)); err == nil || strings.Contains(err.Error(), key) {
			t.Errorf("%v: %v, want refused without showing the key", vars, err)
		}
	}
}

func TestWebhookPortsAndConcurrency(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.WebhooksAllowedPorts != nil || c.WebhooksConcurrency != 2 {
		t.Fatalf("defaults: %v %d (%v)", c.WebhooksAllowedPorts, c.WebhooksConcurrency, err)
	}
	c, err = Load(env(map[string]string{"HERALD_WEBHOOKS_ALLOWED_PORTS": "8443, 9000", "HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY": "4"}))
	if err != nil || len(c.WebhooksAllowedPorts) != 2 || c.WebhooksAllowedPorts[0] != 8443 || c.WebhooksAllowedPorts[1] != 9000 || c.WebhooksConcurrency != 4 {
		t.Fatalf("set: %v %d (%v)", c.WebhooksAllowedPorts, c.WebhooksConcurrency, err)
	}
	for name, bad := range map[string]string{
		"HERALD_WEBHOOKS_ALLOWED_PORTS":        "0",
		"HERALD_WEBHOOKS_ENDPOINT_CONCURRENCY": "0",
	} {
		_, err := Load(env(map[string]string{name: bad}))
		if err == nil || !strings.HasPrefix(err.Error(), name+": ") {
			t.Errorf("%s=%q: %v, want refused", name, bad, err)
		}
	}
	for _, bad := range []string{"65536", "443,", "https", "-1", "80-90"} {
		if _, err := Load(env(map[string]string{"HERALD_WEBHOOKS_ALLOWED_PORTS": bad})); err == nil {
			t.Errorf("HERALD_WEBHOOKS_ALLOWED_PORTS=%q accepted", bad)
		}
	}
}

func TestWebAuthn(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil || c.WebAuthnRPID != "" || c.WebAuthnOrigins != nil {
		t.Fatalf("passkeys by default: %q %q, %v; want off", c.WebAuthnRPID, c.WebAuthnOrigins, err)
	}
	c, err = Load(env(map[string]string{"HERALD_WEBAUTHN_RP_ID": "example.com"}))
	if err != nil || !slices.Equal(c.WebAuthnOrigins, []string{"https://example.com"}) {
		t.Fatalf("RP id alone: origins %q, %v; want https://example.com", c.WebAuthnOrigins, err)
	}
	c, err = Load(env(map[string]string{"HERALD_WEBAUTHN_RP_ID": "localhost", "HERALD_WEBAUTHN_ORIGINS": "http://localhost:8080, HTTPS://App.Example.com ,android:apk-key-hash:Ab-_9z"}))
	if want := []string{"http://localhost:8080", "https://app.example.com", "android:apk-key-hash:Ab-_9z"}; err != nil || !slices.Equal(c.WebAuthnOrigins, want) {
		t.Fatalf("origins %q, %v; want %q", c.WebAuthnOrigins, err, want)
	}
	for name, bad := range map[string]map[string]string{
		"an RP id with a scheme":        {"HERALD_WEBAUTHN_RP_ID": "https://example.com"},
		"an RP id with a port":          {"HERALD_WEBAUTHN_RP_ID": "example.com:443"},
		"an RP id in capitals":          {"HERALD_WEBAUTHN_RP_ID": "Example.com"},
		"an RP id with an empty label":  {"HERALD_WEBAUTHN_RP_ID": "example..com"},
		"origins without an RP id":      {"HERALD_WEBAUTHN_ORIGINS": "https://example.com"},
		"an http origin not localhost":  {"HERALD_WEBAUTHN_RP_ID": "example.com", "HERALD_WEBAUTHN_ORIGINS": "http://example.com"},
		"an origin with a path":         {"HERALD_WEBAUTHN_RP_ID": "example.com", "HERALD_WEBAUTHN_ORIGINS": "https://example.com/app"},
		"an origin with the 443 port":   {"HERALD_WEBAUTHN_RP_ID": "example.com", "HERALD_WEBAUTHN_ORIGINS": "https://example.com:443"},
		"an origin without a scheme":    {"HERALD_WEBAUTHN_RP_ID": "example.com", "HERALD_WEBAUTHN_ORIGINS": "example.com"},
		"an Android hash padded":        {"HERALD_WEBAUTHN_RP_ID": "example.com", "HERALD_WEBAUTHN_ORIGINS": "android:apk-key-hash:AbC="},
		"an Android origin without one": {"HERALD_WEBAUTHN_RP_ID": "example.com", "HERALD_WEBAUTHN_ORIGINS": "android:apk-key-hash:"},
	} {
		if _, err := Load(env(bad)); err == nil || !strings.HasPrefix(err.Error(), "HERALD_WEBAUTHN_") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v, want one line refusing it", name, err)
		}
	}
}

// Web Push needs both its key file and its subject, the subject a mailto:
// or https: URL.
func TestVAPID(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want string // "" accepts
	}{
		{map[string]string{"HERALD_VAPID_PRIVATE_KEY_FILE": "/k.pem", "HERALD_VAPID_SUBJECT": "mailto:ops@example.com"}, ""},
		{map[string]string{"HERALD_VAPID_PRIVATE_KEY_FILE": "/k.pem", "HERALD_VAPID_SUBJECT": "https://example.com/contact"}, ""},
		{map[string]string{"HERALD_VAPID_PRIVATE_KEY_FILE": "/k.pem"}, "set both"},
		{map[string]string{"HERALD_VAPID_SUBJECT": "mailto:ops@example.com"}, "set both"},
		{map[string]string{"HERALD_VAPID_PRIVATE_KEY_FILE": "/k.pem", "HERALD_VAPID_SUBJECT": "ops@example.com"}, "HERALD_VAPID_SUBJECT: a mailto: or https: URL"},
	} {
		c, err := Load(env(tc.vars))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.vars, err)
		case tc.want == "" && (c.VAPIDKeyFile != tc.vars["HERALD_VAPID_PRIVATE_KEY_FILE"] || c.VAPIDSubject != tc.vars["HERALD_VAPID_SUBJECT"]):
			t.Errorf("%v: loaded %q %q", tc.vars, c.VAPIDKeyFile, c.VAPIDSubject)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want an error about %q", tc.vars, err, tc.want)
		}
	}
}

// Huawei Push Kit needs its app ID and client secret (the secret in the
// variable or in a file, not both); the client ID is the app ID unless
// set; the endpoints default to Huawei's.
func TestHMS(t *testing.T) {
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, []byte("s3cr3t-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(env(nil))
	if err != nil || c.HMSAppID != "" || c.HMSClientID != "" || c.HMSClientSecret != "" {
		t.Fatalf("default: %+v %v, want HMS off", c, err)
	}
	if c.HMSTokenURL != hms.DefaultTokenURL || c.HMSSendURL != hms.DefaultSendURL {
		t.Fatalf("default endpoints %q %q, want hms's %q %q", c.HMSTokenURL, c.HMSSendURL, hms.DefaultTokenURL, hms.DefaultSendURL)
	}
	for _, tc := range []struct {
		vars              map[string]string
		clientID, secret  string
		tokenURL, sendURL string
	}{
		{map[string]string{"HERALD_HMS_APP_ID": "104512345", "HERALD_HMS_CLIENT_SECRET": "s3cr3t"}, "104512345", "s3cr3t", hms.DefaultTokenURL, hms.DefaultSendURL},
		{map[string]string{"HERALD_HMS_APP_ID": "104512345", "HERALD_HMS_CLIENT_ID": "990001", "HERALD_HMS_CLIENT_SECRET_FILE": file}, "990001", "s3cr3t-from-file", hms.DefaultTokenURL, hms.DefaultSendURL},
		{map[string]string{"HERALD_HMS_APP_ID": "1", "HERALD_HMS_CLIENT_SECRET": "s", "HERALD_HMS_TOKEN_URL": "http://127.0.0.1:9/oauth2/v3/token", "HERALD_HMS_SEND_URL": "http://127.0.0.1:9"}, "1", "s", "http://127.0.0.1:9/oauth2/v3/token", "http://127.0.0.1:9"},
	} {
		c, err := Load(env(tc.vars))
		if err != nil || c.HMSAppID != tc.vars["HERALD_HMS_APP_ID"] || c.HMSClientID != tc.clientID || c.HMSClientSecret != tc.secret || c.HMSTokenURL != tc.tokenURL || c.HMSSendURL != tc.sendURL {
			t.Errorf("%v: loaded %q %q %q %q %q, %v", tc.vars, c.HMSAppID, c.HMSClientID, c.HMSClientSecret, c.HMSTokenURL, c.HMSSendURL, err)
		}
	}
	for _, tc := range []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"HERALD_HMS_APP_ID": "104512345"}, "set both"},
		{map[string]string{"HERALD_HMS_CLIENT_SECRET": "s3cr3t"}, "set both"},
		{map[string]string{"HERALD_HMS_CLIENT_SECRET_FILE": file}, "set both"},
		{map[string]string{"HERALD_HMS_CLIENT_ID": "990001"}, "HERALD_HMS_CLIENT_ID: set only beside HERALD_HMS_APP_ID"},
		{map[string]string{"HERALD_HMS_APP_ID": "1", "HERALD_HMS_CLIENT_SECRET": "s3cr3t", "HERALD_HMS_CLIENT_SECRET_FILE": file}, "HERALD_HMS_CLIENT_SECRET_FILE: set this or HERALD_HMS_CLIENT_SECRET, not both"},
		{map[string]string{"HERALD_HMS_APP_ID": "1", "HERALD_HMS_CLIENT_SECRET_FILE": empty}, "HERALD_HMS_CLIENT_SECRET_FILE: " + empty + " is empty"},
		{map[string]string{"HERALD_HMS_APP_ID": "1", "HERALD_HMS_CLIENT_SECRET_FILE": filepath.Join(t.TempDir(), "none")}, "HERALD_HMS_CLIENT_SECRET_FILE: "},
		{map[string]string{"HERALD_HMS_APP_ID": "1", "HERALD_HMS_CLIENT_SECRET": "s", "HERALD_HMS_SEND_URL": "push-api.cloud.huawei.com"}, "HERALD_HMS_SEND_URL: "},
		{map[string]string{"HERALD_HMS_APP_ID": "1", "HERALD_HMS_CLIENT_SECRET": "s", "HERALD_HMS_TOKEN_URL": "ftp://x/token"}, "HERALD_HMS_TOKEN_URL: "},
	} {
		_, err := Load(env(tc.vars))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error about %q", tc.vars, err, tc.want)
		}
		if err != nil && (strings.Contains(err.Error(), "s3cr3t")) {
			t.Errorf("%v: the error %q shows the secret", tc.vars, err)
		}
	}
}
