package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestCLI(t *testing.T) {
	t.Parallel()
	type cliCase struct {
		name        string
		args        []string
		wantErr     error // nil, or errUsage
		stdoutHas   []string
		stderrHas   []string
		stdoutLacks []string
		stdoutIs    string
		quietOnOut  bool // nothing on stdout
	}
	cases := []cliCase{
		{name: "--help", args: []string{"--help"}, stdoutHas: []string{"Usage: herald", "serve", "migrate", "check", "version", "help config"}},
		{name: "-h", args: []string{"-h"}, stdoutHas: []string{"Usage: herald", "serve"}},
		{name: "help", args: []string{"help"}, stdoutHas: []string{"Usage: herald", "serve"}},
		{name: "help config", args: []string{"help", "config"}, stdoutHas: []string{"HERALD_ADDR", "HERALD_DATABASE_URL", "HERALD_SMTP_URL", "HERALD_TELEGRAM_BOT_TOKEN", "also accept true/false, 1/0 and yes/no, in any case"}},
		{name: "help admin", args: []string{"help", "admin"}, stdoutHas: []string{"Usage: herald admin create"}},
		{name: "help users", args: []string{"help", "users"}, stdoutHas: []string{"Usage: herald users set-plan", "herald users enable --email E"}},
		{name: "help apikeys create", args: []string{"help", "apikeys", "create"}, stdoutHas: []string{"Usage: herald apikeys create", "-scopes"}, stdoutLacks: []string{"HERALD_ADDR"}},
		{name: "help bogus", args: []string{"help", "bogus"}, wantErr: errUsage, stderrHas: []string{`no command "bogus"`}, quietOnOut: true},
		{name: "serve --help", args: []string{"serve", "--help"}, stdoutHas: []string{"Usage: herald serve", "-addr",
			"HERALD_ADDR", "HERALD_DATABASE_URL", "HERALD_SMTP_URL", "HERALD_MAIL_FROM", "HERALD_TRUSTED_PROXIES",
			"HERALD_VERIFICATION_CODE_TTL", "HERALD_RESEND_COOLDOWN", "HERALD_RESEND_HOURLY_LIMIT", "HERALD_TRIAL_PERIOD", "HERALD_REFERRAL_BONUS"}},
		{name: "--version", args: []string{"--version"}, stdoutHas: []string{"herald ", "revision: ", "built: ", "go: go1."}},
		{name: "version", args: []string{"version"}, stdoutHas: []string{"herald ", "revision: ", "built: ", "go: go1."}},
		{name: "unknown command", args: []string{"bogus"}, wantErr: errUsage, stderrHas: []string{`unknown command "bogus"`, "Usage: herald"}, quietOnOut: true},
		{name: "extra argument", args: []string{"version", "extra"}, wantErr: errUsage, stderrHas: []string{`unexpected argument "extra"`}, quietOnOut: true},
		{name: "unknown flag", args: []string{"serve", "--no-such-flag"}, wantErr: errUsage, stderrHas: []string{"no-such-flag"}},
	}
	// Every command and sub-command: --help (and -h) prints its usage and
	// its own flags on standard output and succeeds; only serve lists the
	// variables. A missing or unknown sub-command, a missing argument and
	// an unknown flag are usage mistakes (exit status 2), said on standard
	// error.
	helps := []struct {
		args  []string
		usage string
		flags []string
	}{
		{[]string{"serve"}, "Usage: herald serve", []string{"-addr"}},
		{[]string{"migrate"}, "Usage: herald migrate", nil},
		{[]string{"migrate", "status"}, "Usage: herald migrate status", nil},
		{[]string{"check"}, "Usage: herald check", []string{"-timeout"}},
		{[]string{"admin"}, "Usage: herald admin create", nil},
		{[]string{"admin", "create"}, "Usage: herald admin create", []string{"-email", "-password", "-password-stdin"}},
		{[]string{"admin", "revoke"}, "Usage: herald admin revoke", []string{"-email"}},
		{[]string{"users"}, "Usage: herald users set-plan", nil},
		{[]string{"users", "set-plan"}, "Usage: herald users set-plan", []string{"-email", "-plan", "-expires"}},
		{[]string{"users", "enable"}, "Usage: herald users enable", []string{"-email"}},
		{[]string{"devices"}, "Usage: herald devices import", nil},
		{[]string{"devices", "import"}, "Usage: herald devices import", []string{"-file"}},
		{[]string{"apikeys"}, "Usage: herald apikeys create", nil},
		{[]string{"apikeys", "create"}, "Usage: herald apikeys create", []string{"-name", "-scopes", "-rate-limit", "-expires"}},
		{[]string{"apikeys", "list"}, "Usage: herald apikeys list", nil},
		{[]string{"apikeys", "revoke"}, "Usage: herald apikeys revoke ID", nil},
		{[]string{"bans"}, "Usage: herald bans list", nil},
		{[]string{"bans", "list"}, "Usage: herald bans list", nil},
		{[]string{"bans", "add"}, "Usage: herald bans add IP", []string{"-reason"}},
		{[]string{"bans", "lift"}, "Usage: herald bans lift IP", nil},
		{[]string{"keys"}, "Usage: herald keys generate", nil},
		{[]string{"keys", "generate"}, "Usage: herald keys generate", nil},
		{[]string{"keys", "vapid"}, "Usage: herald keys vapid", nil},
		{[]string{"version"}, "Usage: herald version", nil},
	}
	for _, h := range helps {
		for _, flag := range []string{"--help", "-h"} {
			c := cliCase{name: strings.Join(h.args, " ") + " " + flag, args: append(slices.Clone(h.args), flag), stdoutHas: append([]string{h.usage}, h.flags...)}
			if h.args[0] != "serve" {
				c.stdoutLacks = []string{"HERALD_ADDR"}
			}
			cases = append(cases, c)
		}
	}
	for _, args := range [][]string{
		{"admin"}, {"admin", "bogus"}, {"admin", "create"}, {"admin", "create", "--email"}, {"admin", "revoke", "--nope"},
		{"users"}, {"users", "set-plan"}, {"users", "set-plan", "--email", "a@example.com"}, {"users", "enable"}, {"users", "enable", "--nope"}, {"users", "enable", "extra"},
		{"devices"}, {"devices", "import"}, {"devices", "export"},
		{"apikeys"}, {"apikeys", "create"}, {"apikeys", "create", "--name", "billing"}, {"apikeys", "revoke"}, {"apikeys", "list", "extra"},
		{"bans"}, {"bans", "add"}, {"bans", "lift"}, {"bans", "list", "--reason", "x"},
		{"keys"}, {"keys", "rotate"}, {"keys", "generate", "extra"}, {"keys", "vapid", "extra"},
		{"migrate", "extra"}, {"migrate", "status", "extra"}, {"check", "--timeout", "soon"}, {"check", "--timeout", "0s"}, {"check", "extra"},
		{"admin", "create", "--email", "a@example.com", "--password", "x", "--password-stdin"},
	} {
		cases = append(cases, cliCase{name: "mistake " + strings.Join(args, " "), args: args, wantErr: errUsage, quietOnOut: true})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, err := runHerald(t, nil, "", c.args...)
			if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Fatalf("run(%q) = %v, want %v\nstderr: %s", c.args, err, c.wantErr, stderr)
			}
			if c.wantErr != nil {
				if code := exitCode(err); code != 2 {
					t.Errorf("exit code %d, want 2", code)
				}
			}
			for _, s := range c.stdoutHas {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			for _, s := range c.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr)
				}
			}
			for _, s := range c.stdoutLacks {
				if strings.Contains(stdout, s) {
					t.Errorf("stdout has %q:\n%s", s, stdout)
				}
			}
			if c.wantErr != nil && stderr == "" {
				t.Errorf("a usage mistake said nothing on stderr")
			}
			if c.stdoutIs != "" && stdout != c.stdoutIs {
				t.Errorf("stdout = %q, want %q", stdout, c.stdoutIs)
			}
			if c.quietOnOut && stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		want int
	}{
		{errUsage, 2},
		{fmt.Errorf("wrapped: %w", errUsage), 2},
		{configError{"HERALD_ADDR: bad"}, 2},
		{errors.New("database unreachable"), 1},
	}
	for _, c := range cases {
		if got := exitCode(c.err); got != c.want {
			t.Errorf("exitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

func TestInvalidConfiguration(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"HERALD_ADDR":                  "no-port-here",
		"HERALD_DATABASE_URL":          "mysql://db/herald",
		"HERALD_SMTP_URL":              "http://mail.example.com",
		"HERALD_LOG_FORMAT":            "xml",
		"HERALD_RESEND_COOLDOWN":       "soon",
		"HERALD_RESEND_HOURLY_LIMIT":   "0",
		"HERALD_VERIFICATION_CODE_TTL": "-5m",
	}
	for _, cmd := range []string{"serve", "migrate", "migrate status", "check", "bans list", "users set-plan --email a@example.com --plan basic --expires 1h"} {
		t.Run(cmd, func(t *testing.T) {
			_, _, err := runHerald(t, bad, "", strings.Fields(cmd)...)
			var ce configError
			if !errors.As(err, &ce) {
				t.Fatalf("run(%s) = %v, want a configError", cmd, err)
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
			if lines[0] != "invalid configuration:" {
				t.Errorf("first line %q, want the heading", lines[0])
			}
			problems := lines[1:]
			if len(problems) != len(bad) {
				t.Fatalf("%d problem lines, want one per bad variable (%d):\n%s", len(problems), len(bad), err)
			}
			for name := range bad {
				n := 0
				for _, p := range problems {
					if strings.HasPrefix(p, name+": ") {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%d lines for %s, want 1:\n%s", n, name, err)
				}
			}
		})
	}
}

func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env := map[string]string{"HERALD_DATABASE_URL": sqlstoretest.NewURL(t, d)}
		out, stderr, err := runHerald(t, env, "", "migrate")
		if err != nil {
			t.Fatalf("migrate: %v\n%s", err, stderr)
		}
		var dialect string
		var n int
		if _, err := fmt.Sscanf(out, "%s %d migrations applied", &dialect, &n); err != nil || dialect != string(d)+":" || n == 0 {
			t.Fatalf("first migrate said %q, want %s: N>0 migrations applied", out, d)
		}
		out, _, err = runHerald(t, env, "", "migrate")
		if err != nil || !strings.HasPrefix(out, string(d)+": 0 migrations applied") {
			t.Fatalf("second migrate: %v %q, want 0 migrations applied", err, out)
		}
	})
}

// The server with no command at all is `serve`: run it briefly, in the
// development profile, as the README's first command does (production
// would want HERALD_SMTP_URL).
func TestNoCommandServes(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(readme), "```sh\n")
	if first, _, _ := strings.Cut(block, "\n"); !strings.HasPrefix(first, "HERALD_ENV=development go run ./cmd/herald ") {
		t.Errorf("the README's first command is %q, want the server in the development profile", first)
	}
	env := testDefaults()
	env["HERALD_ENV"] = "development"
	env["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, "sqlite")
	env["HERALD_ADDR"] = freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	var logs testsupport.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, strings.NewReader(""), &testsupport.Buffer{}, &logs)
	}()
	eventually(t, func() bool {
		select {
		case err := <-done:
			t.Fatalf("run returned %v before serving:\n%s", err, logs.String())
		default:
		}
		return strings.Contains(logs.String(), `"msg":"herald listening"`)
	}, "the server never listened")
	cancel()
	if err := testsupport.Receive(t, done, stopWait, "run to return after cancel"); err != nil {
		t.Fatalf("run returned %v, want nil", err)
	}
}

// `herald admin create` on an account that exists grants it the admin
// scope: the same account (found whatever the case of the email), its
// password unchanged (the one given is not used), and the scope in the
// tokens of its next login. Granting twice keeps one admin scope.
func TestAdminCreateOnExistingAccount(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(nil))
		const email = "existing@example.com"
		isAdmin := func(claims map[string]any) bool {
			return slices.Contains(strings.Fields(fmt.Sprint(claims["scope"])), "admin")
		}
		newVerifiedUser(t, h, restDoor.name, email)
		before := login(t, h, restDoor.name, email, testPassword)
		_, claims := jwtParts(t, before.access)
		if isAdmin(claims) {
			t.Fatalf("a new user's token has the admin scope: %v", claims)
		}
		expectError(t, "the user on an admin field", call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(before.access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")

		for i := range 2 {
			stdout, stderr, err := runHerald(t, h.Env, "", "admin", "create", "--email", "Existing@Example.com", "--password", newPassword)
			if err != nil {
				t.Fatalf("admin create %d on the existing account: %v\n%s", i+1, err, stderr)
			}
			if id := strings.TrimSpace(stdout); id != claims["sub"] {
				t.Fatalf("admin create %d printed %q, want the existing account's id %v", i+1, id, claims["sub"])
			}
			if !strings.Contains(stderr, "granted the admin scope to existing account") {
				t.Errorf("admin create %d said %q, want that it granted the scope to the existing account", i+1, stderr)
			}
		}
		if scope := h.account(t, email).Scope; scope != "admin" {
			t.Errorf("scope %q after two grants, want \"admin\"", scope)
		}

		expectError(t, "login with the password given to admin create", call(t, h, restDoor.name, opLogin, map[string]any{"email": email, "password": newPassword}), http.StatusUnauthorized, "INVALID_CREDENTIALS")
		after := login(t, h, graphQLDoor.name, email, testPassword)
		if _, c := jwtParts(t, after.access); c["sub"] != claims["sub"] || !isAdmin(c) {
			t.Fatalf("token after the grant: claims %v, want sub %v and the admin scope", c, claims["sub"])
		}
		expectOK(t, "the granted admin on an admin field", call(t, h, graphQLDoor.name, opBotStatus, nil, withBearer(after.access)), http.StatusOK)
	})
}

// `herald migrate status` lists every migration, pending on a fresh
// database (and applies none), applied after `herald migrate`.
func TestMigrateStatusCommand(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		env := map[string]string{"HERALD_DATABASE_URL": sqlstoretest.NewURL(t, d)}
		status := func() (applied, pending int, last string) {
			t.Helper()
			out, stderr, err := runHerald(t, env, "", "migrate", "status")
			if err != nil {
				t.Fatalf("migrate status: %v\n%s", err, stderr)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			for _, l := range lines[:len(lines)-1] {
				switch {
				case strings.HasPrefix(l, "applied "):
					applied++
				case strings.HasPrefix(l, "pending "):
					pending++
				default:
					t.Fatalf("line %q is neither applied nor pending", l)
				}
			}
			return applied, pending, lines[len(lines)-1]
		}
		for range 2 {
			if a, p, last := status(); a != 0 || p == 0 || last != fmt.Sprintf("%s: 0 applied, %d pending", d, p) {
				t.Fatalf("fresh database: %d applied, %d pending, summary %q", a, p, last)
			}
		}
		if _, stderr, err := runHerald(t, env, "", "migrate"); err != nil {
			t.Fatalf("migrate: %v\n%s", err, stderr)
		}
		if a, p, last := status(); p != 0 || a == 0 || last != fmt.Sprintf("%s: %d applied, 0 pending", d, a) {
			t.Fatalf("after migrate: %d applied, %d pending, summary %q", a, p, last)
		}
	})
}

// The commands page of the manual, docs/commands.md, names every command
// and sub-command.
func TestCommandsPageNamesEveryCommand(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("../../docs/commands.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(page)
	want := []string{"herald serve", "herald check", "herald migrate`", "herald migrate status", "herald admin create", "herald admin revoke",
		"herald users set-plan", "herald devices import", "herald apikeys create", "apikeys list", "apikeys revoke", "herald bans list",
		"bans add", "bans lift", "herald keys generate", "herald keys vapid", "herald help config", "herald version", "herald --version", "--password-stdin"}
	for _, c := range commands() {
		want = append(want, "herald "+c.name)
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("docs/commands.md lacks %q", w)
		}
	}
}
