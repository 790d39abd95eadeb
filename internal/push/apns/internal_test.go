package apns

import (
	"testing"

	"github.com/sideshow/apns2"

	"github.com/herald-vpn/herald/internal/push"
)

func TestResolveEndpoint(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", apns2.HostProduction},
		{"production", apns2.HostProduction},
		{"sandbox", apns2.HostDevelopment},
		{"Development", apns2.HostDevelopment},
		{"https://127.0.0.1:8443/", "https://127.0.0.1:8443"},
	}
	for _, tt := range tests {
		if got, err := resolveEndpoint(tt.in); err != nil || got != tt.want {
			t.Errorf("resolveEndpoint(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

// Status fallbacks for reasons missing from the table.
func TestKindOfStatusFallback(t *testing.T) {
	tests := []struct {
		status int
		want   push.Kind
	}{
		{410, push.DeadToken},
		{403, push.Fatal},
		{429, push.Retryable},
		{502, push.Retryable},
		{400, push.Other},
	}
	for _, tt := range tests {
		if got := kindOf(tt.status, "SomethingNew"); got != tt.want {
			t.Errorf("kindOf(%d) = %v, want %v", tt.status, got, tt.want)
		}
	}
}
