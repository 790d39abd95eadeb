package main

import (
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// brandEnv is accountsEnv with a product of its own.
func brandEnv(extra map[string]string) map[string]string {
	env := accountsEnv(map[string]string{
		"HERALD_PRODUCT_NAME":   "Acme VPN",
		"HERALD_SUPPORT_EMAIL":  "help@acme.test",
		"HERALD_EMAIL_LOGO_URL": "https://cdn.acme.test/logo.png",
	})
	for k, v := range extra {
		env[k] = v
	}
	return env
}

// expectEmail waits for the n-th email to email and checks it is branded
// and written in lang: the subject, the text and the HTML part (whose
// <html lang> says so too).
func expectEmail(t *testing.T, h *herald, email string, n int, subject, lang string, textHas ...string) mailtest.Received {
	t.Helper()
	msg := h.SMTP.WaitForMessages(t, email, n, mailWait)[n-1]
	if msg.ParseErr != nil {
		t.Fatalf("email to %s does not parse: %v", email, msg.ParseErr)
	}
	if msg.Subject != subject {
		t.Errorf("email %d to %s: subject %q, want %q", n, email, msg.Subject, subject)
	}
	for _, want := range append(textHas, "Acme VPN", "help@acme.test") {
		if !strings.Contains(msg.Text, want) || !strings.Contains(msg.HTML, want) {
			t.Errorf("email %d to %s lacks %q in a part:\n%s\n%s", n, email, want, msg.Text, msg.HTML)
		}
	}
	if !strings.Contains(msg.HTML, `<html lang="`+lang+`">`) || !strings.Contains(msg.HTML, `<meta charset="utf-8" />`) ||
		!strings.Contains(msg.HTML, "<title>"+subject+"</title>") || !strings.Contains(msg.HTML, `src="https://cdn.acme.test/logo.png"`) {
		t.Errorf("email %d to %s: HTML part is not the %s layout:\n%s", n, email, lang, msg.HTML)
	}
	if code, ok := mailtest.ExtractCode(msg.Text); !ok || !strings.Contains(msg.HTML, code) {
		t.Errorf("email %d to %s: no code in both parts", n, email)
	}
	return msg
}

// Every email carries the configured product; an account's emails come in
// its locale, set by signup's locale argument or else by Accept-Language,
// for verification and password reset alike; the rest get English.
func TestE2EEmailsBrandedAndLocalised(t *testing.T) {
	forEachDialect(t, func(t *testing.T, dl sqlstoretest.Dialect) {
		h := startHerald(t, dl, brandEnv(nil))
		const signupDoc = `mutation($e: String!, $p: String!, $l: String) { signup(email: $e, password: $p, locale: $l) { success } }`
		const (
			deVerify = "Bestätigen Sie Ihre E-Mail-Adresse für Acme VPN"
			enVerify = "Verify your Acme VPN email address"
		)

		// GraphQL, the locale argument (and an Accept-Language it beats).
		status, body := h.graphql(t, signupDoc, map[string]any{"e": "greta@example.com", "p": goodPassword, "l": "de-AT"}, withHeader("Accept-Language", "en"))
		if status != http.StatusOK || body["errors"] != nil {
			t.Fatalf("signup: %d %v", status, body)
		}
		expectEmail(t, h, "greta@example.com", 1, deVerify, "de", "Willkommen bei Acme VPN", "15 Minuten gültig")
		if got := h.account(t, "greta@example.com").Locale; got != "de-AT" {
			t.Errorf("greta's locale = %q, want de-AT", got)
		}

		// REST, Accept-Language: the first language shipped.
		status, _, _ = h.rest(t, http.MethodPost, "/api/v1/auth/register", map[string]any{"email": "hans@example.com", "password": goodPassword},
			withHeader("Accept-Language", "fr-CH, fr;q=0.9, de;q=0.8, en;q=0.7"))
		if status != http.StatusCreated {
			t.Fatalf("register: %d", status)
		}
		expectEmail(t, h, "hans@example.com", 1, deVerify, "de", "Der Code ist")

		// REST, the locale field; GraphQL without a language: English.
		status, _, _ = h.rest(t, http.MethodPost, "/api/v1/auth/register", map[string]any{"email": "ida@example.com", "password": goodPassword, "locale": "en-GB"},
			withHeader("Accept-Language", "de"))
		if status != http.StatusCreated {
			t.Fatalf("register: %d", status)
		}
		expectEmail(t, h, "ida@example.com", 1, enVerify, "en", "Welcome to Acme VPN")
		status, body = h.graphql(t, signupDoc, map[string]any{"e": "jon@example.com", "p": goodPassword})
		if status != http.StatusOK || body["errors"] != nil {
			t.Fatalf("signup: %d %v", status, body)
		}
		expectEmail(t, h, "jon@example.com", 1, enVerify, "en", "valid for 15 minutes")

		// A password reset speaks the account's language too, and its
		// code works.
		code := h.code(t, "greta@example.com", 1, accounts.PurposeVerify)
		status, _, _ = h.rest(t, http.MethodPost, "/api/v1/auth/verify", map[string]any{"email": "greta@example.com", "code": code})
		if status != http.StatusOK {
			t.Fatalf("verify: %d", status)
		}
		status, _, _ = h.rest(t, http.MethodPost, "/api/v1/auth/password-reset", map[string]any{"email": "greta@example.com"})
		if status != http.StatusOK {
			t.Fatalf("password reset: %d", status)
		}
		expectEmail(t, h, "greta@example.com", 2, "Setzen Sie Ihr Passwort für Acme VPN zurück", "de", "Passwort")
		reset := h.code(t, "greta@example.com", 2, accounts.PurposeReset)
		status, _, _ = h.rest(t, http.MethodPost, "/api/v1/auth/password-reset/confirm", map[string]any{"email": "greta@example.com", "code": reset, "newPassword": "Other-Pass-9"})
		if status != http.StatusOK {
			t.Fatalf("reset confirm: %d", status)
		}

		// A malformed locale is refused by both doors, before any account.
		for _, d := range doors() {
			args := map[string]any{"email": "bad-" + d.name + "@example.com", "password": goodPassword, "locale": "not a language"}
			var r result
			if d.name == "rest" {
				r = d.call(t, h, opSignup, args)
			} else {
				status, body := h.graphql(t, `mutation($e: String!, $p: String!, $l: String) { signup(email: $e, password: $p, locale: $l) { success } }`,
					map[string]any{"e": args["email"], "p": goodPassword, "l": args["locale"]})
				errs, _ := body["errors"].([]any)
				if len(errs) == 0 {
					t.Fatalf("graphql signup with a bad locale: %d %v", status, body)
				}
				r.status, r.code = status, jsonPath(errs[0], "extensions", "code").(string)
				r.details = map[string]any{"field": jsonPath(errs[0], "extensions", "field")}
			}
			if r.code != "VALIDATION_ERROR" || r.details["field"] != "locale" {
				t.Errorf("%s signup with a bad locale: %d %s %v, want VALIDATION_ERROR on field locale", d.name, r.status, r.code, r.details)
			}
			h.expectNoAccount(t, args["email"].(string), "its locale is malformed")
		}
	})
}

// A file of HERALD_EMAIL_TEMPLATES_DIR replaces the embedded one; the
// others stay.
func TestE2EEmailTemplateOverride(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "en"), 0o755); err != nil {
		t.Fatal(err)
	}
	override := "{{define \"subject\"}}{{.Product}}: your code{{end}}\n{{define \"body\"}}Hello from the operator.\n\n{{.Code}}\n{{end}}\n"
	if err := os.WriteFile(filepath.Join(dir, "en", "verify.txt"), []byte(override), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHerald(t, "sqlite", brandEnv(map[string]string{"HERALD_EMAIL_TEMPLATES_DIR": dir}))
	signup(t, h, restDoor, "kai@example.com", goodPassword)
	msg := expectEmail(t, h, "kai@example.com", 1, "Acme VPN: your code", "en", "Acme VPN")
	if !strings.Contains(msg.Text, "Hello from the operator.") || !strings.Contains(msg.HTML, "Welcome to Acme VPN") {
		t.Errorf("the text part should be the override, the HTML part the embedded one:\n%s\n%s", msg.Text, msg.HTML)
	}
}

// A template that does not parse stops the start as a configuration error
// (exit status 2) naming the file and the line.
func TestE2EBrokenEmailTemplateIsAConfigError(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "de"), 0o755); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "de", "reset.html")
	if err := os.WriteFile(broken, []byte("{{define \"preheader\"}}x{{end}}\n{{define \"body\"}}\n{{if .Code}}<p>{{.Code}}</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HERALD_DATABASE_URL":        "sqlite:" + filepath.Join(t.TempDir(), "h.db"),
		"HERALD_EMAIL_TEMPLATES_DIR": dir,
	}
	_, stderr, err := runHerald(t, env, "", "serve")
	if err == nil {
		t.Fatal("serve started with a broken template")
	}
	t.Logf("serve: %v", err)
	if code := exitCode(err); code != 2 {
		t.Errorf("exit code %d, want 2 (%v)", code, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "HERALD_EMAIL_TEMPLATES_DIR") || !regexp.MustCompile(regexp.QuoteMeta(broken)+`:\d+`).MatchString(msg) {
		t.Errorf("error %q does not name the variable and %s:LINE", msg, broken)
	}
	if strings.Contains(stderr, "migrations applied") {
		t.Errorf("the database was touched before the configuration was checked:\n%s", stderr)
	}
	// herald check reports it on its configuration line, exit status 2.
	stdout, _, err := runHerald(t, env, "", "check")
	if code := exitCode(err); err == nil || code != 2 {
		t.Errorf("check = %v (exit %d), want exit 2", err, code)
	}
	if !strings.HasPrefix(stdout, "error") || !strings.Contains(stdout, "configuration") || !strings.Contains(stdout, broken+":") {
		t.Errorf("check's output does not name %s on an error line:\n%s", broken, stdout)
	}
}

// Without HERALD_SMTP_URL, in the development profile, the development
// mailer logs each email with its code as a field of its own, and the
// metrics count it as logged, not sent, with tracing (which wraps the
// mailer) on or off.
func TestE2EDevelopmentMailerLogsTheCode(t *testing.T) {
	for name, tp := range map[string]trace.TracerProvider{"untraced": nil, "traced": noop.NewTracerProvider()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testDevelopmentMailer(t, tp)
		})
	}
}

func testDevelopmentMailer(t *testing.T, tp trace.TracerProvider) {
	h := startHeraldTraced(t, "sqlite", accountsEnv(map[string]string{"HERALD_SMTP_URL": "", "HERALD_ENV": "development"}), tp)
	signup(t, h, graphQLDoor, "lea@example.com", goodPassword)
	var code string
	eventually(t, func() bool {
		for _, l := range h.logLines(t) {
			if l["msg"] == mail.DevMessage && l["to"] == "lea@example.com" {
				code, _ = l["code"].(string)
				return true
			}
		}
		return false
	}, "the development mailer logged no email to lea@example.com")
	if !regexp.MustCompile(`^\d{6}$`).MatchString(code) {
		t.Fatalf("logged code = %q, want 6 digits", code)
	}
	status, _, _ := h.rest(t, http.MethodPost, "/api/v1/auth/verify", map[string]any{"email": "lea@example.com", "code": code})
	if status != http.StatusOK {
		t.Errorf("the logged code does not verify: %d", status)
	}
	eventually(t, func() bool { return h.metric(t, `herald_emails_total{result="logged"}`) == 1 },
		"herald_emails_total{result=\"logged\"} never reached 1")
	if got := h.metric(t, `herald_emails_total{result="sent"}`); got != 0 {
		t.Errorf(`herald_emails_total{result="sent"} = %v, want 0: nothing was sent`, got)
	}
}
