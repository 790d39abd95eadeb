// Package mfa owns second factors: TOTP authenticators (RFC 6238),
// recovery codes, the login challenge a password opens when the account
// has a factor, the lockout after wrong codes, and the step-up check of
// sensitive operations. Its rules are pure functions of this file; the
// Service runs them over the store.
package mfa

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
)

// Kinds of second factor, as challenges and factors name them.
const (
	KindTOTP     = "totp"
	KindRecovery = "recovery"
	// KindPasskey is a passkey's assertion (internal/passkeys), which
	// completes a challenge through CompleteLoginWith.
	KindPasskey = "passkey"
)

// TOTP parameters: what every authenticator app reads from an otpauth://
// URI without asking (SHA-1, six digits, thirty seconds).
const (
	Period = 30 * time.Second
	Digits = 6
	// Skew is how many steps either side of now a code is accepted.
	Skew = 1
)

// Step is the TOTP time step of t.
func Step(t time.Time) int64 { return t.Unix() / int64(Period/time.Second) }

// CodeAt is the TOTP code of secret at step (RFC 4226's HOTP with the
// step as its counter, dynamically truncated to Digits digits).
func CodeAt(secret []byte, step int64) string {
	var msg [8]byte
	binary.BigEndian.PutUint64(msg[:], uint64(step))
	m := hmac.New(sha1.New, secret)
	m.Write(msg[:])
	sum := m.Sum(nil)
	off := sum[len(sum)-1] & 0x0f
	v := binary.BigEndian.Uint32(sum[off:off+4]) & 0x7fffffff
	return fmt.Sprintf("%0*d", Digits, v%1_000_000)
}

// MatchTOTP checks code against secret at now: the code of the current
// step or of one step either side is accepted, and the step it matched is
// returned; MFA_CODE_REUSED when that step is not after lastStep (the
// step last used, which is never accepted again), MFA_CODE_INVALID when
// no step matches.
func MatchTOTP(secret []byte, code string, now time.Time, lastStep int64) (int64, error) {
	cur := Step(now)
	for d := int64(-Skew); d <= Skew; d++ {
		step := cur + d
		if subtle.ConstantTimeCompare([]byte(CodeAt(secret, step)), []byte(code)) != 1 {
			continue
		}
		if step <= lastStep {
			return 0, apperr.New(apperr.MFACodeReused)
		}
		return step, nil
	}
	return 0, apperr.New(apperr.MFACodeInvalid)
}

// Lockout is the rule of wrong codes: after Attempts wrong codes in a
// row, checks are refused for Duration. Attempts 0 turns it off.
type Lockout struct {
	Attempts int
	Duration time.Duration
}

// Failures are an account's wrong codes since its last good one, and the
// end of its lockout (zero: not locked).
type Failures struct {
	Count       int
	LockedUntil time.Time
}

// Check is MFA_LOCKED, with Retry-After and lockedUntil, while f is
// locked at now; nil otherwise.
func (l Lockout) Check(f Failures, now time.Time) error {
	if f.LockedUntil.IsZero() || !now.Before(f.LockedUntil) {
		return nil
	}
	return apperr.New(apperr.MFALocked).
		WithRetryAfter(apperr.WaitSeconds(f.LockedUntil.Sub(now))).
		With("lockedUntil", f.LockedUntil.UTC().Format(time.RFC3339))
}

// Fail is f after one more wrong code at now: locked for Duration when
// the count reaches Attempts (and counted from zero again after).
func (l Lockout) Fail(f Failures, now time.Time) Failures {
	if !f.LockedUntil.IsZero() && !now.Before(f.LockedUntil) {
		f = Failures{} // a lockout that ended starts a new count
	}
	f.Count++
	if l.Attempts > 0 && f.Count >= l.Attempts {
		return Failures{LockedUntil: now.Add(l.Duration)}
	}
	return f
}

// Left is how many wrong codes f may still make before it is locked; -1
// when the lockout is off.
func (l Lockout) Left(f Failures) int {
	if l.Attempts <= 0 {
		return -1
	}
	return max(l.Attempts-f.Count, 0)
}

// Recovery codes: RecoveryCodes of them, each recoveryLen characters of
// recoveryAlphabet (about 49 bits), shown as two groups of five.
const (
	RecoveryCodes    = 10
	recoveryLen      = 10
	recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"
)

// NewRecoveryCodes makes n fresh codes, as shown to the user.
func NewRecoveryCodes(n int) ([]string, error) {
	out := make([]string, n)
	buf := make([]byte, recoveryLen)
	for i := range out {
		if _, err := rand.Read(buf); err != nil {
			return nil, err
		}
		var b strings.Builder
		for j, c := range buf {
			if j == recoveryLen/2 {
				b.WriteByte('-')
			}
			// 256 % 31 leaves a bias of under 1 %: within what the
			// lockout and the length make irrelevant.
			b.WriteByte(recoveryAlphabet[int(c)%len(recoveryAlphabet)])
		}
		out[i] = b.String()
	}
	return out, nil
}

// HashRecoveryCode is the stored form of a normalized recovery code of an
// account: keyed, and bound to the account.
func HashRecoveryCode(key []byte, accountID, normalized string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(accountID))
	m.Write([]byte{0})
	m.Write([]byte(normalized))
	return m.Sum(nil)
}

// Code is a second-factor code as a client sent it, told apart by form.
type Code struct {
	Kind  string // KindTOTP or KindRecovery
	Value string // the TOTP digits, or the recovery code normalized
}

// maxCodeLen bounds what ParseCode reads.
const maxCodeLen = 64

// ParseCode reads a code: six digits (spaces allowed, "123 456") are a
// TOTP code; ten characters of the recovery alphabet, in any case, with
// spaces or dashes anywhere ("abcde-fghjk"), a recovery code. Anything
// else is VALIDATION_ERROR on field.
func ParseCode(field, raw string) (Code, error) {
	bad := apperr.Invalid(field, "a 6-digit code from the authenticator app or a recovery code (xxxxx-xxxxx)", "")
	if len(raw) > maxCodeLen {
		return Code{}, bad.With("received", "too long")
	}
	var b strings.Builder
	digits := true
	for _, r := range strings.ToLower(raw) {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			continue
		case r >= '0' && r <= '9':
		case r < 0x80 && strings.ContainsRune(recoveryAlphabet, r):
			digits = false
		default:
			return Code{}, bad.With("received", "an unexpected character")
		}
		b.WriteRune(r)
	}
	s := b.String()
	switch {
	case digits && len(s) == Digits:
		return Code{Kind: KindTOTP, Value: s}, nil
	case len(s) == recoveryLen && validRecovery(s):
		return Code{Kind: KindRecovery, Value: s}, nil
	}
	return Code{}, bad.With("received", fmt.Sprintf("%d characters", len(s)))
}

func validRecovery(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(recoveryAlphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// Login challenges: ChallengePrefix and 32 random bytes in unpadded
// base64url; stored only as their SHA-256.
const (
	ChallengePrefix = "mfa_"
	challengeBytes  = 32
	// ChallengeTTL is how long a challenge may complete a login.
	ChallengeTTL = 5 * time.Minute
)

// NewChallenge returns a fresh challenge token and its stored hash.
func NewChallenge() (string, []byte, error) {
	b := make([]byte, challengeBytes)
	if _, err := rand.Read(b); err != nil {
		return "", nil, err
	}
	tok := ChallengePrefix + base64.RawURLEncoding.EncodeToString(b)
	h := sha256.Sum256([]byte(tok))
	return tok, h[:], nil
}

// ParseChallenge checks a challenge token's form and returns its stored
// hash: MFA_CHALLENGE_INVALID for anything not shaped like one.
func ParseChallenge(tok string) ([]byte, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(tok), ChallengePrefix)
	if !ok || len(rest) != base64.RawURLEncoding.EncodedLen(challengeBytes) {
		return nil, apperr.New(apperr.MFAChallengeInvalid).With("reason", "malformed")
	}
	if b, err := base64.RawURLEncoding.Strict().DecodeString(rest); err != nil || len(b) != challengeBytes {
		return nil, apperr.New(apperr.MFAChallengeInvalid).With("reason", "malformed")
	}
	h := sha256.Sum256([]byte(ChallengePrefix + rest))
	return h[:], nil
}

// Challenge is a login waiting for its second factor.
type Challenge struct {
	Hash      []byte
	AccountID string
	// FirstMethod is the amr of the login's first step (auth.AMRPassword,
	// or the provider's name), which the session opened keeps beside the
	// second factor's.
	FirstMethod string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	UsedAt      *time.Time
}

// Usable is MFA_CHALLENGE_INVALID (details.reason used or expired) for a
// challenge that can no longer complete a login at now.
func (c Challenge) Usable(now time.Time) error {
	switch {
	case c.UsedAt != nil:
		return apperr.New(apperr.MFAChallengeInvalid).With("reason", "used")
	case !now.Before(c.ExpiresAt):
		return apperr.New(apperr.MFAChallengeInvalid).With("reason", "expired")
	}
	return nil
}
