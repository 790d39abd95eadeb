package main

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
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
