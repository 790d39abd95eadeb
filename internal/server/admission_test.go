package server

import (
	"testing"

	"github.com/herald-vpn/herald/internal/auth"
)

func TestCredentialFrom(t *testing.T) {
	cases := []struct {
		name, header, apiKey string
		want                 auth.Credential
	}{
		{"no header", "", "", auth.Credential{}},
		{"blank header", "   ", "", auth.Credential{}},
		{"bearer", "Bearer abc.def", "", auth.Credential{Present: true, Bearer: "abc.def"}},
		{"scheme is case-insensitive", "bearer abc", "", auth.Credential{Present: true, Bearer: "abc"}},
		{"spaces around the token", "Bearer    abc  ", "", auth.Credential{Present: true, Bearer: "abc"}},
		{"basic scheme", "Basic x", "", auth.Credential{Present: true}},
		{"scheme alone", "Bearer", "", auth.Credential{Present: true}},
		{"empty token", "Bearer    ", "", auth.Credential{Present: true}},
		{"API key header", "", " hk_x ", auth.Credential{APIKey: "hk_x"}},
		{"blank API key header", "", "  ", auth.Credential{}},
		{"both headers", "Bearer abc", "hk_x", auth.Credential{Present: true, Bearer: "abc", APIKey: "hk_x"}},
	}
	for _, c := range cases {
		if got := credentialFrom(c.header, c.apiKey); got != c.want {
			t.Errorf("%s: credentialFrom(%q, %q) = %+v, want %+v", c.name, c.header, c.apiKey, got, c.want)
		}
	}
}
