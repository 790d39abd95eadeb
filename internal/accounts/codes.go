package accounts

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strings"
)

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
