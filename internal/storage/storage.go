// Package storage holds the errors every store implementation returns, so
// that the domain packages can branch on them without knowing which
// database is behind the store and without ever seeing driver error text.
package storage

import "errors"

var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict: a unique key is already taken.
	ErrConflict = errors.New("storage: already exists")
	// ErrInvalidText: a value the database cannot store as text (a NUL
	// byte, invalid UTF-8): the client's input, refused as invalid.
	ErrInvalidText = errors.New("storage: text the database cannot store")
	// ErrBusy: the database is locked or the connection failed; the
	// operation may succeed if retried.
	ErrBusy = errors.New("storage: busy or unavailable")
)
