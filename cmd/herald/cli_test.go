package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

func TestCLI(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		args       []string
		wantErr    error // nil, or errUsage
		stdoutHas  []string
		stderrHas  []string
		stdoutIs   string
		quietOnOut bool // nothing on stdout
	}{
		{name: "--help", args: []string{"--help"}, stdoutHas: []string{"Usage: herald", "serve", "migrate", "version"}},
		{name: "-h", args: []string{"-h"}, stdoutHas: []string{"Usage: herald", "serve"}},
		{name: "help", args: []string{"help"}, stdoutHas: []string{"Usage: herald", "serve"}},
		{name: "serve --help", args: []string{"serve", "--help"}, stdoutHas: []string{"Usage: herald serve", "-addr",
			"HERALD_ADDR", "HERALD_DATABASE_URL", "HERALD_SMTP_URL", "HERALD_MAIL_FROM", "HERALD_TRUSTED_PROXIES",
			"HERALD_VERIFICATION_CODE_TTL", "HERALD_RESEND_COOLDOWN", "HERALD_RESEND_HOURLY_LIMIT", "HERALD_TRIAL_PERIOD", "HERALD_REFERRAL_BONUS"}},
		{name: "migrate --help", args: []string{"migrate", "--help"}, stdoutHas: []string{"Usage: herald migrate", "HERALD_DATABASE_URL"}},
		{name: "version", args: []string{"version"}, stdoutIs: "herald dev\n"},
		{name: "version --help", args: []string{"version", "--help"}, stdoutHas: []string{"Usage: herald version"}},
		{name: "unknown command", args: []string{"bogus"}, wantErr: errUsage, stderrHas: []string{`unknown command "bogus"`, "Usage: herald"}, quietOnOut: true},
		{name: "extra argument", args: []string{"version", "extra"}, wantErr: errUsage, stderrHas: []string{`unexpected argument "extra"`}, quietOnOut: true},
		{name: "unknown flag", args: []string{"serve", "--no-such-flag"}, wantErr: errUsage, stderrHas: []string{"no-such-flag"}},
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
	for _, cmd := range []string{"serve", "migrate"} {
		t.Run(cmd, func(t *testing.T) {
			_, _, err := runHerald(t, bad, "", cmd)
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

// The server with no command at all is `serve`: run it briefly.
func TestNoCommandServes(t *testing.T) {
	t.Parallel()
	env := testDefaults()
	env["HERALD_DATABASE_URL"] = sqlstoretest.NewURL(t, "sqlite")
	env["HERALD_ADDR"] = freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	var logs syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, nil, func(k string) string { return env[k] }, strings.NewReader(""), &syncBuffer{}, &logs)
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
	if err := <-done; err != nil {
		t.Fatalf("run returned %v, want nil", err)
	}
}
