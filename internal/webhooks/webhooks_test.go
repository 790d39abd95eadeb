package webhooks_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// headersOf is a delivery's headers as a receiver reads them.
func headersOf(h webhooks.Headers) http.Header {
	out := http.Header{}
	out.Set("webhook-id", h.ID)
	out.Set("webhook-timestamp", h.Timestamp)
	out.Set("webhook-signature", h.Signature)
	return out
}

// The signature is what the reference library verifies, with either secret
// of a rotation, and nothing else.
func TestSignaturesVerifyWithTheReferenceLibrary(t *testing.T) {
	cur, err := webhooks.NewSecret()
	if err != nil || !strings.HasPrefix(cur, "whsec_") {
		t.Fatalf("%q %v", cur, err)
	}
	prev, _ := webhooks.NewSecret()
	other, _ := webhooks.NewSecret()
	ev, err := webhooks.NewEvent(webhooks.UserCreated, time.Now(), map[string]any{"userId": "u1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := webhooks.SignedHeaders([]string{cur, prev}, ev.ID, time.Now(), ev.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Signature)); n != 2 {
		t.Fatalf("%d signatures in %q", n, h.Signature)
	}
	for name, c := range map[string]struct {
		secret string
		body   []byte
		ok     bool
	}{
		"current secret":  {cur, ev.Payload, true},
		"previous secret": {prev, ev.Payload, true},
		"another secret":  {other, ev.Payload, false},
		"altered body":    {cur, append([]byte(" "), ev.Payload...), false},
	} {
		wh, err := standardwebhooks.NewWebhook(c.secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(c.body, headersOf(h)); (err == nil) != c.ok {
			t.Errorf("%s: verify = %v, want ok=%v", name, err, c.ok)
		}
	}
	var p struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Type != webhooks.UserCreated || p.Timestamp.IsZero() || p.Data["userId"] != "u1" {
		t.Fatalf("payload %s: %v", ev.Payload, err)
	}
}

func TestSigningSecretsDuringRotation(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	until := now.Add(24 * time.Hour)
	e := webhooks.Endpoint{Secret: "whsec_bmV3", PreviousSecret: "whsec_b2xk", PreviousSecretUntil: &until}
	if got := e.SigningSecrets(now); len(got) != 2 || got[0] != e.Secret {
		t.Fatalf("during the overlap: %v", got)
	}
	if got := e.SigningSecrets(until); len(got) != 1 || got[0] != e.Secret {
		t.Fatalf("after the overlap: %v", got)
	}
}

func TestForbiddenAddresses(t *testing.T) {
	for addr, forbidden := range map[string]bool{
		"127.0.0.1": true, "127.8.9.10": true, "::1": true,
		"10.1.2.3": true, "172.16.0.1": true, "172.31.255.255": true, "192.168.1.1": true,
		"169.254.169.254": true, "fe80::1": true, "fd00:ec2::254": true, "fc00::1": true,
		"100.64.0.1": true, "0.0.0.0": true, "::": true, "::ffff:127.0.0.1": true, "::ffff:10.0.0.1": true,
		"224.0.0.1": true, "255.255.255.255": true, "64:ff9b::a00:1": true,
		"8.8.8.8": false, "1.1.1.1": false, "172.32.0.1": false, "2606:4700:4700::1111": false, "::ffff:8.8.8.8": false,
	} {
		if got := webhooks.Forbidden(netip.MustParseAddr(addr)); got != forbidden {
			t.Errorf("Forbidden(%s) = %v, want %v", addr, got, forbidden)
		}
	}
}

// fixedResolver resolves every name to its addresses.
type fixedResolver map[string][]netip.Addr

func (r fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r[host], nil
}

func TestCheckHost(t *testing.T) {
	r := fixedResolver{
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
		"internal.example": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")},
		"meta.example":     {netip.MustParseAddr("169.254.169.254")},
	}
	for host, ok := range map[string]bool{
		"public.example": true, "internal.example": false, "meta.example": false, "nowhere.example": false,
		"127.0.0.1": false, "[::1]": false, "8.8.8.8": true,
	} {
		err := webhooks.CheckHost(context.Background(), r, host)
		if (err == nil) != ok {
			t.Errorf("CheckHost(%s) = %v, want ok=%v", host, err, ok)
		}
		if err != nil && !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("CheckHost(%s): %v is not VALIDATION_ERROR", host, err)
		}
	}
}

func TestValidateURL(t *testing.T) {
	for _, c := range []struct {
		url              string
		insecure, wantOK bool
	}{
		{"https://example.com/hook", false, true},
		{"https://example.com:8443/hook?x=1", false, true},
		{"http://example.com/hook", false, false},
		{"http://example.com/hook", true, true},
		{"ftp://example.com/hook", true, false},
		{"https://user:pw@example.com/hook", false, false},
		{"https://example.com/hook#frag", false, false},
		{"/relative", false, false},
		{"https://", false, false},
		{"https://:443/x", false, false},
		{"https://example.com/" + strings.Repeat("a", 2048), false, false},
	} {
		_, err := webhooks.ValidateURL(c.url, c.insecure)
		if (err == nil) != c.wantOK {
			t.Errorf("ValidateURL(%q, insecure=%v) = %v, want ok=%v", c.url, c.insecure, err, c.wantOK)
		}
	}
}

func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hook", "http://[::1]:80/", "https://a@b/", "https://%zz", "javascript:alert(1)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := webhooks.ValidateURL(raw, true)
		if err != nil {
			if !apperr.Is(err, apperr.ValidationError) {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil {
			t.Fatalf("%q accepted as %#v", raw, u)
		}
	})
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range webhooks.Catalogue {
		if seen[typ] || !webhooks.Known(typ) {
			t.Fatalf("catalogue: %s", typ)
		}
		seen[typ] = true
	}
	if len(seen) != 19 || webhooks.Known(webhooks.Ping) {
		t.Fatalf("catalogue of %d, ping known: %v", len(seen), webhooks.Known(webhooks.Ping))
	}
}
