package accounts

import (
	"slices"
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

// Password checks, by the stable keys that WEAK_PASSWORD's failedChecks
// carries (clients translate by key; the sentences of requirements may
// change).
const (
	CheckMinLength          = "min_length"
	CheckMaxLength          = "max_length"
	CheckUppercase          = "uppercase"
	CheckLowercase          = "lowercase"
	CheckDigit              = "digit"
	CheckSpecialRecommended = "special_recommended" // reported, never required
	// CheckBreached: the password is in a breach corpus (HERALD_PWNED_PASSWORDS_URL);
	// reported alone, by the breach check after the rules pass.
	CheckBreached = "breached"
)

// passwordRules are the rules in the order clients show them, each with
// its key and its sentence.
var passwordRules = []struct{ key, text string }{
	{CheckMinLength, "At least 8 characters"},
	{CheckMaxLength, "At most 128 characters"},
	{CheckUppercase, "At least one uppercase letter"},
	{CheckLowercase, "At least one lowercase letter"},
	{CheckDigit, "At least one digit"},
}

// PasswordRequirements lists every rule as a sentence, in the order clients
// show them.
func PasswordRequirements() []string {
	out := make([]string, len(passwordRules))
	for i, r := range passwordRules {
		out[i] = r.text
	}
	return out
}

// PasswordChecks lists every key failedChecks may hold.
func PasswordChecks() []string {
	out := make([]string, 0, len(passwordRules)+1)
	for _, r := range passwordRules {
		out = append(out, r.key)
	}
	return append(out, CheckSpecialRecommended, CheckBreached)
}

// CheckPassword returns the keys of the rules plain fails, nil when it
// passes. Length counts characters (runes), not bytes. A password that
// fails also reports special_recommended when it has no punctuation or
// symbol; one that passes every rule is accepted without.
func CheckPassword(plain string) []string {
	var failed []string
	n := utf8.RuneCountInString(plain)
	if n < MinPasswordLen {
		failed = append(failed, CheckMinLength)
	}
	if n > MaxPasswordLen {
		failed = append(failed, CheckMaxLength)
	}
	var upper, lower, digit, special bool
	for _, r := range plain {
		switch {
		case unicode.IsUpper(r):
			upper = true
		case unicode.IsLower(r):
			lower = true
		case unicode.IsDigit(r):
			digit = true
		case unicode.IsPunct(r) || unicode.IsSymbol(r):
			special = true
		}
	}
	if !upper {
		failed = append(failed, CheckUppercase)
	}
	if !lower {
		failed = append(failed, CheckLowercase)
	}
	if !digit {
		failed = append(failed, CheckDigit)
	}
	if failed != nil && !special {
		failed = append(failed, CheckSpecialRecommended)
	}
	return failed
}

// ValidatePassword returns WEAK_PASSWORD with every rule (requirements, as
// sentences) and the keys of the failed ones (failedChecks), or nil.
func ValidatePassword(plain string) error {
	failed := CheckPassword(plain)
	if failed == nil {
		return nil
	}
	var broken []string
	for _, r := range passwordRules {
		if slices.Contains(failed, r.key) {
			broken = append(broken, r.text)
		}
	}
	return apperr.Newf(apperr.WeakPassword, "The password does not meet the requirements: %s.", strings.Join(broken, "; ")).
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
