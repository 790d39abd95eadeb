// Package seal encrypts the secrets Herald keeps in its database (webhook
// signing secrets, the generated JWT seed, the HMAC keys) with AES-256-GCM
// under an operator's key, so that a copy of the database (a backup, a
// replica, a leaked dump) does not hand them out.
//
// A sealed value is text: "herald-sealed:v1:" + the key's id + ":" + the
// standard base64 of nonce and ciphertext. The prefix tells sealed values
// from the plain ones written before a key was set, and the version and
// key id let a key be rotated: values sealed by a previous key still open,
// and are sealed again under the current one. Each value is bound to where
// it is kept (its context: the table and row), so a sealed value copied to
// another row does not open there.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Prefix starts every sealed value (version 1: AES-256-GCM, a 12-byte
// random nonce).
const Prefix = "herald-sealed:v1:"

// KeySize is the size of a key: AES-256.
const KeySize = 32

// ErrNoKey: a value is sealed but no key is configured.
var ErrNoKey = errors.New("sealed, but no encryption key is set")

// ErrTampered: a value sealed by a known key does not open: it was changed,
// or copied from another row.
var ErrTampered = errors.New("sealed value does not open with its key: it was changed, or moved from another row")

// ErrMalformed: a value starts like a sealed one but is not.
var ErrMalformed = errors.New("malformed sealed value")

// UnknownKeyError: a value is sealed by a key that is neither the current
// one nor a previous one.
type UnknownKeyError struct{ ID string }

func (e *UnknownKeyError) Error() string {
	return "sealed with key " + e.ID + ", which is not a key this server was given"
}

// ParseKey reads a key written as 64 hex digits (openssl rand -hex 32).
func ParseKey(s string) ([]byte, error) {
	b, err := hex.DecodeString(strings.TrimSpace(s))
	if err != nil || len(b) != KeySize {
		return nil, errors.New("must be 64 hex digits (32 bytes; openssl rand -hex 32 makes one)")
	}
	return b, nil
}

// KeyID names a key without revealing it: the first 8 hex digits of a
// SHA-256 of it, shown in sealed values, logs and `herald check`.
func KeyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("herald seal key id\x00"), key...))
	return hex.EncodeToString(sum[:4])
}

type key struct {
	id   string
	aead cipher.AEAD
}

func newKey(k []byte) (key, error) {
	if len(k) != KeySize {
		return key{}, fmt.Errorf("seal: a key is %d bytes, not %d", KeySize, len(k))
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return key{}, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return key{}, err
	}
	return key{id: KeyID(k), aead: aead}, nil
}

// Keyring is the current key, which seals, and the previous ones, which
// only open. A nil *Keyring is "no key": Seal keeps values plain, and Open
// refuses sealed ones with ErrNoKey.
type Keyring struct {
	current  key
	previous []key
}

// NewKeyring makes a keyring of the current key and the previous ones.
func NewKeyring(current []byte, previous ...[]byte) (*Keyring, error) {
	c, err := newKey(current)
	if err != nil {
		return nil, err
	}
	k := &Keyring{current: c}
	for _, p := range previous {
		pk, err := newKey(p)
		if err != nil {
			return nil, err
		}
		if pk.id == c.id {
			return nil, errors.New("seal: a previous key is the current key")
		}
		k.previous = append(k.previous, pk)
	}
	return k, nil
}

// ID is the current key's id ("" without a key).
func (k *Keyring) ID() string {
	if k == nil {
		return ""
	}
	return k.current.id
}

// IsSealed says whether a stored value is sealed (by any key).
func IsSealed(stored []byte) bool { return bytes.HasPrefix(stored, []byte(Prefix)) }

// SealedBy returns the id of the key that sealed a stored value; ok is
// false for a plain or malformed value.
func SealedBy(stored []byte) (id string, ok bool) {
	id, _, ok = split(stored)
	return id, ok
}

// Current says whether a stored value is sealed by the current key, so
// that nothing is left to do for it.
func (k *Keyring) Current(stored []byte) bool {
	id, ok := SealedBy(stored)
	return ok && k != nil && id == k.current.id
}

// Seal seals plain under the current key for the place context names;
// without a key (a nil Keyring) it returns plain as it is.
func (k *Keyring) Seal(plain []byte, context string) []byte {
	if k == nil {
		return plain
	}
	nonce := make([]byte, k.current.aead.NonceSize())
	rand.Read(nonce)
	sealed := k.current.aead.Seal(nonce, nonce, plain, []byte(context))
	out := make([]byte, 0, len(Prefix)+len(k.current.id)+1+base64.StdEncoding.EncodedLen(len(sealed)))
	out = append(out, Prefix...)
	out = append(out, k.current.id...)
	out = append(out, ':')
	return base64.StdEncoding.AppendEncode(out, sealed)
}

// Open returns the plain value of stored, kept at the place context
// names: a plain value as it is (written before a key was set), a sealed
// one opened by the key that sealed it.
func (k *Keyring) Open(stored []byte, context string) ([]byte, error) {
	if !IsSealed(stored) {
		return stored, nil
	}
	id, body, ok := split(stored)
	if !ok {
		return nil, ErrMalformed
	}
	if k == nil {
		return nil, fmt.Errorf("%w (key %s sealed it)", ErrNoKey, id)
	}
	for _, candidate := range append([]key{k.current}, k.previous...) {
		if candidate.id != id {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(string(body))
		ns := candidate.aead.NonceSize()
		if err != nil || len(raw) < ns+candidate.aead.Overhead() {
			return nil, ErrMalformed
		}
		plain, err := candidate.aead.Open(nil, raw[:ns], raw[ns:], []byte(context))
		if err != nil {
			return nil, ErrTampered
		}
		return plain, nil
	}
	return nil, &UnknownKeyError{ID: id}
}

// split cuts a sealed value into its key id and body.
func split(stored []byte) (id string, body []byte, ok bool) {
	rest, found := bytes.CutPrefix(stored, []byte(Prefix))
	if !found {
		return "", nil, false
	}
	idb, body, found := bytes.Cut(rest, []byte(":"))
	if !found || len(idb) != 8 || strings.Trim(string(idb), "0123456789abcdef") != "" || len(body) == 0 {
		return "", nil, false
	}
	return string(idb), body, true
}
