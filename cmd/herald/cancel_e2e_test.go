package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A request the client abandons is logged at INFO as "client closed
// request" and counted as 499, never as a 500 or an ERROR: here a login
// waiting for the one hash slot while another login holds it.
func TestClientClosedRequestE2E(t *testing.T) {
	h := startHerald(t, "sqlite", map[string]string{
		"HERALD_HASH_CONCURRENCY":  "1",
		"HERALD_ARGON2_MEMORY":     "32768",
		"HERALD_ARGON2_ITERATIONS": "8",
		"HERALD_RATE_LIMIT_AUTH":   "0",
	})
	const email = "leaver@example.com"
	newVerifiedUser(t, h, restDoor.name, email)
	bodies := map[string]string{
		"/api/v1/auth/login": `{"email":"` + email + `","password":"` + testPassword + `"}`,
		"/graphql":           `{"query":"mutation{login(email:\"` + email + `\",password:\"` + testPassword + `\"){accessToken}}"}`,
	}
	for path, body := range bodies {
		// The first login holds the slot for the length of a hash...
		held := make(chan answer, 1)
		go func() { held <- rawDo(h, http.MethodPost, path, body) }()
		time.Sleep(50 * time.Millisecond)
		// ...while the second, waiting for it, is abandoned.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.BaseURL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if resp, err := h.client.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: the abandoned login answered %d; make the first hash slower", path, resp.StatusCode)
		}
		cancel()
		select {
		case a := <-held:
			if a.err != nil || a.status != http.StatusOK {
				t.Fatalf("%s: the login that waited its turn: %d %v", path, a.status, a.err)
			}
		case <-time.After(pollWait):
			t.Fatalf("%s: the first login did not finish", path)
		}
	}
	deadline := time.Now().Add(pollWait)
	for {
		var closed, requests499 int
		for _, l := range h.logLines(t) {
			if l["level"] == "ERROR" {
				t.Fatalf("an ERROR line for an abandoned request: %v", l)
			}
			if l["msg"] == "client closed request" && l["level"] == "INFO" {
				closed++
			}
			if l["msg"] == "request" && l["status"] == float64(499) {
				requests499++
			}
			if l["msg"] == "request" && l["status"] == float64(500) {
				t.Fatalf("an abandoned request counted as 500: %v", l)
			}
		}
		if closed == 2 && requests499 == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d \"client closed request\" lines and %d requests logged 499, want 2 of each", closed, requests499)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if status, _, raw := h.do(t, http.MethodGet, "/metrics", nil); status != http.StatusOK || !strings.Contains(string(raw), `status="499"`) {
		t.Fatalf("metrics do not count the abandoned requests under 499:\n%s", raw)
	}
}
