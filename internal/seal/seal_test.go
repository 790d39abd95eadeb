package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustKeyring(t testing.TB, current []byte, previous ...[]byte) *Keyring {
	t.Helper()
	k, err := NewKeyring(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestSealOpen(t *testing.T) {
	k := mustKeyring(t, testKey(1))
	plain := []byte("whsec_c2VjcmV0")
	sealed := k.Seal(plain, "webhook_endpoints:ep1")
	if !IsSealed(sealed) || bytes.Contains(sealed, plain) || !strings.HasPrefix(string(sealed), Prefix+k.ID()+":") {
		t.Fatalf("sealed value %q", sealed)
	}
	if again := k.Seal(plain, "webhook_endpoints:ep1"); bytes.Equal(again, sealed) {
		t.Error("two seals of one value are equal: the nonce is not fresh")
	}
	got, err := k.Open(sealed, "webhook_endpoints:ep1")
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if !k.Current(sealed) {
		t.Error("Current is false for a value the current key sealed")
	}
	if id, ok := SealedBy(sealed); !ok || id != KeyID(testKey(1)) {
		t.Errorf("SealedBy = %q %v", id, ok)
	}
}

// What cannot be opened is refused, each with its own error: no key, a
// key this server was not given, a value moved to another row or changed,
// a value that only looks sealed. A plain value is read as it is.
func TestOpenRefusals(t *testing.T) {
	k1 := mustKeyring(t, testKey(1))
	sealed := k1.Seal([]byte("seed"), "secrets:jwt_ed25519_seed")
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-3] ^= 'A' ^ 'B'
	if flipped[len(flipped)-3] == sealed[len(sealed)-3] {
		flipped[len(flipped)-3] = 'C'
	}
	var unknown *UnknownKeyError
	for _, c := range []struct {
		name    string
		k       *Keyring
		stored  []byte
		context string
		is      func(error) bool
	}{
		{"no key", nil, sealed, "secrets:jwt_ed25519_seed", func(err error) bool { return errors.Is(err, ErrNoKey) }},
		{"another key", mustKeyring(t, testKey(2)), sealed, "secrets:jwt_ed25519_seed", func(err error) bool {
			return errors.As(err, &unknown) && unknown.ID == KeyID(testKey(1))
		}},
		{"another row", k1, sealed, "secrets:refresh_hash_key", func(err error) bool { return errors.Is(err, ErrTampered) }},
		{"changed", k1, flipped, "secrets:jwt_ed25519_seed", func(err error) bool { return errors.Is(err, ErrTampered) || errors.Is(err, ErrMalformed) }},
		{"truncated", k1, sealed[:len(Prefix)+12], "secrets:jwt_ed25519_seed", func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"no body", k1, []byte(Prefix + k1.ID() + ":"), "x", func(err error) bool { return errors.Is(err, ErrMalformed) }},
		{"bad id", k1, []byte(Prefix + "XYZ:abcd"), "x", func(err error) bool { return errors.Is(err, ErrMalformed) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.k.Open(c.stored, c.context)
			if err == nil || !c.is(err) {
				t.Fatalf("Open = %q, %v", got, err)
			}
		})
	}
	for _, k := range []*Keyring{nil, k1} {
		if got, err := k.Open([]byte("plain"), "x"); err != nil || string(got) != "plain" {
			t.Errorf("a plain value: %q %v", got, err)
		}
	}
	if got := (*Keyring)(nil).Seal([]byte("plain"), "x"); string(got) != "plain" {
		t.Errorf("Seal without a key = %q, want the value as it is", got)
	}
}

// Rotation: the previous key opens what it sealed, the current key seals,
// and Current tells which values are left to seal again.
func TestRotation(t *testing.T) {
	old := mustKeyring(t, testKey(1))
	sealedOld := old.Seal([]byte("hmac"), "secrets:api_key_hash_key")
	k := mustKeyring(t, testKey(2), testKey(1))
	if k.Current(sealedOld) {
		t.Fatal("a value of the previous key counts as current")
	}
	got, err := k.Open(sealedOld, "secrets:api_key_hash_key")
	if err != nil || string(got) != "hmac" {
		t.Fatalf("the previous key does not open its value: %q %v", got, err)
	}
	if resealed := k.Seal(got, "secrets:api_key_hash_key"); !k.Current(resealed) {
		t.Fatal("a value sealed again is not current")
	}
	if _, err := NewKeyring(testKey(1), testKey(1)); err == nil {
		t.Error("a previous key equal to the current one is accepted")
	}
	if _, err := NewKeyring(testKey(1)[:16]); err == nil {
		t.Error("a 16-byte key is accepted")
	}
}

func TestParseKey(t *testing.T) {
	good := strings.Repeat("ab", 32)
	if k, err := ParseKey(" " + good + "\n"); err != nil || len(k) != KeySize {
		t.Fatalf("ParseKey(%s) = %x, %v", good, k, err)
	}
	for _, bad := range []string{"", strings.Repeat("ab", 31), strings.Repeat("ab", 33), strings.Repeat("zz", 32), "0x" + good[2:]} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

// Open never panics; a value that is not sealed comes back as it is, and
// whatever is sealed opens to itself in its own place only.
func FuzzOpen(f *testing.F) {
	k := mustKeyring(f, testKey(7), testKey(8))
	f.Add([]byte("whsec_abc"), "webhook_endpoints:1")
	f.Add(k.Seal([]byte("x"), "c"), "c")
	f.Add([]byte(Prefix+"00000000:AAAA"), "c")
	f.Fuzz(func(t *testing.T, stored []byte, context string) {
		got, err := k.Open(stored, context)
		if !IsSealed(stored) && (err != nil || !bytes.Equal(got, stored)) {
			t.Fatalf("a plain value %q came back as %q, %v", stored, got, err)
		}
		sealed := k.Seal(stored, context)
		if back, err := k.Open(sealed, context); err != nil || !bytes.Equal(back, stored) {
			t.Fatalf("round trip of %q: %q, %v", stored, back, err)
		}
		if _, err := k.Open(sealed, context+"x"); !errors.Is(err, ErrTampered) {
			t.Fatalf("opened in another place: %v", err)
		}
	})
}
