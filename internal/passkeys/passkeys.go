// Package passkeys owns WebAuthn credentials (passkeys): their
// registration by a signed-in user, passwordless sign-in with a
// discoverable credential, and a passkey's assertion as the second step of
// a login that answered MFA_REQUIRED. The ceremonies (challenges) are kept
// in the store, short-lived and single use, so that any replica finishes
// what another began. The WebAuthn verification itself is
// github.com/go-webauthn/webauthn's.
package passkeys

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/herald-vpn/herald/internal/apperr"
)

// Credential is one passkey of an account.
type Credential struct {
	ID        string // Herald's id (a UUID)
	AccountID string
	Name      string
	// Record is the library's credential record: the WebAuthn credential
	// id, public key, flags, AAGUID, attestation and signature counter.
	Record             webauthn.Credential
	CounterRegressions int
	LastRegressionAt   *time.Time
	CreatedAt          time.Time
	LastUsedAt         *time.Time
}

// Kinds of ceremony.
const (
	CeremonyRegister = "register" // a signed-in user registers a passkey
	CeremonyLogin    = "login"    // passwordless sign-in (discoverable)
	CeremonyMFA      = "mfa"      // the second step of a login's challenge
	CeremonyStepUp   = "stepup"   // a signed-in session stepping up to aal2
)

// CeremonyTTL is how long a ceremony begun may be finished.
const CeremonyTTL = 5 * time.Minute

// MaxNameLen bounds a passkey's name, in characters.
const MaxNameLen = 64

// MaxBodyLen bounds a credential's JSON as a client sends it.
const MaxBodyLen = 64 << 10

// Ceremony is a WebAuthn ceremony begun and not yet finished: the
// library's session data (its challenge) and whom it is for.
type Ceremony struct {
	ID        string // what begin answers as challengeId
	Kind      string
	AccountID string // "" for a passwordless sign-in
	Challenge string // base64url, as the client data carries it
	Session   webauthn.SessionData
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// Usable is PASSKEY_CHALLENGE_INVALID (details.reason used or expired)
// for a ceremony that can no longer be finished at now.
func (c Ceremony) Usable(now time.Time) error {
	switch {
	case c.UsedAt != nil:
		return challengeInvalid("used")
	case !now.Before(c.ExpiresAt):
		return challengeInvalid("expired")
	}
	return nil
}

func challengeInvalid(reason string) error {
	return apperr.New(apperr.PasskeyChallengeInvalid).With("reason", reason)
}

// ceremonyPrefix starts every ceremony id.
const ceremonyPrefix = "pkc_"

// newCeremonyID is a fresh ceremony id: the prefix and 24 random bytes.
func newCeremonyID() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return ceremonyPrefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// ParseCeremonyID checks a ceremony id's form: PASSKEY_CHALLENGE_INVALID
// (reason malformed) for anything not shaped like one.
func ParseCeremonyID(id string) (string, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(id), ceremonyPrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(24) {
		return "", challengeInvalid("malformed")
	}
	if _, err := base64.RawURLEncoding.Strict().DecodeString(rest); err != nil {
		return "", challengeInvalid("malformed")
	}
	return ceremonyPrefix + rest, nil
}

// ParseCreation reads a registration's credential (the JSON of the
// PublicKeyCredential navigator.credentials.create answered, as
// PublicKeyCredential.toJSON writes it): VALIDATION_ERROR on
// "credential" for anything that is not one.
func ParseCreation(raw []byte) (*protocol.ParsedCredentialCreationData, error) {
	if len(raw) == 0 {
		return nil, apperr.Invalid("credential", "the PublicKeyCredential navigator.credentials.create answered, as JSON", "nothing")
	}
	if len(raw) > MaxBodyLen {
		return nil, apperr.Invalid("credential", "a PublicKeyCredential", "too long")
	}
	p, err := protocol.ParseCredentialCreationResponseBytes(raw)
	if err != nil {
		return nil, apperr.Invalid("credential", "the PublicKeyCredential navigator.credentials.create answered, as JSON", reasonOf(err))
	}
	return p, nil
}

// ParseAssertion reads a sign-in's credential (the PublicKeyCredential
// navigator.credentials.get answered): VALIDATION_ERROR on "credential"
// for anything that is not one.
func ParseAssertion(raw []byte) (*protocol.ParsedCredentialAssertionData, error) {
	if len(raw) == 0 {
		return nil, apperr.Invalid("credential", "the PublicKeyCredential navigator.credentials.get answered, as JSON", "nothing")
	}
	if len(raw) > MaxBodyLen {
		return nil, apperr.Invalid("credential", "a PublicKeyCredential", "too long")
	}
	p, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		return nil, apperr.Invalid("credential", "the PublicKeyCredential navigator.credentials.get answered, as JSON", reasonOf(err))
	}
	return p, nil
}

// reasonOf is the sentence of a WebAuthn error a client is told.
func reasonOf(err error) string {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		if pe.Details != "" {
			return pe.Details
		}
		return pe.Type
	}
	return "malformed"
}

// NormalizeName trims a passkey's name and checks its length; def when
// empty.
func NormalizeName(name, def string) (string, error) {
	name = strings.TrimSpace(name)
	if n := len([]rune(name)); n > MaxNameLen {
		return "", apperr.Invalid("name", fmt.Sprintf("at most %d characters", MaxNameLen), fmt.Sprintf("%d characters", n))
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", apperr.Invalid("name", "a name without control characters", "a control character")
	}
	if name == "" {
		return def, nil
	}
	return name, nil
}

// encodeSession and decodeSession are a ceremony's session data as the
// store keeps it.
func encodeSession(s webauthn.SessionData) (string, error) {
	b, err := json.Marshal(s)
	return string(b), err
}

func decodeSession(raw string) (webauthn.SessionData, error) {
	var s webauthn.SessionData
	err := json.Unmarshal([]byte(raw), &s)
	return s, err
}

// EncodeCeremonySession and DecodeCeremonySession are the store's
// encoding of a ceremony's session data.
func EncodeCeremonySession(s webauthn.SessionData) (string, error) { return encodeSession(s) }
func DecodeCeremonySession(raw string) (webauthn.SessionData, error) {
	return decodeSession(raw)
}

// EncodeRecord and DecodeRecord are the store's encoding of a credential
// record.
func EncodeRecord(c webauthn.Credential) (string, error) {
	b, err := json.Marshal(c)
	return string(b), err
}

func DecodeRecord(raw string) (webauthn.Credential, error) {
	var c webauthn.Credential
	err := json.Unmarshal([]byte(raw), &c)
	return c, err
}
