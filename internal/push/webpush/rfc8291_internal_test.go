package webpush

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"testing"
)

// RFC 8291 §5 and Appendix A: the example message, with the application
// server's key pair and the salt fixed, so the body is known byte for byte.
const (
	rfcPlaintext = "When I grow up, I want to be a watermelon"
	rfcUAPublic  = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
	rfcUAPrivate = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
	rfcAuth      = "BTBZMqHH6r4Tts7J_aSIgg"
	rfcASPrivate = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
	rfcASPublic  = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
	rfcSalt      = "DGv6ra1nlYgDCS1FRnbzlw"
	rfcBody      = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml" +
		"mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT" +
		"pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return b
}

func TestRFC8291Example(t *testing.T) {
	t.Parallel()
	sub, err := ParseSubscription(`{"endpoint":"https://push.example.net/push/JzLQ3raZJfFBR0aqvOMsLrt54w4rJUsV","keys":{"p256dh":"` + rfcUAPublic + `","auth":"` + rfcAuth + `"}}`)
	if err != nil {
		t.Fatal(err)
	}
	as, err := ecdh.P256().NewPrivateKey(b64(t, rfcASPrivate))
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.RawURLEncoding.EncodeToString(as.PublicKey().Bytes()); got != rfcASPublic {
		t.Fatalf("as_public %s, want %s", got, rfcASPublic)
	}
	body, err := encrypt(sub, []byte(rfcPlaintext), as, b64(t, rfcSalt))
	if err != nil {
		t.Fatal(err)
	}
	if got := base64.RawURLEncoding.EncodeToString(body); got != rfcBody {
		t.Fatalf("body\n%s\nwant (RFC 8291 §5)\n%s", got, rfcBody)
	}

	// The browser's side: its private key opens the RFC's body.
	ua, err := ecdh.P256().NewPrivateKey(b64(t, rfcUAPrivate))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := Decrypt(b64(t, rfcBody), ua, b64(t, rfcAuth))
	if err != nil || string(plain) != rfcPlaintext {
		t.Fatalf("Decrypt = %q, %v; want the RFC's plaintext", plain, err)
	}
}

// Encrypt draws a new key pair and salt for every message, and only the
// subscription's private key (with its auth secret) opens the body.
func TestEncryptFreshPerMessage(t *testing.T) {
	t.Parallel()
	ua, _ := ecdh.P256().NewPrivateKey(b64(t, rfcUAPrivate))
	sub := Subscription{Endpoint: "https://push.example.net/x", P256dh: ua.PublicKey().Bytes(), Auth: b64(t, rfcAuth)}
	a, err := Encrypt(sub, []byte(rfcPlaintext))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encrypt(sub, []byte(rfcPlaintext))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a[:saltLen], b[:saltLen]) || bytes.Equal(a[saltLen+5:headerLen], b[saltLen+5:headerLen]) {
		t.Fatal("two messages share their salt or their ephemeral key")
	}
	for _, body := range [][]byte{a, b} {
		if plain, err := Decrypt(body, ua, sub.Auth); err != nil || string(plain) != rfcPlaintext {
			t.Fatalf("Decrypt = %q, %v", plain, err)
		}
	}
	other, _ := ecdh.P256().GenerateKey(nil)
	if _, err := Decrypt(a, other, sub.Auth); err == nil {
		t.Fatal("another private key decrypted the message")
	}
	if _, err := Decrypt(a, ua, make([]byte, 16)); err == nil {
		t.Fatal("another auth secret decrypted the message")
	}
	if _, err := Encrypt(sub, make([]byte, MaxPayloadLen+1)); err == nil {
		t.Fatal("a payload over one record was encrypted")
	}
}
