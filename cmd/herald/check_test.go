package main

import (
	"encoding/json"
	"errors"
	"github.com/herald-vpn/herald/internal/captcha/captchatest"
	"github.com/herald-vpn/herald/internal/pwned/pwnedtest"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/push/hms/hmstest"
	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/jackc/pgx/v5"
)

const checkBotToken = "123456:AAH-check-token"

// checkLines maps each check's name to its line of `herald check`.
func checkLines(t *testing.T, stdout string) map[string]string {
	t.Helper()
	lines := map[string]string{}
	for l := range strings.Lines(stdout) {
		f := strings.Fields(l)
		if len(f) < 2 {
			t.Fatalf("line %q has no status and name", l)
		}
		name := f[1]
		if name == "jwt" {
			name = "jwt keys"
		}
		lines[name] = strings.TrimSpace(l)
	}
	return lines
}

// writeTemp writes data to a file of its own and returns its path.
func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// jwksFile is the output of `herald keys generate` in a file; with two,
// a set whose two keys are both active.
func jwksFile(t *testing.T, twoActive bool) string {
	t.Helper()
	gen := func() map[string]any {
		out, _, err := runHerald(t, nil, "", "keys", "generate")
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	doc := gen()
	if twoActive {
		doc["keys"] = append(doc["keys"].([]any), gen()["keys"].([]any)...)
	}
	b, _ := json.Marshal(doc)
	return writeTemp(t, "jwks.json", b)
}

// `herald check` against the real databases and Redis and the fakes of
// the others: everything configured and working is all ok and exit 0.
func TestCheckAllOK(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		const user, pass = "herald", "s3cret"
		smtp := mailtest.NewServer(t, mailtest.WithAuth(user, pass))
		fcmFake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		apnsKey, _, err := apnstest.GenerateKey()
		if err != nil {
			t.Fatal(err)
		}
		vapidKey, err := webpush.GenerateVAPIDKey()
		if err != nil {
			t.Fatal(err)
		}
		tg := telegramtest.NewServer(t, checkBotToken)
		hmsFake := hmstest.NewServer(t)
		breaches := pwnedtest.New("Password1")
		t.Cleanup(breaches.Close)
		captchaFake := captchatest.New("captcha-secret")
		t.Cleanup(captchaFake.Close)
		env := testDefaults()
		maps.Copy(env, map[string]string{
			"HERALD_DATABASE_URL":           sqlstoretest.NewURL(t, d),
			"HERALD_REDIS_URL":              testRedisURL(t),
			"HERALD_SMTP_URL":               smtp.URLWithAuth(user, pass),
			"HERALD_FCM_CREDENTIALS_FILE":   writeTemp(t, "fcm.json", fcmFake.CredentialsJSON(fcmProject)),
			"HERALD_FCM_ENDPOINT":           fcmFake.URL,
			"HERALD_APNS_KEY_FILE":          writeTemp(t, "AuthKey.p8", apnsKey),
			"HERALD_APNS_KEY_ID":            "KEYID12345",
			"HERALD_APNS_TEAM_ID":           "TEAMID1234",
			"HERALD_APNS_TOPIC":             "com.example.vpn",
			"HERALD_VAPID_PRIVATE_KEY_FILE": writeTemp(t, "vapid.pem", vapidKey),
			"HERALD_VAPID_SUBJECT":          "mailto:ops@example.com",
			"HERALD_HMS_APP_ID":             hmsFake.AppID,
			"HERALD_HMS_CLIENT_SECRET":      hmsFake.ClientSecret,
			"HERALD_HMS_TOKEN_URL":          hmsFake.TokenURL(),
			"HERALD_HMS_SEND_URL":           hmsFake.URL,
			"HERALD_TELEGRAM_BOT_TOKEN":     checkBotToken,
			"HERALD_TELEGRAM_API_URL":       tg.URL,
			"HERALD_JWT_KEYS_FILE":          jwksFile(t, false),
			"HERALD_PUBLIC_URL":             "https://api.example.com",
			"HERALD_PWNED_PASSWORDS_URL":    breaches.URL,
			"HERALD_CAPTCHA_PROVIDER":       "turnstile",
			"HERALD_CAPTCHA_SECRET":         "captcha-secret",
			"HERALD_CAPTCHA_VERIFY_URL":     captchaFake.URL,
		})
		if _, stderr, err := runHerald(t, env, "", "migrate"); err != nil {
			t.Fatalf("migrate: %v\n%s", err, stderr)
		}
		stdout, stderr, err := runHerald(t, env, "", "check")
		if err != nil {
			t.Fatalf("check = %v, want success\n%s%s", err, stdout, stderr)
		}
		lines := checkLines(t, stdout)
		for _, name := range []string{"configuration", "database", "connections", "redis", "smtp", "fcm", "apns", "webpush", "hms", "telegram", "billing", "pwned", "captcha", "jwt keys", "discovery", "secrets"} {
			if l := lines[name]; !strings.HasPrefix(l, "ok ") {
				t.Errorf("%s: %q, want ok", name, l)
			}
		}
		if len(lines) != 16 {
			t.Errorf("%d lines, want 16:\n%s", len(lines), stdout)
		}
		if l := lines["hms"]; !strings.Contains(l, "app "+hmsFake.AppID+": OAuth access token granted") || hmsFake.TokenRequests() != 1 || len(hmsFake.Messages()) != 0 {
			t.Errorf("hms line %q after %d token requests and %d pushes, want one token granted and nothing sent", l, hmsFake.TokenRequests(), len(hmsFake.Messages()))
		}
		if got := captchaFake.Requests(); len(got) != 1 || got[0].Secret != "captcha-secret" {
			t.Errorf("check made the verifications %+v, want one with the secret", got)
		}
		if breaches.Requests() != 1 {
			t.Errorf("check made %d range requests, want 1", breaches.Requests())
		}
		for _, want := range []string{"0 pending", "AUTH accepted", "access token granted", "@herald_test_bot", "jwks_uri is https://api.example.com/.well-known/jwks.json", "0 stored, 0 sealed with key "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("output lacks %q:\n%s", want, stdout)
			}
		}
		if n := len(smtp.Messages()); n != 0 {
			t.Errorf("check sent %d emails, want none", n)
		}
		if n := len(fcmFake.Exchanges()); n != 0 {
			t.Errorf("check sent %d pushes, want none", n)
		}
	})
}

// Each check's failing (and warning) cases, one at a time over a working
// SQLite configuration: the line says what is wrong and how to fix it, and
// an error is exit status 1.
func TestCheckFailures(t *testing.T) {
	t.Parallel()
	const user, pass = "herald", "s3cret"
	smtp := mailtest.NewServer(t, mailtest.WithAuth(user, pass))
	fcmFake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
	tg := telegramtest.NewServer(t, checkBotToken)
	captchaFake := captchatest.New("captcha-secret")
	t.Cleanup(captchaFake.Close)
	hmsFake := hmstest.NewServer(t)
	failingHMS := hmstest.NewServer(t)
	failingHMS.SetTokenEndpointStatus(http.StatusServiceUnavailable)
	hmsEnv := func(fake *hmstest.Server, secret, tokenURL string) map[string]string {
		return map[string]string{"HERALD_HMS_APP_ID": fake.AppID, "HERALD_HMS_CLIENT_SECRET": secret, "HERALD_HMS_TOKEN_URL": tokenURL, "HERALD_HMS_SEND_URL": fake.URL}
	}
	// fcmKey is a key of fake, changed by edit (a value "" drops the
	// field).
	fcmKey := func(fake *fcmtest.Server, edit map[string]string) string {
		var creds map[string]string
		if err := json.Unmarshal(fake.CredentialsJSON(fcmProject), &creds); err != nil {
			t.Fatal(err)
		}
		for k, v := range edit {
			if v == "" {
				delete(creds, k)
			} else {
				creds[k] = v
			}
		}
		b, _ := json.Marshal(creds)
		return writeTemp(t, "fcm.json", b)
	}
	refusedKey := fcmKey(fcmFake, map[string]string{"private_key_id": "a-key-the-fake-never-issued"})
	failingFCM := fcmtest.NewServer(t, fcmtest.PlainHTTP())
	failingFCM.SetTokenEndpointStatus(http.StatusServiceUnavailable)
	apnsKey, _, err := apnstest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	missingDB := filepath.Join(t.TempDir(), "missing.db")
	apnsEnvFile := func(path string) map[string]string {
		return map[string]string{
			"HERALD_APNS_KEY_FILE": path,
			"HERALD_APNS_KEY_ID":   "KEYID12345",
			"HERALD_APNS_TEAM_ID":  "TEAMID1234",
			"HERALD_APNS_TOPIC":    "com.example.vpn",
		}
	}
	apnsEnv := func(key []byte) map[string]string { return apnsEnvFile(writeTemp(t, "AuthKey.p8", key)) }
	vapidEnv := func(path string) map[string]string {
		return map[string]string{"HERALD_VAPID_PRIVATE_KEY_FILE": path, "HERALD_VAPID_SUBJECT": "mailto:ops@example.com"}
	}
	vapidKey, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	brokenVAPID := []byte("-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n")
	telegramEnv := func(token, webhook string) map[string]string {
		return map[string]string{"HERALD_TELEGRAM_BOT_TOKEN": token, "HERALD_TELEGRAM_API_URL": tg.URL, "HERALD_TELEGRAM_WEBHOOK_URL": webhook}
	}
	cases := []struct {
		name   string
		env    map[string]string
		check  string
		status string // ok, warning or error
		has    []string
	}{
		{"database unreachable", map[string]string{"HERALD_DATABASE_URL": "postgres://herald@127.0.0.1:1/herald?connect_timeout=2"}, "database", "error", []string{"fix: check HERALD_DATABASE_URL"}},
		{"billing: no store", nil, "billing", "ok", []string{"no store connected"}},
		{"billing: stripe without its webhook secret", map[string]string{"HERALD_STRIPE_SECRET_KEY": "sk_test_x"}, "billing", "error", []string{"HERALD_STRIPE_WEBHOOK_SECRET", "docs/billing.md"}},
		{"billing: a store without a product map", map[string]string{"HERALD_STRIPE_SECRET_KEY": "sk_test_x", "HERALD_STRIPE_WEBHOOK_SECRET": "whsec_x"}, "billing", "error", []string{"HERALD_BILLING_PRODUCTS is empty"}},
		{"billing: a product mapped to no plan", map[string]string{"HERALD_STRIPE_SECRET_KEY": "sk_test_x", "HERALD_STRIPE_WEBHOOK_SECRET": "whsec_x",
			"HERALD_BILLING_PRODUCTS": writeTemp(t, "bad-products.json", []byte(`{"stripe": {"price_1": "gold"}}`))}, "billing", "error", []string{`"gold", not a plan`}},
		{"billing: stripe connected", map[string]string{"HERALD_STRIPE_SECRET_KEY": "sk_test_x", "HERALD_STRIPE_WEBHOOK_SECRET": "whsec_x",
			"HERALD_BILLING_PRODUCTS": writeTemp(t, "products.json", []byte(`{"stripe": {"price_1": "basic", "price_2": "premium"}}`))}, "billing", "ok", []string{"stripe connected, 2 products mapped"}},
		{"captcha off", nil, "captcha", "ok", []string{"not configured"}},
		{"captcha secret refused", map[string]string{"HERALD_CAPTCHA_PROVIDER": "hcaptcha", "HERALD_CAPTCHA_SECRET": "wrong", "HERALD_CAPTCHA_VERIFY_URL": captchaFake.URL}, "captcha", "error", []string{"invalid-input-secret", "fix: set HERALD_CAPTCHA_SECRET"}},
		{"captcha provider unreachable", map[string]string{"HERALD_CAPTCHA_PROVIDER": "turnstile", "HERALD_CAPTCHA_SECRET": "captcha-secret", "HERALD_CAPTCHA_VERIFY_URL": "http://127.0.0.1:1/siteverify"}, "captcha", "error", []string{"refused", "refused with 503"}},
		{"redis bad database number", map[string]string{"HERALD_REDIS_URL": "redis://127.0.0.1:6379/x"}, "redis", "error", []string{"fix HERALD_REDIS_URL"}},
		{"database not migrated", map[string]string{"HERALD_DATABASE_URL": "postgres-fresh"}, "database", "warning", []string{"0 migrations applied", "herald migrate"}},
		{"database file missing", map[string]string{"HERALD_DATABASE_URL": "sqlite:" + missingDB}, "database", "warning", []string{"does not exist yet", "herald migrate"}},
		{"redis unreachable", map[string]string{"HERALD_REDIS_URL": "redis://127.0.0.1:1/0"}, "redis", "error", []string{"PING", "fix:"}},
		{"smtp not set", map[string]string{"HERALD_SMTP_URL": ""}, "smtp", "error", []string{"refuses to start", "fix: set HERALD_SMTP_URL", "HERALD_MAIL_TO_LOG=on"}},
		{"smtp not set, mail to log", map[string]string{"HERALD_SMTP_URL": "", "HERALD_MAIL_TO_LOG": "on"}, "smtp", "warning", []string{"one-time code included, is written to the log", "fix: set HERALD_SMTP_URL"}},
		{"smtp not set, development", map[string]string{"HERALD_SMTP_URL": "", "HERALD_ENV": "development"}, "smtp", "ok", []string{"written to the log", "development profile"}},
		{"smtp wrong password", map[string]string{"HERALD_SMTP_URL": smtp.URLWithAuth(user, "wrong")}, "smtp", "error", []string{"535", "fix: the relay refused the credentials"}},
		{"smtp unreachable", map[string]string{"HERALD_SMTP_URL": "smtp://127.0.0.1:1"}, "smtp", "error", []string{"refused", "fix:"}},
		{"smtp bad sender", map[string]string{"HERALD_MAIL_FROM": "Herald <@>"}, "smtp", "error", []string{"from address", "HERALD_MAIL_FROM an address"}},
		{"smtp untrusted certificate", map[string]string{"HERALD_SMTP_URL": mailtest.NewServer(t, mailtest.WithStartTLS()).URL()}, "smtp", "error", []string{"certificate", "fix: the relay's TLS certificate is not trusted"}},
		{"fcm key refused", map[string]string{"HERALD_FCM_CREDENTIALS_FILE": refusedKey, "HERALD_FCM_ENDPOINT": fcmFake.URL}, "fcm", "error", []string{"TOKEN_ENDPOINT", "fix: the token endpoint refused the key of HERALD_FCM_CREDENTIALS_FILE", "private_key_id", "clock"}},
		{"fcm token endpoint unreachable", map[string]string{"HERALD_FCM_CREDENTIALS_FILE": fcmKey(fcmFake, map[string]string{"token_uri": "http://127.0.0.1:1/token"}), "HERALD_FCM_ENDPOINT": fcmFake.URL}, "fcm", "error", []string{"TOKEN_ENDPOINT", "fix: the token endpoint (token_uri of HERALD_FCM_CREDENTIALS_FILE) could not be reached"}},
		{"fcm token endpoint failing", map[string]string{"HERALD_FCM_CREDENTIALS_FILE": fcmKey(failingFCM, nil), "HERALD_FCM_ENDPOINT": failingFCM.URL}, "fcm", "error", []string{"TOKEN_ENDPOINT", "failed with status 503", "try again later"}},
		{"fcm key without a project", map[string]string{"HERALD_FCM_CREDENTIALS_FILE": fcmKey(fcmFake, map[string]string{"project_id": ""}), "HERALD_FCM_ENDPOINT": fcmFake.URL}, "fcm", "error", []string{"fix: set HERALD_FCM_PROJECT_ID"}},
		{"fcm not a key", map[string]string{"HERALD_FCM_CREDENTIALS_FILE": writeTemp(t, "fcm.json", []byte(`{"type":"authorized_user"}`))}, "fcm", "error", []string{"fix: HERALD_FCM_CREDENTIALS_FILE must be"}},
		{"fcm file missing", map[string]string{"HERALD_FCM_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none.json")}, "fcm", "error", []string{"no such file", "fix: check that HERALD_FCM_CREDENTIALS_FILE names a file"}},
		{"apns key valid", apnsEnv(apnsKey), "apns", "ok", []string{"KEYID12345"}},
		{"webpush off", nil, "webpush", "ok", []string{"not configured"}},
		{"hms off", nil, "hms", "ok", []string{"not configured: huawei devices get no pushes"}},
		{"hms credentials accepted", hmsEnv(hmsFake, hmsFake.ClientSecret, hmsFake.TokenURL()), "hms", "ok", []string{"app " + hmsFake.AppID, "access token granted"}},
		{"hms secret refused", hmsEnv(hmsFake, "wrong", hmsFake.TokenURL()), "hms", "error", []string{"TOKEN_ENDPOINT", "fix: the token endpoint refused the client credentials", "HERALD_HMS_CLIENT_SECRET"}},
		{"hms token endpoint unreachable", hmsEnv(hmsFake, hmsFake.ClientSecret, "http://127.0.0.1:1/oauth2/v3/token"), "hms", "error", []string{"TOKEN_ENDPOINT", "fix: the token endpoint (HERALD_HMS_TOKEN_URL) could not be reached"}},
		{"hms token endpoint failing", hmsEnv(failingHMS, failingHMS.ClientSecret, failingHMS.TokenURL()), "hms", "error", []string{"TOKEN_ENDPOINT", "failed with status 503", "try again later"}},
		{"no push provider", nil, "fcm", "warning", []string{"no push provider configured", "HERALD_HMS_* for huawei"}},
		{"hms alone is a push provider", hmsEnv(hmsFake, hmsFake.ClientSecret, hmsFake.TokenURL()), "fcm", "ok", []string{"not configured: android devices get no pushes"}},
		{"webpush key valid", vapidEnv(writeTemp(t, "vapid.pem", vapidKey)), "webpush", "ok", []string{"mailto:ops@example.com"}},
		{"webpush key not P-256", vapidEnv(writeTemp(t, "vapid.pem", brokenVAPID)), "webpush", "error", []string{"fix: HERALD_VAPID_PRIVATE_KEY_FILE must be"}},
		{"webpush key file missing", vapidEnv(filepath.Join(t.TempDir(), "none.pem")), "webpush", "error", []string{"no such file", "fix: HERALD_VAPID_PRIVATE_KEY_FILE"}},
		{"apns key broken", apnsEnv([]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")), "apns", "error", []string{"fix: HERALD_APNS_KEY_FILE must be"}},
		{"apns key file missing", apnsEnvFile(filepath.Join(t.TempDir(), "none.p8")), "apns", "error", []string{"no such file", "fix: check that HERALD_APNS_KEY_FILE names a file"}},
		{"telegram token rejected", telegramEnv("123456:wrong", ""), "telegram", "error", []string{"401", "fix: Telegram refused the token"}},
		{"telegram unreachable", map[string]string{"HERALD_TELEGRAM_BOT_TOKEN": checkBotToken, "HERALD_TELEGRAM_API_URL": "http://127.0.0.1:1"}, "telegram", "error", []string{"fix: check that HERALD_TELEGRAM_API_URL"}},
		{"telegram webhook not registered", telegramEnv(checkBotToken, "https://api.example.com/webhooks/telegram"), "telegram", "warning", []string{"is none", "serve registers"}},
		{"telegram polling", telegramEnv(checkBotToken, ""), "telegram", "ok", []string{"long-polled"}},
		{"jwt two active keys", map[string]string{"HERALD_JWT_KEYS_FILE": jwksFile(t, true)}, "jwt keys", "error", []string{"more than one key is marked active", "keys generate"}},
		{"jwt keys file", map[string]string{"HERALD_JWT_KEYS_FILE": jwksFile(t, false)}, "jwt keys", "ok", []string{"active key", "0 kept to verify"}},
		{"discovery without a public URL", nil, "discovery", "warning", []string{"answers 404", "fix: set HERALD_PUBLIC_URL"}},
		{"discovery from the issuer", map[string]string{"HERALD_JWT_ISSUER": "https://auth.example.com"}, "discovery", "ok", []string{"jwks_uri is https://auth.example.com/.well-known/jwks.json"}},
		{"discovery in development", map[string]string{"HERALD_ENV": "development"}, "discovery", "ok", []string{"follows each request's Host"}},
		{"secrets without a key", map[string]string{"HERALD_ENCRYPTION_KEY": ""}, "secrets", "warning", []string{"in plain text", "fix: set HERALD_ENCRYPTION_KEY"}},
		{"secrets without a key, development", map[string]string{"HERALD_ENCRYPTION_KEY": "", "HERALD_ENV": "development"}, "secrets", "ok", []string{"not sealed", "development profile"}},
		{"secrets before the database exists", map[string]string{"HERALD_DATABASE_URL": "sqlite:" + missingDB}, "secrets", "ok", []string{"none stored yet", "sealed with key"}},
		{"jwt keys file missing", map[string]string{"HERALD_JWT_KEYS_FILE": filepath.Join(t.TempDir(), "none.json")}, "jwt keys", "error", []string{"fix HERALD_JWT_KEYS_FILE"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			env := testDefaults()
			env["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, "sqlite")
			env["HERALD_SMTP_URL"] = smtp.URLWithAuth(user, pass)
			maps.Copy(env, c.env)
			if env["HERALD_DATABASE_URL"] == "postgres-fresh" {
				env["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, "postgres")
			}
			// A case's own database is left as it is; the others are
			// migrated.
			if _, own := c.env["HERALD_DATABASE_URL"]; !own {
				if _, stderr, err := runHerald(t, env, "", "migrate"); err != nil {
					t.Fatalf("migrate: %v\n%s", err, stderr)
				}
			}
			stdout, stderr, err := runHerald(t, env, "", "check")
			line := checkLines(t, stdout)[c.check]
			if !strings.HasPrefix(line, c.status+" ") {
				t.Fatalf("%s line %q, want %s\n%s", c.check, line, c.status, stdout)
			}
			for _, s := range c.has {
				if !strings.Contains(line, s) {
					t.Errorf("%s line lacks %q: %s", c.check, s, line)
				}
			}
			if c.status == "error" {
				if !errors.Is(err, errChecksFailed) || exitCode(err) != 1 {
					t.Errorf("check = %v (exit %d), want exit status 1", err, exitCode(err))
				}
				// Every failing line names the variable to fix and what to
				// check about it.
				if _, fix, ok := strings.Cut(line, " — fix: "); !ok || !regexp.MustCompile(`\bHERALD_[A-Z0-9_]+\b`).MatchString(fix) || len(fix) < 30 {
					t.Errorf("%s line does not say which variable to fix and what to check: %s", c.check, line)
				}
			} else if err != nil {
				t.Errorf("check = %v, want exit status 0 (a warning does not fail)\n%s%s", err, stdout, stderr)
			}
			if strings.Contains(stdout, "wrong") {
				t.Errorf("the output shows a secret:\n%s", stdout)
			}
			if _, err := os.Stat(missingDB); err == nil {
				t.Errorf("check created the SQLite file %s", missingDB)
			}
		})
	}
}

// An invalid configuration is exit status 2, before any dependency is
// tried.
func TestCheckInvalidConfiguration(t *testing.T) {
	t.Parallel()
	stdout, _, err := runHerald(t, map[string]string{"HERALD_ADDR": "no-port"}, "", "check")
	var ce configError
	if !errors.As(err, &ce) || exitCode(err) != 2 {
		t.Fatalf("check = %v, want a configuration error (exit 2)", err)
	}
	if !strings.HasPrefix(stdout, "error    configuration  HERALD_ADDR:") || strings.Contains(stdout, "database") {
		t.Errorf("stdout %q, want only the configuration line", stdout)
	}
}

// serve logs the checks on one line at start, a warning when one fails,
// and serves all the same.
func TestServeLogsChecks(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", map[string]string{"HERALD_REDIS_URL": "redis://127.0.0.1:1/0"})
	summary := h.dependencyChecks(t)
	want := map[string]any{"level": "WARN", "database": "ok", "redis": "error", "smtp": "ok", "jwt_keys": "ok"}
	for k, v := range want {
		if summary[k] != v {
			t.Errorf("summary %s = %v, want %v: %v", k, summary[k], v, summary)
		}
	}
	if p, _ := summary["problems"].(string); !strings.Contains(p, "redis: PING") {
		t.Errorf("problems %q, want the Redis failure", p)
	}
	if code, _, _ := h.do(t, "GET", "/healthz", nil); code != 200 {
		t.Errorf("/healthz %d with Redis down, want 200", code)
	}
}

// The connections line sizes HERALD_REPLICAS (or --replicas) × (the pool
// + the listener) against the real server's usable connections, read the same way here:
// within 80 % ok, above it a warning (exit 0), past it an error (exit 1).
// The shared server's settings are never changed: the replica counts are
// chosen from them.
func TestCheckConnectionSizing(t *testing.T) {
	t.Parallel()
	dbURL := sqlstoretest.NewURL(t, "postgres")
	conn, err := pgx.Connect(t.Context(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	setting := func(name string) int {
		var v string
		if err := conn.QueryRow(t.Context(), "SHOW "+name).Scan(&v); err != nil {
			t.Fatalf("SHOW %s: %v", name, err)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	usable := setting("max_connections") - setting("superuser_reserved_connections")
	var more string
	if conn.QueryRow(t.Context(), "SHOW reserved_connections").Scan(&more) == nil {
		n, _ := strconv.Atoi(more)
		usable -= n
	}
	conn.Close(t.Context())
	if usable < 10 {
		t.Fatalf("the server allows %d connections: too few for this test's cases", usable)
	}
	env := testDefaults()
	maps.Copy(env, map[string]string{
		"HERALD_ENV":                "development", // no SMTP or push needed: only the connections line counts
		"HERALD_DATABASE_URL":       dbURL,
		"HERALD_DATABASE_MAX_CONNS": "1",
	})
	for _, tc := range []struct {
		name     string
		env      map[string]string
		args     []string
		status   string
		exit     int
		contains string
	}{
		{"one replica", nil, nil, "ok", 0, "1 replicas × (1 pooled + 1 listener) = 2 connections of the " + strconv.Itoa(usable) + " usable"},
		{"HERALD_REPLICAS near the limit", map[string]string{"HERALD_REPLICAS": strconv.Itoa(usable / 2)}, nil, "warning", 0, "HERALD_DATABASE_MAX_CONNS 1 or less"},
		{"--replicas past the limit", nil, []string{"--replicas", strconv.Itoa(usable/2 + 1)}, "error", 1, "too many clients"},
		{"pool_max_conns in the URL past the limit", map[string]string{"HERALD_DATABASE_URL": dbURL + "&pool_max_conns=" + strconv.Itoa(usable)}, []string{"--replicas", "2"}, "error", 1, "2 replicas × (" + strconv.Itoa(usable) + " pooled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := maps.Clone(env)
			maps.Copy(e, tc.env)
			stdout, stderr, err := runHerald(t, e, "", append([]string{"check"}, tc.args...)...)
			line := checkLines(t, stdout)["connections"]
			exit := 0 // exitCode(nil) is 1: it is only asked about errors
			if err != nil {
				exit = exitCode(err)
			}
			if !strings.HasPrefix(line, tc.status+" ") || !strings.Contains(line, tc.contains) || exit != tc.exit {
				t.Errorf("connections line %q (exit %d, %v), want %s containing %q, exit %d\n%s%s", line, exit, err, tc.status, tc.contains, tc.exit, stdout, stderr)
			}
		})
	}
	// SQLite has no limit to share.
	e := maps.Clone(env)
	e["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, "sqlite")
	stdout, _, _ := runHerald(t, e, "", "check", "--replicas", "1000")
	if line := checkLines(t, stdout)["connections"]; !strings.HasPrefix(line, "ok ") || !strings.Contains(line, "sqlite") {
		t.Errorf("connections line on SQLite %q, want ok", line)
	}
}

// dependencyChecks waits, bounded, for the summary line of the checks
// serve runs in the background at start, and returns it. A test that
// counts a fake's requests waits for it first: the checks ask the CAPTCHA
// provider and the breached-password corpus too, at a moment of their own
// (TestCaptchaE2E once counted the check's verification as the signup's).
func (h *herald) dependencyChecks(t testing.TB) map[string]any {
	t.Helper()
	var summary map[string]any
	eventually(t, func() bool {
		for _, l := range h.logLines(t) {
			if msg, _ := l["msg"].(string); strings.HasPrefix(msg, "dependency checks") {
				summary = l
				return true
			}
		}
		return false
	}, "serve never logged the dependency checks")
	return summary
}
