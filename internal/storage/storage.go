// Package storage holds what Herald's stores share with the rest of the
// code: the database URL's form, and the errors every store returns, so
// that the domain packages can branch on them without knowing which
// database is behind the store and without ever seeing driver error text.
package storage

import (
	"errors"
	"fmt"
	"strings"
)

// Dialect names a database Herald can use.
type Dialect string

const (
	SQLite   Dialect = "sqlite"
	Postgres Dialect = "postgres"
)

// ParseURL splits a HERALD_DATABASE_URL into its dialect and the driver's
// data source: sqlite:PATH (the embedded default) or postgres://….
func ParseURL(raw string) (Dialect, string, error) {
	switch {
	case strings.HasPrefix(raw, "postgres://"), strings.HasPrefix(raw, "postgresql://"):
		return Postgres, raw, nil
	case strings.HasPrefix(raw, "sqlite:"):
		path := strings.TrimPrefix(raw, "sqlite:")
		path = strings.TrimPrefix(path, "//")
		if path == "" {
			return "", "", errors.New("sqlite URL needs a path, for example sqlite:herald.db")
		}
		return SQLite, path, nil
	}
	return "", "", fmt.Errorf("unsupported database URL %q: use postgres://… or sqlite:PATH", redactURL(raw))
}

// redactURL hides the user information of a URL.
func redactURL(raw string) string {
	if i := strings.Index(raw, "@"); i >= 0 {
		if j := strings.Index(raw, "://"); j >= 0 && j < i {
			return raw[:j+3] + "…" + raw[i:]
		}
	}
	return raw
}

var (
	// ErrNotFound: the row asked for does not exist.
	ErrNotFound = errors.New("storage: not found")
	// ErrConflict: a unique key is already taken.
	ErrConflict = errors.New("storage: already exists")
	// ErrInvalidText: a value the database cannot store as text (a NUL
	// byte, invalid UTF-8): the client's input, refused as invalid.
	ErrInvalidText = errors.New("storage: text the database cannot store")
	// ErrBusy: the database is locked or overloaded (lock timeout,
	// serialization failure, too many connections); the operation may
	// succeed if retried.
	ErrBusy = errors.New("storage: busy")
	// ErrUnavailable: the database cannot be reached (connection refused
	// or lost, server shutting down or restarting, failover, no pooled
	// connection within the acquire timeout); retry later.
	ErrUnavailable = errors.New("storage: unavailable")
)
