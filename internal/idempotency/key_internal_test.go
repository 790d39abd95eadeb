package idempotency

import (
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
)

// FuzzCheckKey: a key is accepted exactly when it is 1 to MaxKeyLen bytes
// of printable ASCII without spaces (the empty key means "no key" and
// never reaches checkKey); a refusal is a VALIDATION_ERROR naming the
// field.
func FuzzCheckKey(f *testing.F) {
	for _, s := range []string{"a", "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", "has space", "tab\t", "é", string(make([]byte, 256))} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return
		}
		want := len(key) <= MaxKeyLen
		for i := 0; i < len(key); i++ {
			if key[i] < '!' || key[i] > '~' {
				want = false
			}
		}
		err := checkKey("idempotencyKey", key)
		if (err == nil) != want {
			t.Fatalf("checkKey(%q) = %v, want accepted %v", key, err, want)
		}
		if err != nil && (!apperr.Is(err, apperr.ValidationError) || apperr.As(err).Details["field"] != "idempotencyKey") {
			t.Fatalf("checkKey(%q) = %v, want VALIDATION_ERROR naming idempotencyKey", key, err)
		}
	})
}

// TestRequestHash: the hash depends on the operation and on every
// argument, and not on the order in which a map was built.
func TestRequestHash(t *testing.T) {
	h := func(op string, req any) string {
		t.Helper()
		s, err := requestHash(op, req)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := h("send", []any{"d1", map[string]any{"x": 1, "y": 2}})
	b := h("send", []any{"d1", map[string]any{"y": 2, "x": 1}})
	if a != b {
		t.Fatal("the same request hashed differently")
	}
	for _, other := range []string{h("other", []any{"d1", map[string]any{"x": 1, "y": 2}}), h("send", []any{"d2", map[string]any{"x": 1, "y": 2}}), h("send", []any{"d1", map[string]any{"x": 1}})} {
		if other == a {
			t.Fatal("different requests hashed the same")
		}
	}
}
