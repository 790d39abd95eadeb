package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// `herald admin create` reads the password from standard input when it is
// not a terminal, and with --password-stdin; the account logs in with it.
// Only the account's id is printed, and no warning that concerns a server
// (no SMTP, no push provider) although neither is configured (the server
// beside it logs its emails, as HERALD_MAIL_TO_LOG=on allows).
func TestAdminCreatePasswordFromStdin(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", sessionEnv(map[string]string{"HERALD_SMTP_URL": "", "HERALD_MAIL_TO_LOG": "on"}))
	cases := []struct {
		name  string
		stdin string
		flags []string
	}{
		{"piped", testPassword + "\n", nil},
		{"--password-stdin", testPassword + "\r\n", []string{"--password-stdin"}},
		{"no final newline", testPassword, []string{"--password-stdin"}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			email := fmt.Sprintf("admin%d@example.com", i)
			args := append([]string{"admin", "create", "--email", email}, c.flags...)
			stdout, stderr, err := runHerald(t, h.Env, c.stdin, args...)
			if err != nil {
				t.Fatalf("admin create: %v\n%s", err, stderr)
			}
			if id := strings.TrimSpace(stdout); id != h.account(t, email).ID {
				t.Errorf("printed %q, want the account's id", stdout)
			}
			for _, noise := range []string{"HERALD_SMTP_URL", "push provider", "WARN"} {
				if strings.Contains(stderr, noise) {
					t.Errorf("stderr mentions %q:\n%s", noise, stderr)
				}
			}
			login(t, h, restDoor.name, email, testPassword)
		})
	}
}

// Without a password anywhere, admin create fails before touching the
// database.
func TestAdminCreateWithoutPassword(t *testing.T) {
	t.Parallel()
	url := sqlstoretest.NewURL(t, "sqlite")
	for _, stdin := range []string{"", "\n"} {
		_, _, err := runHerald(t, map[string]string{"HERALD_DATABASE_URL": url}, stdin, "admin", "create", "--email", "a@example.com", "--password-stdin")
		if err == nil || !strings.Contains(err.Error(), "no password given") || exitCode(err) != 1 {
			t.Errorf("stdin %q: %v, want no password given (exit 1)", stdin, err)
		}
	}
}
