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
	"github.com/herald-vpn/herald/internal/seal"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
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

// Secrets at rest, end to end on each database: a server started with
// HERALD_ENCRYPTION_KEY seals what an earlier one kept in plain text (the
// raw tables then hold no plain secret), and goes on signing webhooks and
// verifying tokens with the same secrets; check reports the plain rows
// as a warning in production, and a wrong key as an error, which also
// stops the start; a rotation (the old key as previous) seals every row
// again under the new key.
func TestSecretsSealedAtRestE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		const k2 = "c0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ffeec0ff"
		rcv := newHookReceiver(t, nil)
		k1ID, k2ID := mustKeyID(t, testEncryptionKey), mustKeyID(t, k2)

		// No key: kept plain, and check warns.
		h := startHerald(t, d, webhooksEnv(map[string]string{"HERALD_ENCRYPTION_KEY": ""}))
		dbURL := h.DBURL
		admin := newAdminToken(t, h, "ops@example.com")
		key, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
		_, secret := createHook(t, h, key, rcv.srv.URL+"/sealed", []string{"user.created"})
		plainEnv := maps.Clone(h.Env)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		if raw := sqlstoretest.RawColumn(t, dbURL, `SELECT secret FROM webhook_endpoints`); len(raw) != 1 || raw[0] != secret {
			t.Fatalf("without a key the stored secret is %q, want it plain (%s)", raw, secret)
		}
		stdout, _, err := runHerald(t, plainEnv, "", "check")
		if line := checkLines(t, stdout)["secrets"]; err != nil || !strings.HasPrefix(line, "warning ") || !strings.Contains(line, "in plain text") || !strings.Contains(line, "HERALD_ENCRYPTION_KEY") {
			t.Errorf("check without a key: %v, secrets line %q, want a warning naming HERALD_ENCRYPTION_KEY", err, line)
		}

		// signs checks that the server signs a new user's event with the
		// endpoint's original secret and verifies the admin's old token.
		signs := func(t *testing.T, h *herald, email string) {
			t.Helper()
			newVerifiedUser(t, h, restDoor.name, email)
			ds := rcv.waitFor(t, "/sealed", func(ds []hookDelivery) bool {
				return len(ds) > 0 && strings.Contains(string(ds[len(ds)-1].body), email)
			}, "the user.created event of "+email)
			verifyHook(t, secret, ds[len(ds)-1])
			if status, _, _ := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(admin)); status != http.StatusOK {
				t.Errorf("a token signed before the sealing: %d, want 200 (the JWT seed is the same)", status)
			}
		}
		// sealedBy checks that every stored secret is sealed by the key id
		// and none holds the webhook secret in plain text.
		sealedBy := func(t *testing.T, id string) {
			t.Helper()
			raw := sqlstoretest.RawColumn(t, dbURL, `SELECT value FROM secrets`)
			raw = append(raw, sqlstoretest.RawColumn(t, dbURL, `SELECT secret FROM webhook_endpoints`)...)
			if len(raw) < 4 {
				t.Fatalf("%d stored secrets, want the JWT seed, the HMAC keys and the webhook secret", len(raw))
			}
			for _, v := range raw {
				if by, ok := seal.SealedBy([]byte(v)); !ok || by != id || strings.Contains(v, strings.TrimPrefix(secret, "whsec_")) {
					t.Errorf("stored secret %.60q, want sealed by key %s", v, id)
				}
			}
		}

		// The key: sealed at start.
		h = startHerald(t, d, webhooksEnv(map[string]string{"HERALD_DATABASE_URL": dbURL}))
		if !h.logsMention(t, "stored secrets sealed with HERALD_ENCRYPTION_KEY") {
			t.Error("the start does not say it sealed the stored secrets")
		}
		sealedBy(t, k1ID)
		signs(t, h, "after-sealing@example.com")
		k1Env := maps.Clone(h.Env)
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		stdout, _, err = runHerald(t, k1Env, "", "check")
		if line := checkLines(t, stdout)["secrets"]; err != nil || !strings.HasPrefix(line, "ok ") || !strings.Contains(line, "sealed with key "+k1ID) {
			t.Errorf("check with the key: %v, secrets line %q", err, line)
		}

		// A wrong key: check fails on the secrets line, and serve refuses
		// to start, each naming the key that sealed them.
		wrongEnv := maps.Clone(k1Env)
		wrongEnv["HERALD_ENCRYPTION_KEY"] = k2
		stdout, _, err = runHerald(t, wrongEnv, "", "check")
		if line := checkLines(t, stdout)["secrets"]; exitCode(err) != 1 || !strings.HasPrefix(line, "error ") || !strings.Contains(line, "fix: set HERALD_ENCRYPTION_KEY to the key that sealed them (key "+k1ID+")") {
			t.Errorf("check with a wrong key: exit %d, secrets line %q", exitCode(err), line)
		}
		wrongEnv["HERALD_ADDR"] = freeAddr(t)
		_, err = serveRefused(t, wrongEnv)
		var ce configError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "HERALD_ENCRYPTION_KEY: ") || !strings.Contains(err.Error(), "sealed with key "+k1ID) || !strings.Contains(err.Error(), "HERALD_ENCRYPTION_KEY is key "+k2ID) {
			t.Errorf("serve with a wrong key = %v, want a configuration error naming both keys", err)
		}
		sealedBy(t, k1ID) // the refused start changed nothing

		// Rotation: the new key, the old one as previous.
		h = startHerald(t, d, webhooksEnv(map[string]string{"HERALD_DATABASE_URL": dbURL, "HERALD_ENCRYPTION_KEY": k2, "HERALD_ENCRYPTION_KEY_PREVIOUS": testEncryptionKey}))
		sealedBy(t, k2ID)
		signs(t, h, "after-rotation@example.com")
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		stdout, _, err = runHerald(t, wrongEnv, "", "check") // k2 alone
		if line := checkLines(t, stdout)["secrets"]; err != nil || !strings.Contains(line, "sealed with key "+k2ID) {
			t.Errorf("check with the new key alone after the rotation: %v, secrets line %q", err, line)
		}
	})
}

func mustKeyID(t *testing.T, hexKey string) string {
	t.Helper()
	k, err := seal.ParseKey(hexKey)
	if err != nil {
		t.Fatal(err)
	}
	return seal.KeyID(k)
}
