package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
)

// A production server without HERALD_SMTP_URL would write every code to
// its log: it refuses to start (exit 2, a line naming the variable and the
// way out), before the database is touched. HERALD_MAIL_TO_LOG=on starts
// it, says so in its log, and `herald check` warns about it.
func TestProductionWithoutSMTP(t *testing.T) {
	t.Parallel()
	dbPath := filepath.Join(t.TempDir(), "h.db")
	env := testDefaults()
	env["HERALD_DATABASE_URL"] = "sqlite:" + dbPath
	env["HERALD_ADDR"] = freeAddr(t)
	stderr, err := serveRefused(t, env)
	var ce configError
	if !errors.As(err, &ce) || exitCode(err) != 2 {
		t.Fatalf("serve without SMTP in production = %v (exit %d), want a configuration error (exit 2)\n%s", err, exitCode(err), stderr)
	}
	for _, want := range []string{"HERALD_SMTP_URL: not set", "HERALD_MAIL_TO_LOG=on", "HERALD_ENV=development"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(dbPath); err == nil || strings.Contains(stderr, "migrations applied") {
		t.Errorf("the database was opened before the refusal:\n%s", stderr)
	}
	// check says the same on its smtp line, an error (exit 1).
	stdout, _, err := runHerald(t, env, "", "check")
	if line := checkLines(t, stdout)["smtp"]; !strings.HasPrefix(line, "error ") || !strings.Contains(line, "HERALD_SMTP_URL") || exitCode(err) != 1 {
		t.Errorf("check: smtp line %q (exit %d), want an error naming HERALD_SMTP_URL (exit 1)", line, exitCode(err))
	}

	// Asked for: the server starts, logs each email with its code, and
	// says at start that it will.
	h := startHerald(t, "sqlite", accountsEnv(map[string]string{"HERALD_SMTP_URL": "", "HERALD_MAIL_TO_LOG": "on"}))
	if !h.logsMention(t, "HERALD_MAIL_TO_LOG=on and HERALD_SMTP_URL is not set") {
		t.Error("the start does not warn that emails go to the log")
	}
	signup(t, h, restDoor, "logged@example.com", goodPassword)
	eventually(t, func() bool {
		for _, l := range h.logLines(t) {
			if l["msg"] == mail.DevMessage && l["to"] == "logged@example.com" && l["code"] != nil {
				return true
			}
		}
		return false
	}, "the email was not logged")
	checkEnv := maps.Clone(h.Env)
	stdout, stderr, err = runHerald(t, checkEnv, "", "check")
	if err != nil {
		t.Fatalf("check with HERALD_MAIL_TO_LOG=on = %v, want exit 0 (a warning)\n%s%s", err, stdout, stderr)
	}
	if line := checkLines(t, stdout)["smtp"]; !strings.HasPrefix(line, "warning ") || !strings.Contains(line, "HERALD_MAIL_TO_LOG=on") {
		t.Errorf("check: smtp line %q, want a warning naming HERALD_MAIL_TO_LOG=on", line)
	}
}

// serveRefused runs `herald serve` with env, expecting it to refuse to
// start: a server that starts anyway is stopped after a few seconds (run
// then returns nil, which the caller reports), so the test fails instead
// of hanging.
func serveRefused(t *testing.T, env map[string]string) (stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = run(ctx, []string{"serve"}, func(k string) string { return env[k] }, strings.NewReader(""), &out, &errOut)
	return errOut.String(), err
}

// withHost sends the request with another Host header, as any client may.
func withHost(host string) reqOption { return func(r *http.Request) { r.Host = host } }

// OpenID discovery never builds a production answer from the Host header
// a client sent: the base comes from HERALD_PUBLIC_URL (or an http(s)
// issuer), and without one production answers 404. The development
// profile takes it from the request, and says the answer is private to
// that Host.
func TestDiscoveryHostE2E(t *testing.T) {
	t.Parallel()
	const path, foreign = "/.well-known/openid-configuration", "evil.example"
	discover := func(t *testing.T, h *herald, opts ...reqOption) (int, http.Header, map[string]any, string) {
		t.Helper()
		status, hdr, raw := h.do(t, http.MethodGet, path, nil, opts...)
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("discovery: %d %s: %v", status, raw, err)
		}
		return status, hdr, doc, string(raw)
	}
	t.Run("production without a public URL", func(t *testing.T) {
		t.Parallel()
		h := startHerald(t, "sqlite", nil)
		status, _, _, raw := discover(t, h, withHost(foreign))
		if status != http.StatusNotFound || strings.Contains(raw, foreign) || !strings.Contains(raw, `"code":"NOT_FOUND"`) {
			t.Errorf("discovery with Host %s: %d %s, want 404 NOT_FOUND naming no host", foreign, status, raw)
		}
		if status, _, _, _ := discover(t, h); status != http.StatusNotFound {
			t.Errorf("discovery with the server's own Host: %d, want 404", status)
		}
		if !h.logsMention(t, "openid-configuration answers 404: set HERALD_PUBLIC_URL") {
			t.Error("the start does not say why discovery answers 404")
		}
		if status, _, _ := h.do(t, http.MethodGet, "/.well-known/jwks.json", nil); status != http.StatusOK {
			t.Errorf("jwks.json: %d, want 200 (the keys stay published)", status)
		}
	})
	t.Run("production with HERALD_PUBLIC_URL", func(t *testing.T) {
		t.Parallel()
		h := startHerald(t, "sqlite", map[string]string{"HERALD_PUBLIC_URL": "https://api.example.com/"})
		status, hdr, doc, raw := discover(t, h, withHost(foreign), withHeader("X-Forwarded-Host", foreign))
		if status != http.StatusOK || doc["jwks_uri"] != "https://api.example.com/.well-known/jwks.json" || strings.Contains(raw, foreign) {
			t.Errorf("discovery with Host %s: %d %s, want jwks_uri under HERALD_PUBLIC_URL", foreign, status, raw)
		}
		if cc := hdr.Get("Cache-Control"); cc != "public, max-age=300" {
			t.Errorf("Cache-Control %q, want public, max-age=300 (the same for every Host)", cc)
		}
	})
	t.Run("development", func(t *testing.T) {
		t.Parallel()
		h := startHerald(t, "sqlite", map[string]string{"HERALD_ENV": "development"})
		status, hdr, doc, raw := discover(t, h, withHost(foreign))
		if status != http.StatusOK || doc["jwks_uri"] != "http://"+foreign+"/.well-known/jwks.json" {
			t.Errorf("discovery with Host %s: %d %s, want jwks_uri at that Host", foreign, status, raw)
		}
		if cc := hdr.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
			t.Errorf("Cache-Control %q, want private (the answer depends on Host)", cc)
		}
		if vary := hdr.Values("Vary"); !slices.ContainsFunc(strings.Split(strings.Join(vary, ","), ","), func(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "Host") }) {
			t.Errorf("Vary %q, want Host in it", vary)
		}
		if _, _, doc, _ := discover(t, h); doc["jwks_uri"] != h.BaseURL+"/.well-known/jwks.json" {
			t.Errorf("discovery with the server's own Host: jwks_uri %v, want %s/.well-known/jwks.json", doc["jwks_uri"], h.BaseURL)
		}
	})
}
