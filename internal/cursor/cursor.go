// Package cursor makes the opaque page cursors of Herald's listings. A
// cursor is the unpadded base64url of "v1:<kind>:<JSON of the payload>":
// the version lets a later format refuse older cursors cleanly, the kind
// keeps one listing's cursor out of another, and the payload is whatever
// the listing needs to resume (an ID, a sort key and an ID, …). The zero
// payload is never a cursor: a listing's start is written "".
//
// Cursors are short-lived and not meant to be read by clients; Decode
// accepts exactly what Encode makes and nothing else.
package cursor

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
)

// version is the format's tag; a cursor of another version is invalid.
const version = "v1"

// ErrInvalid is Decode's answer to anything that is not a cursor Encode
// made for the same kind of payload.
var ErrInvalid = errors.New("cursor: not a cursor of this listing")

// Codec encodes and decodes the cursors of one listing, whose payload has
// type T (anything encoding/json round-trips).
type Codec[T any] struct {
	prefix string
}

// New returns the codec of a listing; kind names the listing, is not
// empty and has no ':'. It panics otherwise (codecs are package-level
// variables, so a bad kind is a programming error found at start-up).
func New[T any](kind string) Codec[T] {
	if kind == "" || strings.Contains(kind, ":") {
		panic(fmt.Sprintf("cursor: bad kind %q", kind))
	}
	return Codec[T]{prefix: version + ":" + kind + ":"}
}

// Encode returns the cursor of p. It fails when p is the zero value or
// cannot be encoded as JSON (for instance a time outside the years 0 to
// 9999).
func (c Codec[T]) Encode(p T) (string, error) {
	if c.prefix == "" {
		panic("cursor: Codec not made by New")
	}
	if reflect.ValueOf(&p).Elem().IsZero() {
		return "", errors.New("cursor: the zero payload has no cursor")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("cursor: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(append([]byte(c.prefix), b...)), nil
}

// Decode returns the payload of a cursor that Encode made, and ErrInvalid
// for any other string, "" included.
func (c Codec[T]) Decode(s string) (T, error) {
	var zero T
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return zero, ErrInvalid
	}
	body, ok := bytes.CutPrefix(raw, []byte(c.prefix))
	if !ok {
		return zero, ErrInvalid
	}
	var p T
	if err := json.Unmarshal(body, &p); err != nil {
		return zero, ErrInvalid
	}
	// Only the canonical form is a cursor: this refuses unknown or missing
	// fields, other spellings of the same JSON and lax base64 alike.
	if again, err := c.Encode(p); err != nil || again != s {
		return zero, ErrInvalid
	}
	return p, nil
}

// After decodes a listing's after argument: "" is the start of the
// listing, the zero payload; anything else is Decode's.
func (c Codec[T]) After(after string) (T, error) {
	if after == "" {
		var zero T
		return zero, nil
	}
	return c.Decode(after)
}

// Page is one page of a listing.
type Page[I any] struct {
	Items       []I
	EndCursor   string // the cursor of the last item; "" when Items is empty
	HasNextPage bool
}

// Cut makes a page of at most first items of fetched, which a listing
// reads with a limit of first+1 so that one more item says that a next
// page exists; key is an item's cursor payload.
func Cut[I, T any](c Codec[T], fetched []I, first int, key func(I) T) (Page[I], error) {
	p := Page[I]{Items: fetched}
	if len(fetched) > first {
		p.Items, p.HasNextPage = fetched[:first], true
	}
	if n := len(p.Items); n > 0 {
		end, err := c.Encode(key(p.Items[n-1]))
		if err != nil {
			return Page[I]{}, err
		}
		p.EndCursor = end
	}
	return p, nil
}

// PageSize is a listing's first argument as a page size: def when 0, and
// VALIDATION_ERROR (field first) outside 1 to max.
func PageSize(first, def, max int) (int, error) {
	if first == 0 {
		return def, nil
	}
	if first < 0 || first > max {
		return 0, apperr.Invalid("first", fmt.Sprintf("between 1 and %d", max), fmt.Sprint(first))
	}
	return first, nil
}
