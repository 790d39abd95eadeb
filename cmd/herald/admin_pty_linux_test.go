package main

import (
	"bufio"
	"context"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// On a terminal, admin create prompts for the password twice and the
// terminal does not echo it: the test types into a pseudo-terminal only
// once its echo is off, and finds nothing of the password in what the
// terminal printed.
func TestAdminCreatePromptsWithoutEcho(t *testing.T) {
	t.Parallel()
	h := startHerald(t, "sqlite", sessionEnv(nil))
	cases := []struct {
		name    string
		typed   [2]string
		wantErr string
	}{
		{"same twice", [2]string{testPassword, testPassword}, ""},
		{"differ", [2]string{testPassword, newPassword}, "the two passwords differ"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo-terminal here: %v", err)
			}
			defer ptmx.Close()
			defer tty.Close()
			email := strings.ReplaceAll(c.name, " ", "-") + "@example.com"
			var stdout, stderr testsupport.Buffer
			done := make(chan error, 1)
			go func() {
				done <- run(context.Background(), []string{"admin", "create", "--email", email}, func(k string) string { return h.Env[k] }, tty, &stdout, &stderr)
			}()
			echoOff := func() bool {
				tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
				return err == nil && tio.Lflag&unix.ECHO == 0
			}
			for i, prompt := range []string{"Password: ", "Password (again): "} {
				eventually(t, func() bool { return strings.HasSuffix(stderr.String(), prompt) && echoOff() }, "prompt %d never came with the echo off (stderr %q)", i+1, stderr.String())
				if _, err := ptmx.WriteString(c.typed[i] + "\n"); err != nil {
					t.Fatal(err)
				}
			}
			err = testsupport.Receive(t, done, stopWait, "admin create to return")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("admin create = %v, want %q", err, c.wantErr)
				}
			} else if err != nil {
				t.Fatalf("admin create: %v\n%s", err, stderr.String())
			}
			if echoOff() {
				t.Error("the terminal's echo is still off")
			}
			// What the terminal printed, up to a marker written after.
			if _, err := tty.WriteString("END-OF-TEST\n"); err != nil {
				t.Fatal(err)
			}
			var shown strings.Builder
			r := bufio.NewReader(ptmx)
			for !strings.Contains(shown.String(), "END-OF-TEST") {
				line, err := r.ReadString('\n')
				shown.WriteString(line)
				if err != nil {
					t.Fatalf("reading the terminal: %v (so far %q)", err, shown.String())
				}
			}
			for _, pw := range c.typed {
				if strings.Contains(shown.String(), pw) {
					t.Errorf("the terminal echoed the password: %q", shown.String())
				}
			}
			if c.wantErr == "" {
				login(t, h, restDoor.name, email, testPassword)
			}
		})
	}
}
