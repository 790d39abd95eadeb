package accounts

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
)

// StoredCode is one code as the store keeps it: its keyed hash, expiry
// and the wrong attempts it still survives.
type StoredCode struct {
	Hash         []byte
	ExpiresAt    time.Time
	AttemptsLeft int
}

// CodeState is what the store holds for one account and purpose when a
// code is typed, loaded under the account's lock.
type CodeState struct {
	Now     time.Time   // the transaction's time
	Live    *StoredCode // the code whose email went out; nil when none
	Pending *StoredCode // a code whose email is being sent; nil when none
}

// CodeOutcome is what typing a code did.
type CodeOutcome int

const (
	CodeMissing   CodeOutcome = iota // no code to check
	CodeMatched                      // right: the codes are consumed
	CodeWrong                        // wrong: one attempt of the live code is spent
	CodeExpired                      // the live code has expired
	CodeExhausted                    // the live code has no attempts left
)

// CodeCheck is the decision about one typed code.
type CodeCheck struct {
	Outcome      CodeOutcome
	AttemptsLeft int // of the live code, after this attempt
}

// CheckCode is the one-time code state machine. A pending code (its email
// is on its way) that matches wins at once. Otherwise the live code is
// checked: none, no attempts left and expired are refusals that change
// nothing; a wrong code spends an attempt; a right one is consumed. An
// older code than the live one no longer exists, so it is simply wrong.
func CheckCode(st CodeState, matches func(hash []byte) bool) CodeCheck {
	if p := st.Pending; p != nil && st.Now.Before(p.ExpiresAt) && matches(p.Hash) {
		return CodeCheck{Outcome: CodeMatched}
	}
	l := st.Live
	switch {
	case l == nil:
		return CodeCheck{Outcome: CodeMissing}
	case l.AttemptsLeft <= 0:
		return CodeCheck{Outcome: CodeExhausted}
	case !st.Now.Before(l.ExpiresAt):
		return CodeCheck{Outcome: CodeExpired, AttemptsLeft: l.AttemptsLeft}
	case !matches(l.Hash):
		return CodeCheck{Outcome: CodeWrong, AttemptsLeft: l.AttemptsLeft - 1}
	}
	return CodeCheck{Outcome: CodeMatched, AttemptsLeft: l.AttemptsLeft}
}

// Err is the error a client sees for the check; nil for a match.
func (c CodeCheck) Err() error {
	switch c.Outcome {
	case CodeMatched:
		return nil
	case CodeMissing:
		return apperr.Newf(apperr.InvalidVerificationCode, "There is no code to check; ask for a new one.").With("attemptsRemaining", 0)
	case CodeExpired:
		return apperr.New(apperr.VerificationCodeExpired)
	case CodeExhausted:
		return apperr.Newf(apperr.InvalidVerificationCode, "The code is wrong and no attempts are left; ask for a new one.").With("attemptsRemaining", 0)
	}
	if c.AttemptsLeft == 0 {
		return apperr.Newf(apperr.InvalidVerificationCode, "The code is wrong and no attempts are left; ask for a new one.").With("attemptsRemaining", 0)
	}
	return apperr.Newf(apperr.InvalidVerificationCode, "The code is wrong; %d attempts left.", c.AttemptsLeft).With("attemptsRemaining", c.AttemptsLeft)
}

// newCode returns a 6-digit code from a cryptographic source.
func newCode() (string, error) {
	n, err := rand.Int(rand.Reader, big.NewInt(1_000_000))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%06d", n.Int64()), nil
}

// hashCode is the keyed hash stored instead of the code: with only a
// million codes, an unkeyed hash would be reversed at once.
func hashCode(key []byte, accountID string, p Purpose, code string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(accountID))
	m.Write([]byte{0})
	m.Write([]byte(p))
	m.Write([]byte{0})
	m.Write([]byte(strings.TrimSpace(code)))
	return m.Sum(nil)
}

// referralAlphabet leaves out 0/O, 1/I/L so codes survive being read aloud.
const referralAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

const referralLen = 8

func newReferralCode() (string, error) {
	b := make([]byte, referralLen)
	max := big.NewInt(int64(len(referralAlphabet)))
	for i := range b {
		n, err := rand.Int(rand.Reader, max)
		if err != nil {
			return "", err
		}
		b[i] = referralAlphabet[n.Int64()]
	}
	return string(b), nil
}

// normalizeReferral upper-cases a code and drops spaces and dashes; it
// returns "" when what is left cannot be a referral code.
func normalizeReferral(raw string) string {
	code := strings.ToUpper(strings.NewReplacer(" ", "", "-", "").Replace(strings.TrimSpace(raw)))
	if len(code) != referralLen {
		return ""
	}
	for _, r := range code {
		if !strings.ContainsRune(referralAlphabet, r) {
			return ""
		}
	}
	return code
}
