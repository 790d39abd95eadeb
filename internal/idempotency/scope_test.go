package idempotency

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/storage"
)

// memStore keeps keys in a map, for the scoping rules alone; the SQL
// store's own behaviour is tested on both databases in sqlstore.
type memStore struct {
	mu   sync.Mutex
	rows map[[2]string]*memRow
}

type memRow struct {
	Record
	token string
}

func (m *memStore) ClaimIdempotencyKey(_ context.Context, c Claim) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{c.Caller, c.Key}
	if _, ok := m.rows[k]; ok {
		return false, nil
	}
	m.rows[k] = &memRow{Record: Record{Operation: c.Operation, RequestHash: c.RequestHash, Status: StatusPending, ClaimedUntil: c.ClaimedUntil}, token: c.Token}
	return true, nil
}

func (m *memStore) IdempotencyRecord(_ context.Context, caller, key string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[[2]string{caller, key}]
	if !ok {
		return Record{}, storage.ErrNotFound
	}
	return r.Record, nil
}

func (m *memStore) CompleteIdempotencyKey(_ context.Context, caller, key, token string, response []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[[2]string{caller, key}]; ok && r.token == token {
		r.Status, r.Response = StatusDone, response
	}
	return nil
}

func (m *memStore) ReleaseIdempotencyKey(_ context.Context, caller, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[[2]string{caller, key}]; ok && r.token == token {
		delete(m.rows, [2]string{caller, key})
	}
	return nil
}

func as(p auth.Principal) context.Context {
	return auth.WithResult(context.Background(), auth.Result{Principal: p})
}

// TestKeysArePerCaller: the same key sent by two different callers names
// two requests, whatever the callers are (users, API keys, or one of
// each, even with the same id); sent twice by one caller (from two
// sessions of one user, say) it is one request.
func TestKeysArePerCaller(t *testing.T) {
	userA := auth.Principal{Kind: auth.User, AccountID: "a1", SessionID: "s1"}
	userASession2 := auth.Principal{Kind: auth.User, AccountID: "a1", SessionID: "s2"}
	userB := auth.Principal{Kind: auth.User, AccountID: "b2", SessionID: "s3"}
	keyX := auth.Principal{Kind: auth.APIKey, KeyID: "k1"}
	keyY := auth.Principal{Kind: auth.APIKey, KeyID: "k2"}
	keyNamedLikeUserA := auth.Principal{Kind: auth.APIKey, KeyID: "a1"}
	cases := []struct {
		name       string
		first, two auth.Principal
		same       bool
	}{
		{"user and another user", userA, userB, false},
		{"user and an API key", userA, keyX, false},
		{"API key and a user", keyX, userA, false},
		{"API key and another API key", keyX, keyY, false},
		{"user and an API key with the user's id", userA, keyNamedLikeUserA, false},
		{"a user's two sessions", userA, userASession2, true},
		{"one API key twice", keyY, keyY, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := New(&memStore{rows: map[[2]string]*memRow{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			k := Key{Service: s, Field: "Idempotency-Key", Value: "same-key"}
			runs := 0
			send := func(p auth.Principal, request string) (string, error) {
				return Do(as(p), k, "send", request, func(context.Context) (string, error) {
					runs++
					return request + " done", nil
				})
			}
			first, err := send(c.first, "first request")
			if err != nil || first != "first request done" {
				t.Fatalf("first caller: %q, %v", first, err)
			}
			// The same request from the second caller: its own answer, or
			// the first's when it is the same caller.
			got, err := send(c.two, "first request")
			if err != nil || got != "first request done" {
				t.Fatalf("second caller, same request: %q, %v", got, err)
			}
			wantRuns := 2
			if c.same {
				wantRuns = 1
			}
			if runs != wantRuns {
				t.Fatalf("the work ran %d times, want %d", runs, wantRuns)
			}
			// A different request under the key: the same caller has used
			// it, so it is refused; for another caller it is its own key,
			// already used by the same request above, so refused too. A
			// third caller's key is untouched.
			_, err = send(c.two, "another request")
			if !apperr.Is(err, apperr.IdempotencyKeyReused) {
				t.Fatalf("second caller, different request: %v, want IDEMPOTENCY_KEY_REUSED", err)
			}
		})
	}
	// A key used by one caller for one request leaves it free for another
	// caller's different request.
	t.Run("a different request by another caller", func(t *testing.T) {
		s := New(&memStore{rows: map[[2]string]*memRow{}}, slog.New(slog.NewTextHandler(io.Discard, nil)))
		k := Key{Service: s, Field: "Idempotency-Key", Value: "k"}
		for i, p := range []auth.Principal{userA, userB, keyX, keyY, keyNamedLikeUserA} {
			req := []string{"one", "two", "three", "four", "five"}[i]
			got, err := Do(as(p), k, "send", req, func(context.Context) (string, error) { return req, nil })
			if err != nil || got != req {
				t.Fatalf("caller %d (%+v): %q, %v; want its own answer", i, p, got, err)
			}
		}
	})
}
