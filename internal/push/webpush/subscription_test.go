package webpush_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/push/webpush"
)

const (
	validP256dh = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	validAuth   = "BTBZMqHH6r4Tts7J_aSIgg"
)

func subJSON(endpoint, p256dh, auth string) string {
	return `{"endpoint":"` + endpoint + `","expirationTime":null,"keys":{"p256dh":"` + p256dh + `","auth":"` + auth + `"}}`
}

func TestParseSubscription(t *testing.T) {
	t.Parallel()
	// A point off the curve: the valid key with its last byte changed.
	raw, _ := base64.RawURLEncoding.DecodeString(validP256dh)
	raw[64] ^= 1
	offCurve := base64.RawURLEncoding.EncodeToString(raw)
	compressed := base64.RawURLEncoding.EncodeToString(append([]byte{2}, raw[1:33]...))
	ep := "https://fcm.googleapis.com/fcm/send/abc:DEF"
	tests := []struct {
		name     string
		in       string
		loopback bool
		wantErr  string // "" accepts
	}{
		{"browser JSON", subJSON(ep, validP256dh, validAuth), false, ""},
		{"padded keys", subJSON(ep, validP256dh+"=", validAuth+"=="), false, ""},
		{"members in another order", `{"keys":{"auth":"` + validAuth + `","p256dh":"` + validP256dh + `"},"endpoint":"` + ep + `"}`, false, ""},
		{"http on loopback with the option", subJSON("http://127.0.0.1:8080/push/1", validP256dh, validAuth), true, ""},
		{"http on loopback without it", subJSON("http://127.0.0.1:8080/push/1", validP256dh, validAuth), false, "https"},
		{"http elsewhere even with it", subJSON("http://push.example.net/1", validP256dh, validAuth), true, "https"},
		{"not JSON", "reader-phone", false, "JSON"},
		{"a JSON array", `[1]`, false, "JSON"},
		{"text after", subJSON(ep, validP256dh, validAuth) + "{}", false, "after"},
		{"no endpoint", `{"keys":{"p256dh":"` + validP256dh + `","auth":"` + validAuth + `"}}`, false, "endpoint"},
		{"relative endpoint", subJSON("/push/1", validP256dh, validAuth), false, "absolute"},
		{"user info", subJSON("https://a:b@push.example.net/1", validP256dh, validAuth), false, "user"},
		{"fragment", subJSON("https://push.example.net/1#x", validP256dh, validAuth), false, "fragment"},
		{"space", subJSON("https://push.example.net/a b", validP256dh, validAuth), false, "spaces"},
		{"long endpoint", subJSON("https://push.example.net/"+strings.Repeat("a", webpush.MaxEndpointLen), validP256dh, validAuth), false, "longer"},
		{"no keys", `{"endpoint":"` + ep + `"}`, false, "keys"},
		{"no auth", `{"endpoint":"` + ep + `","keys":{"p256dh":"` + validP256dh + `"}}`, false, "keys"},
		{"p256dh not base64url", subJSON(ep, strings.ReplaceAll(validP256dh, "-", "+"), validAuth), false, "p256dh"},
		{"p256dh compressed", subJSON(ep, compressed, validAuth), false, "p256dh"},
		{"p256dh off the curve", subJSON(ep, offCurve, validAuth), false, "P-256"},
		{"auth of 15 bytes", subJSON(ep, validP256dh, base64.RawURLEncoding.EncodeToString(make([]byte, 15))), false, "auth"},
		{"auth of 17 bytes", subJSON(ep, validP256dh, base64.RawURLEncoding.EncodeToString(make([]byte, 17))), false, "auth"},
		{"too long", `{"endpoint":"` + ep + `","x":"` + strings.Repeat("a", webpush.MaxSubscriptionLen) + `"}`, false, "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var opts []webpush.ParseOption
			if tt.loopback {
				opts = append(opts, webpush.AllowLoopbackHTTP())
			}
			sub, err := webpush.ParseSubscription(tt.in, opts...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ParseSubscription: %v", err)
				}
				if len(sub.P256dh) != 65 || len(sub.Auth) != 16 {
					t.Fatalf("keys of %d and %d bytes", len(sub.P256dh), len(sub.Auth))
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ParseSubscription = %v, want an error about %q", err, tt.wantErr)
			}
		})
	}
}

// The canonical form is the same for every spelling of one subscription,
// and parses back to itself.
func TestSubscriptionCanonical(t *testing.T) {
	t.Parallel()
	ep := "https://updates.push.services.mozilla.com/wpush/v2/gAAAA?x=<1>&y=2"
	want := `{"endpoint":"` + ep + `","keys":{"p256dh":"` + validP256dh + `","auth":"` + validAuth + `"}}`
	for _, in := range []string{
		subJSON(ep, validP256dh, validAuth),
		subJSON(ep, validP256dh+"=", validAuth+"=="),
		`{ "keys" : { "auth" : "` + validAuth + `", "p256dh" : "` + validP256dh + `" }, "endpoint" : "` + ep + `" }`,
	} {
		got, err := webpush.CanonicalSubscription(in)
		if err != nil || got != want {
			t.Fatalf("CanonicalSubscription(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
}

func FuzzParseSubscription(f *testing.F) {
	f.Add(subJSON("https://fcm.googleapis.com/fcm/send/abc", validP256dh, validAuth))
	f.Add(subJSON("http://127.0.0.1:1/push/1", validP256dh, validAuth))
	f.Add(subJSON("https://a:b@x/1#f", validP256dh+"=", validAuth))
	f.Add(`{"endpoint":"https://x","keys":{"p256dh":"","auth":""}}`)
	f.Add(`{"endpoint":null,"keys":null}`)
	f.Add("")
	f.Add("{")
	f.Fuzz(func(t *testing.T, in string) {
		for _, opts := range [][]webpush.ParseOption{nil, {webpush.AllowLoopbackHTTP()}} {
			sub, err := webpush.ParseSubscription(in, opts...)
			if err != nil {
				continue
			}
			if len(sub.P256dh) != 65 || sub.P256dh[0] != 4 || len(sub.Auth) != 16 {
				t.Fatalf("accepted keys of %d and %d bytes", len(sub.P256dh), len(sub.Auth))
			}
			if !strings.HasPrefix(sub.Endpoint, "https://") && (opts == nil || !strings.HasPrefix(sub.Endpoint, "http://")) {
				t.Fatalf("accepted endpoint %q", sub.Endpoint)
			}
			if len(sub.Endpoint) > webpush.MaxEndpointLen {
				t.Fatalf("accepted an endpoint of %d bytes", len(sub.Endpoint))
			}
			// The canonical form parses back to itself.
			canon := sub.String()
			again, err := webpush.ParseSubscription(canon, opts...)
			if err != nil {
				t.Fatalf("the canonical form %s does not parse: %v", canon, err)
			}
			if again.String() != canon {
				t.Fatalf("canonical form not stable: %s then %s", canon, again.String())
			}
		}
	})
}
