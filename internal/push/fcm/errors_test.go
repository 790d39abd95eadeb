package fcm

import (
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// Answers the fake does not produce: non-JSON bodies from proxies and
// bare statuses.
func TestClassifyResponseFallbacks(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header http.Header
		body   string
		want   push.Kind
		after  time.Duration
	}{
		{"html 502 from a proxy", 502, http.Header{"Retry-After": {"4"}}, "<html>Bad Gateway</html>", push.Retryable, 4 * time.Second},
		{"bare 401", 401, nil, "", push.Fatal, 0},
		{"bare 404 is not proof of a dead token", 404, nil, `{"error":{"code":404,"status":"NOT_FOUND","message":"Requested entity was not found."}}`, push.Other, 0},
		{"resource exhausted without errorCode", 429, nil, `{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}`, push.Retryable, 0},
		{"payload too big", 400, nil, `{"error":{"code":400,"status":"INVALID_ARGUMENT","message":"Message is too big"}}`, push.Other, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pe := classifyResponse(tt.status, tt.header, []byte(tt.body))
			if pe.Kind != tt.want || pe.RetryAfter != tt.after || pe.Status != tt.status || pe.Reason == "" {
				t.Fatalf("got %+v, want kind %v after %v", pe, tt.want, tt.after)
			}
		})
	}
}
