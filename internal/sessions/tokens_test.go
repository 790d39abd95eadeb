package sessions

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func newKey(t testing.TB) Key {
	seed := make([]byte, 32)
	rand.Read(seed)
	k, err := KeyFromSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newSigner(t testing.TB, now func() time.Time, active Key, others ...Key) *signer {
	ks, err := NewKeySet(active, others...)
	if err != nil {
		t.Fatal(err)
	}
	return &signer{keys: ks, issuer: "herald", ttl: time.Hour, now: now}
}

// mustSign signs tok with key, failing the test on a signing error: a
// forged token that is silently "" would be refused for the wrong reason.
func mustSign(t testing.TB, tok *jwt.Token, key any) string {
	t.Helper()
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %v token: %v", tok.Header["alg"], err)
	}
	return s
}

func TestTokenRoundTrip(t *testing.T) {
	clk := testsupport.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	s := newSigner(t, clk.Now, newKey(t))
	tok, exp, err := s.issue("acct", "sess", []string{"admin"}, auth.AAL2, []string{auth.AMRPassword, auth.AMROTP})
	if err != nil || !exp.Equal(clk.Now().Add(time.Hour)) {
		t.Fatal(err, exp)
	}
	id, err := s.verify(tok)
	if err != nil || id.AccountID != "acct" || id.SessionID != "sess" || !id.Has("admin") || id.AAL != auth.AAL2 || strings.Join(id.AMR, " ") != "pwd otp" {
		t.Fatalf("%+v %v", id, err)
	}
	// The header names the key and the algorithm.
	parts := strings.Split(tok, ".")
	hdr, _ := jwt.NewParser().DecodeSegment(parts[0])
	var h map[string]any
	json.Unmarshal(hdr, &h)
	if h["alg"] != "EdDSA" || h["kid"] != s.keys.active.ID {
		t.Fatalf("header %v", h)
	}
}

func TestTokensRefused(t *testing.T) {
	clk := testsupport.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	key := newKey(t)
	s := newSigner(t, clk.Now, key)
	good, _, err := s.issue("acct", "sess", nil, auth.AAL1, nil)
	if err != nil {
		t.Fatal(err)
	}
	claims := Claims{SessionID: "sess", RegisteredClaims: jwt.RegisteredClaims{Issuer: "herald", Subject: "acct", ExpiresAt: jwt.NewNumericDate(clk.Now().Add(time.Hour))}}

	foreign := newKey(t)
	foreignTok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	foreignTok.Header["kid"] = key.ID // claims our key id, signed by another
	forged := mustSign(t, foreignTok, foreign.Private)

	noneTok := jwt.NewWithClaims(jwt.SigningMethodNone, claims)
	noneTok.Header["kid"] = key.ID
	none := mustSign(t, noneTok, jwt.UnsafeAllowNoneSignatureType)

	hsTok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	hsTok.Header["kid"] = key.ID
	hs := mustSign(t, hsTok, []byte(key.Public))

	unknownKid := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	unknownKid.Header["kid"] = "no-such-key"
	unknown := mustSign(t, unknownKid, key.Private)

	otherIssuer := claims
	otherIssuer.Issuer = "someone-else"
	oiTok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, otherIssuer)
	oiTok.Header["kid"] = key.ID
	oi := mustSign(t, oiTok, key.Private)

	// The good token is verified first, so that each refusal below is
	// made with a checked token in the replica's memory.
	if _, err := s.verify(good); err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	other := claims
	other.Subject = "another"
	otherPayload, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, other).SigningString()
	if err != nil {
		t.Fatal(err)
	}
	// Another account's claims under the seen token's header and signature.
	swapped := parts[0] + "." + strings.Split(otherPayload, ".")[1] + "." + parts[2]

	cases := map[string]string{
		"claims swapped under a seen signature": swapped,
		"foreign key":                           forged,
		"alg none":                              none,
		"HS256 with pub":                        hs,
		"unknown kid":                           unknown,
		"truncated":                             good[:len(good)-10],
		"garbage":                               "not.a.jwt",
		"empty":                                 "",
		"other issuer":                          oi,
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := s.verify(tok); !apperr.Is(err, apperr.TokenInvalid) {
				t.Fatalf("err = %v, want TOKEN_INVALID", err)
			}
		})
	}
}

// A token expires whether or not this replica has checked it before.
func TestExpiredToken(t *testing.T) {
	for _, seen := range []bool{false, true} {
		t.Run(fmt.Sprintf("seen=%v", seen), func(t *testing.T) {
			clk := testsupport.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
			s := newSigner(t, clk.Now, newKey(t))
			tok, exp := mustIssue(t, s, nil)
			if seen {
				clk.Advance(time.Hour - time.Second)
				if _, err := s.verify(tok); err != nil {
					t.Fatalf("a second before its expiry: %v", err)
				}
				clk.Advance(time.Second)
			} else {
				clk.Advance(2 * time.Hour)
			}
			for range 2 {
				_, err := s.verify(tok)
				ae := apperr.As(err)
				if ae.Code != apperr.TokenExpired || ae.Details["expiredAt"] != exp.Format(time.RFC3339) || ae.Details["tokenType"] != "access" {
					t.Fatalf("%+v", ae)
				}
			}
		})
	}
}

// The memory of checked tokens stays within its bound however many
// tokens it sees, and still answers for the latest.
func TestVerifiedTokensBounded(t *testing.T) {
	var v verifiedTokens
	for i := range verifiedMaxEntries + 10 {
		v.put(fmt.Sprint("token", i), auth.Principal{AccountID: fmt.Sprint(i)})
	}
	if n := len(v.entries); n != verifiedMaxEntries {
		t.Fatalf("%d entries, want %d", n, verifiedMaxEntries)
	}
	last := fmt.Sprint(verifiedMaxEntries + 9)
	if p, ok := v.get("token" + last); !ok || p.AccountID != last {
		t.Fatalf("the latest token: %+v %v", p, ok)
	}
}

func TestKeyRotation(t *testing.T) {
	clk := testsupport.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	oldKey, newK := newKey(t), newKey(t)
	before := newSigner(t, clk.Now, oldKey)
	oldTok, _ := mustIssue(t, before, nil)

	after := newSigner(t, clk.Now, newK, Key{ID: oldKey.ID, Public: oldKey.Public})
	if _, err := after.verify(oldTok); err != nil {
		t.Fatalf("token of a verify-only key refused: %v", err)
	}
	newTok, _ := mustIssue(t, after, nil)
	if _, err := after.verify(newTok); err != nil {
		t.Fatal(err)
	}
	removed := newSigner(t, clk.Now, newK)
	if _, err := removed.verify(oldTok); !apperr.Is(err, apperr.TokenInvalid) {
		t.Fatalf("token of a removed key: %v", err)
	}
}

func TestParseKeySet(t *testing.T) {
	a, b := newKey(t), newKey(t)
	doc := func(keys ...map[string]any) []byte {
		out, _ := json.Marshal(map[string]any{"keys": keys})
		return out
	}
	ks, err := ParseKeySet(doc(a.JWK(true), b.JWK(false)))
	if err != nil {
		t.Fatal(err)
	}
	if ks.active.ID != a.ID || ks.byID[b.ID].Private != nil {
		t.Fatal("wrong active key, or a verify-only key kept its private part")
	}
	var pub struct {
		Keys []map[string]any `json:"keys"`
	}
	json.Unmarshal(ks.PublicJWKS(), &pub)
	if len(pub.Keys) != 2 {
		t.Fatalf("jwks has %d keys", len(pub.Keys))
	}
	for _, k := range pub.Keys {
		if _, ok := k["d"]; ok {
			t.Fatal("the JWKS leaks a private key")
		}
	}
	noPriv := a.JWK(true)
	delete(noPriv, "d")
	bad := map[string][]byte{
		"none active":        doc(a.JWK(false)),
		"two active":         doc(a.JWK(true), b.JWK(true)),
		"active without d":   doc(noPriv),
		"not json":           []byte("{"),
		"wrong kty":          doc(map[string]any{"kty": "RSA", "kid": "x"}),
		"mismatched private": doc(map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": "x", "x": a.JWK(false)["x"], "d": b.JWK(false)["d"], "active": true}),
	}
	for name, d := range bad {
		if _, err := ParseKeySet(d); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// BenchmarkVerifyToken measures a token's first sight on a replica (its
// signature checked) and every later one (answered from memory).
func BenchmarkVerifyToken(b *testing.B) {
	s := newSigner(b, testsupport.NewClock(time.Now()).Now, newKey(b))
	tok, _ := mustIssue(b, s, []string{"admin"})
	for name, verify := range map[string]func(string) (auth.Principal, error){"first": s.check, "seen": s.verify} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := verify(tok); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// mustIssue issues a token for account "acct", session "sess".
func mustIssue(t testing.TB, s *signer, scopes []string) (string, time.Time) {
	t.Helper()
	tok, exp, err := s.issue("acct", "sess", scopes, auth.AAL1, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tok, exp
}
