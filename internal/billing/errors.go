// Package billing takes in what the stores say about purchases (App
// Store, Google Play, Stripe), durably and idempotently, and turns it into
// entitlements (internal/subscriptions). Each store's wire format, its
// signatures and its API are a subpackage: appstore, play, stripebill.
package billing

import "errors"

// What a store adapter answers for a notification or a client's proof of
// purchase that Herald must refuse; the door answers 4xx for each, so
// that the sender does not retry, and nothing changes.
var (
	// ErrMalformed: not the store's wire format (bad JSON, a missing
	// field, a bad encoding).
	ErrMalformed = errors.New("billing: malformed")
	// ErrForged: a signature, certificate chain or token does not verify
	// (wrong key, expired certificate, bad chain, replay outside the
	// tolerance).
	ErrForged = errors.New("billing: signature does not verify")
	// ErrMisaddressed: verified, but meant for another app (bundle id,
	// package name, environment, audience).
	ErrMisaddressed = errors.New("billing: meant for another app")
)

// ErrUpstream wraps a failure to reach a store's API (network, 5xx,
// 429); the caller retries.
var ErrUpstream = errors.New("billing: store API unavailable")
