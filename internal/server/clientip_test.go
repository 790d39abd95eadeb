package server

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	cases := []struct {
		name, peer, xff, want string
	}{
		{"untrusted peer ignores header", "203.0.113.9:5000", "1.2.3.4", "203.0.113.9"},
		{"trusted peer, one hop", "10.0.0.1:5000", "198.51.100.7", "198.51.100.7"},
		{"spoofed left entry ignored", "10.0.0.1:5000", "6.6.6.6, 198.51.100.7", "198.51.100.7"},
		{"trusted hops skipped", "10.0.0.1:5000", "198.51.100.7, 10.0.0.2, 10.0.0.3", "198.51.100.7"},
		{"all trusted", "10.0.0.1:5000", "10.0.0.2", "10.0.0.2"},
		{"no header", "10.0.0.1:5000", "", "10.0.0.1"},
		{"garbage header", "10.0.0.1:5000", "not-an-ip", "10.0.0.1"},
		{"ipv6 peer", "[2001:db8::1]:5000", "1.2.3.4", "2001:db8::1"},
		{"mapped v4", "[::ffff:203.0.113.9]:5000", "", "203.0.113.9"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = c.peer
			if c.xff != "" {
				r.Header.Set("X-Forwarded-For", c.xff)
			}
			if got := clientIP(r, trusted).String(); got != c.want {
				t.Fatalf("got %s, want %s", got, c.want)
			}
		})
	}
}
