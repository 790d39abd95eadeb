package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestMetricsListenerE2E: with HERALD_METRICS_ADDR set, /metrics is served
// there and not on the API's address; GraphQL operations are labelled by a
// bounded set (a root field, "multiple", "other"), never by what a client
// wrote.
func TestMetricsListenerE2E(t *testing.T) {
	t.Parallel()
	metricsAddr := freeAddr(t)
	h := startHerald(t, "sqlite", map[string]string{"HERALD_METRICS_ADDR": metricsAddr, "HERALD_METRICS_PUBLIC": ""})
	if status, _, _ := h.do(t, http.MethodGet, "/metrics", nil); status != http.StatusNotFound {
		t.Errorf("GET /metrics on HERALD_ADDR: %d, want 404 when HERALD_METRICS_ADDR is set", status)
	}
	h.graphql(t, `{ version }`, nil)
	h.graphql(t, `{ version __typename }`, nil)
	h.graphql(t, `{ attackerChosenName123 }`, nil)

	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics on HERALD_METRICS_ADDR: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics on HERALD_METRICS_ADDR: %d", resp.StatusCode)
	}
	body := string(raw)
	for _, label := range []string{`operation="version"`, `operation="multiple"`, `operation="other"`} {
		if !strings.Contains(body, "herald_http_requests_total{") || !strings.Contains(body, label) {
			t.Errorf("metrics lack a request sample with %s", label)
		}
	}
	if strings.Contains(body, "attackerChosenName123") {
		t.Error("a field name the schema lacks became a metrics label")
	}
	// Profiles on the private listener only.
	resp, err = http.Get("http://" + metricsAddr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "heap profile") {
		t.Errorf("GET /debug/pprof/heap on HERALD_METRICS_ADDR: %d %.100s", resp.StatusCode, raw)
	}
	if status, _, _ := h.do(t, http.MethodGet, "/debug/pprof/heap", nil); status != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/heap on HERALD_ADDR: %d, want 404", status)
	}
}

// In production /metrics is not on the API's address unless
// HERALD_METRICS_PUBLIC=on asks for it; the development profile serves it
// there (it has no listener of its own), unless told not to.
func TestMetricsOffThePublicListenerE2E(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		env  map[string]string
		want int
	}{
		{"production", map[string]string{"HERALD_METRICS_PUBLIC": ""}, http.StatusNotFound},
		{"production, public", map[string]string{"HERALD_METRICS_PUBLIC": "on"}, http.StatusOK},
		{"development", map[string]string{"HERALD_METRICS_PUBLIC": "", "HERALD_ENV": "development"}, http.StatusOK},
		{"development, not public", map[string]string{"HERALD_METRICS_PUBLIC": "false", "HERALD_ENV": "development"}, http.StatusNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := startHerald(t, "sqlite", c.env)
			status, _, raw := h.do(t, http.MethodGet, "/metrics", nil)
			if status != c.want {
				t.Fatalf("GET /metrics on HERALD_ADDR: %d, want %d", status, c.want)
			}
			if exposed := strings.Contains(string(raw), "go_goroutines"); exposed != (c.want == http.StatusOK) {
				t.Errorf("GET /metrics on HERALD_ADDR shows metrics: %v, want %v", exposed, c.want == http.StatusOK)
			}
			if c.want == http.StatusNotFound && !h.logsMention(t, "GET /metrics is not served") {
				t.Error("the start does not say that /metrics is served nowhere")
			}
		})
	}
}
