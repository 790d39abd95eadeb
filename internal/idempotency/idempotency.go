// Package idempotency makes a send safe to retry: a caller names a request
// with a key (REST Idempotency-Key, GraphQL idempotencyKey), and the same
// key with the same request within Window answers the first answer again
// without doing anything, even when the two arrive at once on two
// replicas. Before the work starts, a row keyed by caller and key is
// claimed in the database (a unique key, so exactly one request wins); the
// others wait for its answer. The same key with a different request is
// IDEMPOTENCY_KEY_REUSED.
package idempotency

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/storage"
)

// Window is how long a key remembers its answer.
const Window = 24 * time.Hour

// MaxKeyLen is the longest key accepted.
const MaxKeyLen = 255

// Record statuses.
const (
	StatusPending = "pending" // claimed; the work is running
	StatusDone    = "done"    // the first answer is stored
)

// Claim is one attempt to claim a key.
type Claim struct {
	Caller, Key, Operation, RequestHash string
	// Token identifies this claim, so that only it completes or releases
	// the row.
	Token string
	Now   time.Time
	// ClaimedUntil is when the claim counts as abandoned if not completed.
	ClaimedUntil time.Time
}

// Record is a key's row as stored.
type Record struct {
	Operation, RequestHash, Status string
	Response                       []byte
	ClaimedUntil                   time.Time
}

// Store keeps the keys; sqlstore implements it.
type Store interface {
	// ClaimIdempotencyKey inserts c as a pending row, or takes over the
	// existing row of (caller, key) when it was created before
	// c.Now-Window, or is pending with the same request hash and its claim
	// expired. It reports whether c now holds the row.
	ClaimIdempotencyKey(ctx context.Context, c Claim) (bool, error)
	// IdempotencyRecord returns the row of (caller, key); ErrNotFound when
	// there is none.
	IdempotencyRecord(ctx context.Context, caller, key string) (Record, error)
	// CompleteIdempotencyKey stores the answer of the claim token.
	CompleteIdempotencyKey(ctx context.Context, caller, key, token string, response []byte) error
	// ReleaseIdempotencyKey deletes the pending row of the claim token.
	ReleaseIdempotencyKey(ctx context.Context, caller, key, token string) error
}

// Service runs idempotent operations.
type Service struct {
	store Store
	log   *slog.Logger
	// ClaimTTL bounds how long a claim may run before another request may
	// take it over (its replica is presumed dead): longer than any send.
	ClaimTTL time.Duration
	// Poll is how often a request waiting for another's answer looks.
	Poll time.Duration
	Now  func() time.Time
}

// New returns the service over store.
func New(store Store, log *slog.Logger) *Service {
	return &Service{store: store, log: log, ClaimTTL: 2 * time.Minute, Poll: 50 * time.Millisecond, Now: func() time.Time { return time.Now().UTC() }}
}

// Key is a request's idempotency key as a door received it: Field names
// it for a VALIDATION_ERROR (Idempotency-Key on REST, idempotencyKey on
// GraphQL); an empty Value is no key.
type Key struct {
	Service *Service
	Field   string
	Value   string
}

// Do runs fn once per caller, key and request: without a key it just runs
// fn. With one, it claims the key first; the request that claims it runs
// fn and stores its answer (an error releases the claim, so a retry runs
// fn again: nothing was done, or nothing that would not be done again);
// a request that finds the key claimed by the same request waits for
// that answer and returns it; one that finds it used by another request
// (hash of op and the canonical JSON of request) gets
// IDEMPOTENCY_KEY_REUSED. The caller is the request's principal: keys of two callers never meet.
func Do[T any](ctx context.Context, k Key, op string, request any, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	s, key := k.Service, k.Value
	if key == "" || s == nil {
		return fn(ctx)
	}
	if err := checkKey(k.Field, key); err != nil {
		return zero, err
	}
	hash, err := requestHash(op, request)
	if err != nil {
		return zero, err
	}
	caller := callerOf(ctx)
	for {
		token := newToken()
		now := s.Now()
		claimed, err := s.store.ClaimIdempotencyKey(ctx, Claim{Caller: caller, Key: key, Operation: op, RequestHash: hash, Token: token, Now: now, ClaimedUntil: now.Add(s.ClaimTTL)})
		if err != nil {
			return zero, err
		}
		if claimed {
			return run(context.WithValue(ctx, requestIDKey{}, requestID(caller, key, hash)), s, caller, key, token, fn)
		}
		rec, err := s.store.IdempotencyRecord(ctx, caller, key)
		if errors.Is(err, storage.ErrNotFound) {
			continue // released or pruned meanwhile: claim again
		}
		if err != nil {
			return zero, err
		}
		if rec.RequestHash != hash {
			return zero, apperr.Newf(apperr.IdempotencyKeyReused, "The idempotency key %q was used for a different request in the last 24 hours; use a new key for a new request.", key)
		}
		if rec.Status == StatusDone {
			var out T
			if err := json.Unmarshal(rec.Response, &out); err != nil {
				return zero, fmt.Errorf("idempotency: stored answer of %s: %w", op, err)
			}
			return out, nil
		}
		// The same request is running elsewhere: wait for its answer, or
		// for its claim to lapse and take it over.
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-time.After(s.Poll):
		}
	}
}

// run does the work of the request that claimed the key and stores its
// answer, or releases the claim when it failed.
func run[T any](ctx context.Context, s *Service, caller, key, token string, fn func(context.Context) (T, error)) (T, error) {
	out, err := fn(ctx)
	bg := context.WithoutCancel(ctx)
	if err != nil {
		if rerr := s.store.ReleaseIdempotencyKey(bg, caller, key, token); rerr != nil {
			s.log.ErrorContext(ctx, "releasing an idempotency key", "err", rerr)
		}
		return out, err
	}
	b, err := json.Marshal(out)
	if err == nil {
		err = s.store.CompleteIdempotencyKey(bg, caller, key, token, b)
	}
	if err != nil {
		// The work is done; a retry after the claim lapses would do it
		// again, which is all that can be said.
		s.log.ErrorContext(ctx, "storing the answer of an idempotency key", "err", err)
	}
	return out, nil
}

// requestIDKey is the context key of RequestID.
type requestIDKey struct{}

// RequestID names the request whose work Do runs with ctx: the same for
// every run of the same caller, key and request (a retry after an error
// released the key), "" outside Do or without a key. Work that must count
// once however often it runs (a send against a user's cap) keys on it.
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

func requestID(caller, key, hash string) string {
	h := sha256.Sum256([]byte(caller + "\x00" + key + "\x00" + hash))
	return "idem:" + hex.EncodeToString(h[:16])
}

// checkKey refuses a key that is empty, longer than MaxKeyLen or not
// printable ASCII without spaces.
func checkKey(field, key string) error {
	if len(key) > MaxKeyLen {
		return apperr.Invalid(field, fmt.Sprintf("at most %d characters", MaxKeyLen), fmt.Sprintf("%d characters", len(key)))
	}
	for i := 0; i < len(key); i++ {
		if key[i] < 0x21 || key[i] > 0x7e {
			return apperr.Invalid(field, "printable ASCII characters without spaces", "other characters")
		}
	}
	return nil
}

// requestHash is the SHA-256 of op and the request as JSON (maps with
// sorted keys, so the same request always hashes the same).
func requestHash(op string, request any) (string, error) {
	b, err := json.Marshal(request)
	if err != nil {
		return "", fmt.Errorf("idempotency: encode the request of %s: %w", op, err)
	}
	h := sha256.New()
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// callerOf names the request's principal: keys are per caller.
func callerOf(ctx context.Context) string {
	p := auth.Caller(ctx)
	switch p.Kind {
	case auth.User:
		return "user:" + p.AccountID
	case auth.APIKey:
		return "key:" + p.KeyID
	}
	return "anonymous"
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}
