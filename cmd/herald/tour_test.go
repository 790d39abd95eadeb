package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuickTour runs the README's quick tour, exactly as written, against
// the binary started as the tour says (development profile, log in
// herald.log, the embedded default database in the working directory). The
// tour stops at the first unexpected answer (curl -f, jq -e, set -e).
func TestQuickTour(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- tour -->\n```sh\n")
	if !ok {
		t.Fatal("README has no <!-- tour --> block")
	}
	script, _, ok := strings.Cut(block, "```\n<!-- /tour -->")
	if !ok {
		t.Fatal("the tour block is not closed")
	}
	for _, tool := range []string{"bash", "curl", "jq"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the tour needs %s: %v", tool, err)
		}
	}

	dir := t.TempDir()
	bin := buildHerald(t, t.TempDir())
	addr := freeAddr(t)
	// What the tour leaves at its defaults stays so; the hash is made cheap
	// and the address free, for a test.
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir,
		"HERALD_ARGON2_MEMORY=1024", "HERALD_ARGON2_ITERATIONS=1", "HERALD_ARGON2_PARALLELISM=1"}
	logFile, err := os.Create(filepath.Join(dir, "herald.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	server := exec.Command(bin)
	server.Dir = dir
	server.Env = append(env, "HERALD_ENV=development", "HERALD_ADDR="+addr)
	server.Stderr = logFile
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { server.Wait(); close(exited) }()
	t.Cleanup(func() {
		server.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(stopWait):
			server.Process.Kill()
		}
	})
	h := &herald{BaseURL: "http://" + addr}
	eventually(t, func() bool {
		out, err := exec.Command("curl", "-sf", h.BaseURL+"/readyz").Output()
		return err == nil && len(out) > 0
	}, "the server never answered /readyz")

	tour := exec.Command("bash", "-euo", "pipefail", "-c", script)
	tour.Dir = dir
	tour.Env = append(env, "B="+h.BaseURL, "LOG=herald.log", "HERALD="+bin)
	out, err := tour.CombinedOutput()
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "herald.log"))
		t.Fatalf("the README's quick tour failed: %v\noutput:\n%s\nserver log:\n%s", err, out, logs)
	}
	// Each check of the tour (jq -e with a condition) printed true: none
	// was skipped.
	checks := strings.Count(script, "| jq -e ")
	if n := strings.Count(string(out), "true\n"); checks < 8 || n != checks {
		t.Fatalf("the tour printed true %d times for its %d checks:\n%s", n, checks, out)
	}
}
