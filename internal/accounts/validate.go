package accounts

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/apperr"
)

// Password rules. The first four are the spec's signup rules; the length cap
// bounds hashing work.
const (
	MinPasswordLen = 8
	MaxPasswordLen = 128
	MaxEmailLen    = 254
)

const (
	ruleMinLen = "At least 8 characters"
	ruleMaxLen = "At most 128 characters"
	ruleUpper  = "At least one uppercase letter"
	ruleLower  = "At least one lowercase letter"
	ruleDigit  = "At least one digit"
)

// PasswordRequirements lists every rule, in the order clients show them.
func PasswordRequirements() []string {
	return []string{ruleMinLen, ruleMaxLen, ruleUpper, ruleLower, ruleDigit}
}

// CheckPassword returns the rules plain fails, nil when it passes. Length
// counts characters (runes), not bytes.
func CheckPassword(plain string) []string {
	var failed []string
	n := utf8.RuneCountInString(plain)
	if n < MinPasswordLen {
		failed = append(failed, ruleMinLen)
	}
	if n > MaxPasswordLen {
		failed = append(failed, ruleMaxLen)
	}
	var upper, lower, digit bool
	for _, r := range plain {
		switch {
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		}
	}
	if !upper {
		failed = append(failed, ruleUpper)
	}
	if !lower {
		failed = append(failed, ruleLower)
	}
	if !digit {
		failed = append(failed, ruleDigit)
	}
	return failed
}

// ValidatePassword returns WEAK_PASSWORD naming every rule and every failed
// rule, or nil.
func ValidatePassword(plain string) error {
	failed := CheckPassword(plain)
	if failed == nil {
		return nil
	}
	return apperr.Newf(apperr.WeakPassword, "The password does not meet the requirements: %s.", strings.Join(failed, "; ")).
		With("requirements", PasswordRequirements()).
		With("failedChecks", failed)
}

// NormalizeEmail trims and lower-cases an address and checks its syntax:
// one `@`, a non-empty local part, a domain with a dot and no empty label,
// no spaces or control characters, at most 254 characters. It returns
// INVALID_EMAIL otherwise.
func NormalizeEmail(raw string) (string, error) {
	// Checked before lower-casing: strings.ToLower turns invalid UTF-8 into
	// U+FFFD, which would then pass.
	if !utf8.ValidString(raw) {
		return "", apperr.New(apperr.InvalidEmail)
	}
	email := strings.ToLower(strings.TrimSpace(raw))
	if !validEmail(email) {
		return "", apperr.New(apperr.InvalidEmail)
	}
	return email, nil
}

func validEmail(email string) bool {
	if email == "" || len(email) > MaxEmailLen || !utf8.ValidString(email) {
		return false
	}
	if strings.Count(email, "@") != 1 {
		return false
	}
	local, domain, _ := strings.Cut(email, "@")
	if local == "" || len(local) > 64 || domain == "" {
		return false
	}
	for _, r := range email {
		if unicode.IsSpace(r) || unicode.IsControl(r) || r == '<' || r == '>' || r == '"' || r == ',' || r == ';' || r == '\\' {
			return false
		}
	}
	if strings.HasPrefix(local, ".") || strings.HasSuffix(local, ".") || strings.Contains(local, "..") {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || strings.HasPrefix(l, "-") || strings.HasSuffix(l, "-") {
			return false
		}
		for _, r := range l {
			if !(r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
				return false
			}
		}
	}
	return true
}
