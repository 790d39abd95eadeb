package sessions_test

import (
	"net/netip"
	"testing"

	"github.com/herald-vpn/herald/internal/sessions"
)

func TestClientAt(t *testing.T) {
	cases := []struct {
		ua   string
		ip   netip.Addr
		want sessions.Client
	}{
		{"curl/8", netip.MustParseAddr("203.0.113.7"), sessions.Client{UserAgent: "curl/8", IP: "203.0.113.7"}},
		{"app", netip.MustParseAddr("2001:db8::1"), sessions.Client{UserAgent: "app", IP: "2001:db8::1"}},
		{"", netip.Addr{}, sessions.Client{}}, // no address known: none kept
	}
	for _, c := range cases {
		if got := sessions.ClientAt(c.ua, c.ip); got != c.want {
			t.Errorf("ClientAt(%q, %v) = %+v, want %+v", c.ua, c.ip, got, c.want)
		}
	}
}
