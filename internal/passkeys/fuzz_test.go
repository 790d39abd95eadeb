package passkeys_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/passkeys"
	"github.com/herald-vpn/herald/internal/passkeys/passkeystest"
)

// seeds are real answers of the software authenticator: a registration
// (none and packed) and an assertion.
func seeds(f *testing.F) (creations, assertions [][]byte) {
	f.Helper()
	for _, format := range []string{passkeystest.FormatNone, passkeystest.FormatPacked} {
		a := &passkeystest.Authenticator{Format: format}
		cred, _, err := a.Create(map[string]any{
			"challenge": "c2VlZC1jaGFsbGVuZ2Utb2YtMzItYnl0ZXMtLS0tLS0",
			"rp":        map[string]any{"id": "herald.test", "name": "Herald"},
			"user":      map[string]any{"id": "dXNlcg", "name": "u@example.com"},
		}, passkeystest.Ceremony{Origin: "https://herald.test"})
		if err != nil {
			f.Fatal(err)
		}
		b, _ := json.Marshal(cred)
		creations = append(creations, b)
		get, err := a.Get(map[string]any{"challenge": "c2VlZC1jaGFsbGVuZ2U", "rpId": "herald.test"}, passkeystest.Ceremony{Origin: "https://herald.test"})
		if err != nil {
			f.Fatal(err)
		}
		b, _ = json.Marshal(get)
		assertions = append(assertions, b)
	}
	return creations, assertions
}

// typed400 fails unless err is nil or the catalogue's VALIDATION_ERROR.
func typed400(t *testing.T, what string, body []byte, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if ae := apperr.As(err); ae.Code != apperr.ValidationError || ae.Status() != 400 {
		t.Fatalf("%s of %q refused with %v (%s %d), want VALIDATION_ERROR", what, body, err, ae.Code, ae.Status())
	}
}

// FuzzParseCreation: any body a client sends as a registration's
// credential is read or refused with VALIDATION_ERROR, never a panic.
func FuzzParseCreation(f *testing.F) {
	creations, _ := seeds(f)
	for _, c := range creations {
		f.Add(c)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"AA","rawId":"AA","type":"public-key","response":{"clientDataJSON":"e30","attestationObject":"oA"}}`))
	f.Add([]byte(strings.Repeat("[", 4000)))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := passkeys.ParseCreation(body)
		typed400(t, "ParseCreation", body, err)
		if err == nil && p == nil {
			t.Fatalf("ParseCreation(%q): nil without an error", body)
		}
	})
}

// FuzzParseAssertion: the same for a sign-in's credential.
func FuzzParseAssertion(f *testing.F) {
	_, assertions := seeds(f)
	for _, a := range assertions {
		f.Add(a)
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"id":"AA","rawId":"AA","type":"public-key","response":{"clientDataJSON":"e30","authenticatorData":"AA","signature":"AA"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := passkeys.ParseAssertion(body)
		typed400(t, "ParseAssertion", body, err)
		if err == nil && (p == nil || len(p.RawID) == 0) {
			t.Fatalf("ParseAssertion(%q): %v without an error", body, p)
		}
	})
}

// FuzzParseCeremonyID: an id is accepted only in its one form, and what
// is accepted reads back the same; anything else is
// PASSKEY_CHALLENGE_INVALID.
func FuzzParseCeremonyID(f *testing.F) {
	f.Add("pkc_" + strings.Repeat("A", 32))
	f.Add("pkc_")
	f.Add(" pkc_" + strings.Repeat("_", 32) + " ")
	f.Add("mfa_" + strings.Repeat("A", 43))
	f.Fuzz(func(t *testing.T, id string) {
		got, err := passkeys.ParseCeremonyID(id)
		if err != nil {
			if ae := apperr.As(err); ae.Code != apperr.PasskeyChallengeInvalid {
				t.Fatalf("ParseCeremonyID(%q): %v", id, err)
			}
			return
		}
		if !strings.HasPrefix(got, "pkc_") || len(got) != 36 {
			t.Fatalf("ParseCeremonyID(%q) = %q", id, got)
		}
		if again, err := passkeys.ParseCeremonyID(got); err != nil || again != got {
			t.Fatalf("ParseCeremonyID(%q) = %q, %v on a second read", got, again, err)
		}
	})
}
