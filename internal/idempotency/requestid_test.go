package idempotency

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/herald-vpn/herald/internal/auth"
)

// RequestID names the request a run of Do works for: the same for a run
// again after an error released the key (the retry of a send that must
// count once against a cap), another for another caller, key or request,
// and none without a key.
func TestRequestID(t *testing.T) {
	s := New(&memStore{rows: map[[2]string]*memRow{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	user := auth.Principal{Kind: auth.User, AccountID: "a1", SessionID: "s1"}
	other := auth.Principal{Kind: auth.APIKey, KeyID: "k1"}
	id := func(p auth.Principal, key, request string, fail bool) string {
		t.Helper()
		var got string
		_, err := Do(as(p), Key{Service: s, Field: "Idempotency-Key", Value: key}, "send", request, func(ctx context.Context) (string, error) {
			got = RequestID(ctx)
			if fail {
				return "", errors.New("failed")
			}
			return "done", nil
		})
		if (err != nil) != fail {
			t.Fatalf("Do: %v", err)
		}
		return got
	}
	first := id(user, "k", "r", true)
	if first == "" {
		t.Fatal("no request id under a key")
	}
	if again := id(user, "k", "r", false); again != first {
		t.Fatalf("the retry after an error ran as %q, the first as %q", again, first)
	}
	for _, o := range []string{id(other, "k", "r", false), id(user, "k2", "r", false), id(user, "k3", "r2", false)} {
		if o == first || o == "" {
			t.Fatalf("another caller, key or request ran as %q (the first %q)", o, first)
		}
	}
	if got := id(user, "", "r", false); got != "" {
		t.Fatalf("without a key: request id %q, want none", got)
	}
}
