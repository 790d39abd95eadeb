package accounts_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
)

func TestCancelToken(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	good := accounts.SignCancelToken(key, "acct-1", "new@example.com", now.Add(time.Hour))
	payload, mac, _ := strings.Cut(good, ".")
	forged := base64.RawURLEncoding.EncodeToString([]byte("acct-2\nnew@example.com\n" + "9999999999"))
	cases := []struct {
		name, token string
		now         time.Time
		constraint  string // "" when valid
	}{
		{"valid", good, now, ""},
		{"valid until the last second", good, now.Add(time.Hour - time.Second), ""},
		{"expired at its time", good, now.Add(time.Hour), "expired"},
		{"another key's", accounts.SignCancelToken([]byte("another key"), "acct-1", "new@example.com", now.Add(time.Hour)), now, "signature"},
		{"payload swapped", forged + "." + mac, now, "signature"},
		{"mac cut", payload + "." + mac[:len(mac)-3], now, "signature"},
		{"no dot", payload, now, "format"},
		{"empty", "", now, "format"},
		{"not base64", "!!.!!", now, "format"},
		{"too long", strings.Repeat("a", 2000) + "." + mac, now, "format"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, email, err := accounts.ParseCancelToken(key, c.token, c.now)
			if c.constraint == "" {
				if err != nil || id != "acct-1" || email != "new@example.com" {
					t.Fatalf("= %q, %q, %v; want acct-1, new@example.com", id, email, err)
				}
				return
			}
			ae := apperr.As(err)
			if ae == nil || ae.Code != apperr.ValidationError || ae.Details["field"] != "token" || ae.Details["constraint"] != c.constraint {
				t.Fatalf("error %v (details %v), want VALIDATION_ERROR on token, constraint %s", err, detailsOf(ae), c.constraint)
			}
		})
	}
}

func detailsOf(ae *apperr.Error) any {
	if ae == nil {
		return nil
	}
	return ae.Details
}

// FuzzParseCancelToken: any string parses or is VALIDATION_ERROR, never a
// panic; only the key's own tokens pass.
func FuzzParseCancelToken(f *testing.F) {
	key := []byte("fuzz key")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	f.Add(accounts.SignCancelToken(key, "acct", "a@example.com", now.Add(time.Hour)))
	f.Add("")
	f.Add("YQ.YQ")
	f.Add("YWNjdAphQGV4YW1wbGUuY29tCjE.")
	f.Fuzz(func(t *testing.T, tok string) {
		id, email, err := accounts.ParseCancelToken(key, tok, now)
		if err != nil {
			if !apperr.Is(err, apperr.ValidationError) {
				t.Fatalf("%q: %v, want VALIDATION_ERROR", tok, err)
			}
			return
		}
		if again := accounts.SignCancelToken(key, id, email, now); id == "" || email == "" || strings.Count(again, ".") != 1 {
			t.Fatalf("%q parsed to %q, %q", tok, id, email)
		}
	})
}

// A link token holds its fields; one of another field count, or of
// another purpose's key, is refused.
func TestLinkToken(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tok := accounts.SignLinkToken(key, now.Add(7*24*time.Hour), "acct-1", "sess-1")
	f, err := accounts.ParseLinkToken(key, tok, now.Add(7*24*time.Hour-time.Second), 2)
	if err != nil || len(f) != 2 || f[0] != "acct-1" || f[1] != "sess-1" {
		t.Fatalf("= %q, %v; want acct-1, sess-1", f, err)
	}
	for name, err := range map[string]error{
		"expired":         func() error { _, err := accounts.ParseLinkToken(key, tok, now.Add(7*24*time.Hour), 2); return err }(),
		"three fields":    func() error { _, err := accounts.ParseLinkToken(key, tok, now, 3); return err }(),
		"one field":       func() error { _, err := accounts.ParseLinkToken(key, tok, now, 1); return err }(),
		"another purpose": func() error { _, err := accounts.ParseLinkToken([]byte("another key"), tok, now, 2); return err }(),
		"an empty field": func() error {
			_, err := accounts.ParseLinkToken(key, accounts.SignLinkToken(key, now.Add(time.Hour), "acct-1", ""), now, 2)
			return err
		}(),
	} {
		if !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("%s: %v, want VALIDATION_ERROR", name, err)
		}
	}
	// The cancel token is the link token of two fields: one signed before
	// the generalization still parses.
	if a, e, err := accounts.ParseCancelToken(key, accounts.SignLinkToken(key, now.Add(time.Hour), "acct-1", "new@example.com"), now); err != nil || a != "acct-1" || e != "new@example.com" {
		t.Fatalf("cancel token as a link token: %q %q %v", a, e, err)
	}
}
