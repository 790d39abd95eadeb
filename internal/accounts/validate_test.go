package accounts_test

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
)

func TestNormalizeEmail(t *testing.T) {
	label63 := strings.Repeat("d", 63)
	// 64 + 1 + 189 = 254 characters, the longest address accepted.
	longest := strings.Repeat("l", 64) + "@" + label63 + "." + label63 + "." + strings.Repeat("d", 57) + ".com"
	if len(longest) != 254 {
		t.Fatalf("fixture is %d characters, want 254", len(longest))
	}
	cases := []struct {
		in   string
		want string // "" means INVALID_EMAIL
	}{
		{"a@b.co", "a@b.co"},
		{"  Alice@Example.COM \n", "alice@example.com"},
		{"\tfirst.last+tag@mail.example.org", "first.last+tag@mail.example.org"},
		{"o'brien@example.ie", "o'brien@example.ie"},
		{"user@sub-domain.example.com", "user@sub-domain.example.com"},
		{"user@123.example", "user@123.example"},
		{"JOSÉ@Exämple.COM", "josé@exämple.com"},
		{longest, longest},
		{strings.ToUpper(longest), longest},

		{"", ""},
		{"   ", ""},
		{"plainaddress", ""},
		{"@example.com", ""},
		{"alice@", ""},
		{"alice@localhost", ""},
		{"alice@@example.com", ""},
		{"alice@bob@example.com", ""},
		{"al ice@example.com", ""},
		{"alice@exa mple.com", ""},
		{"alice\t@example.com", ""},
		{".alice@example.com", ""},
		{"alice.@example.com", ""},
		{"al..ice@example.com", ""},
		{"alice@.example.com", ""},
		{"alice@example.com.", ""},
		{"alice@example..com", ""},
		{"alice@-example.com", ""},
		{"alice@example-.com", ""},
		{"alice@exa_mple.com", ""},
		{"<alice@example.com>", ""},
		{`"alice"@example.com`, ""},
		{"alice,bob@example.com", ""},
		{"alice;bob@example.com", ""},
		{`al\ice@example.com`, ""},
		{"alice@example.com\x00", ""},
		{"ali\x7fce@example.com", ""},
		{"\xffalice@example.com", ""},
		{"Alice <alice@example.com>", ""},
		{strings.Repeat("l", 65) + "@example.com", ""},
		{"alice@" + strings.Repeat("d", 64) + ".com", ""},
		{"x" + longest, ""},
	}
	for _, c := range cases {
		got, err := accounts.NormalizeEmail(c.in)
		if c.want == "" {
			if !apperr.Is(err, apperr.InvalidEmail) {
				t.Errorf("NormalizeEmail(%q) = %q, %v; want INVALID_EMAIL", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// wantFailed computes the failed password rules independently of the
// package: by rune count and Unicode categories.
func wantFailed(pw string) []string {
	n := 0
	var upper, lower, digit, special bool
	for i := 0; i < len(pw); {
		r, size := utf8.DecodeRuneInString(pw[i:])
		i += size
		n++
		upper = upper || unicode.Is(unicode.Lu, r)
		lower = lower || unicode.Is(unicode.Ll, r)
		digit = digit || unicode.Is(unicode.Nd, r)
		special = special || !unicode.Is(unicode.Lu, r) && !unicode.Is(unicode.Ll, r) && !unicode.Is(unicode.Nd, r) && (unicode.Is(unicode.P, r) || unicode.Is(unicode.S, r))
	}
	keys := []string{"min_length", "max_length", "uppercase", "lowercase", "digit"}
	var failed []string
	for i, bad := range []bool{n < 8, n > 128, !upper, !lower, !digit} {
		if bad {
			failed = append(failed, keys[i])
		}
	}
	if failed != nil && !special {
		failed = append(failed, "special_recommended")
	}
	return failed
}

func TestPasswordChecksAreStable(t *testing.T) {
	want := []string{"min_length", "max_length", "uppercase", "lowercase", "digit", "special_recommended", "breached"}
	if got := accounts.PasswordChecks(); !reflect.DeepEqual(got, want) {
		t.Fatalf("PasswordChecks() = %q, want the documented %q", got, want)
	}
}

func TestPasswordRequirements(t *testing.T) {
	reqs := accounts.PasswordRequirements()
	want := []string{"8 characters", "128 characters", "uppercase", "lowercase", "digit"}
	if len(reqs) != len(want) {
		t.Fatalf("requirements %q, want %d rules", reqs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(strings.ToLower(reqs[i]), w) {
			t.Errorf("rule %d is %q, want it to be about %q", i, reqs[i], w)
		}
	}
}

func TestCheckPassword(t *testing.T) {
	const minLen, maxLen, upper, lower, digit, special = "min_length", "max_length", "uppercase", "lowercase", "digit", "special_recommended"
	cases := []struct {
		pw   string
		want []string
	}{
		{"Abcdefg1", nil},
		{"Correct-Horse-Battery-9", nil},
		{"Passw0rd with spaces", nil},
		{"ÄÖÜäöü12", nil},                       // Unicode letters count
		{"Ab1" + strings.Repeat("x", 125), nil}, // exactly 128
		{"Äb1ççççç", nil},                       // 8 runes, more bytes
		{"Abcdef1", []string{minLen, special}},  // 7 characters
		{"Abcde-1", []string{minLen}},           // 7 characters, one special
		{"Äb1çççç", []string{minLen, special}},  // 7 runes, 11 bytes
		{"Ab1" + strings.Repeat("x", 126), []string{maxLen, special}},
		{"abcdefg1", []string{upper, special}},
		{"abcdef$1", []string{upper}},
		{"ABCDEFG1", []string{lower, special}},
		{"Abcdefgh", []string{digit, special}},
		{"12345678", []string{upper, lower, special}},
		{"!!!!!!!!", []string{upper, lower, digit}},
		{"", []string{minLen, upper, lower, digit, special}},
		{"a", []string{minLen, upper, digit, special}},
		{"Abc1\x00\x00\x00\x00", nil},
	}
	for _, c := range cases {
		got := accounts.CheckPassword(c.pw)
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("CheckPassword(%q) = %q, want %q", c.pw, got, c.want)
		}
		if !reflect.DeepEqual(got, wantFailed(c.pw)) {
			t.Errorf("CheckPassword(%q) = %q, independent check says %q", c.pw, got, wantFailed(c.pw))
		}
		err := accounts.ValidatePassword(c.pw)
		if c.want == nil {
			if err != nil {
				t.Errorf("ValidatePassword(%q) = %v, want nil", c.pw, err)
			}
			continue
		}
		checkWeak(t, c.pw, err, c.want)
	}
}

// checkWeak asserts err is WEAK_PASSWORD naming every rule and exactly the
// failed ones.
func checkWeak(t *testing.T, pw string, err error, failed []string) {
	t.Helper()
	if !apperr.Is(err, apperr.WeakPassword) {
		t.Fatalf("ValidatePassword(%q) = %v, want WEAK_PASSWORD", pw, err)
	}
	ae := apperr.As(err)
	if ae.Status() != 422 {
		t.Errorf("WEAK_PASSWORD status %d, want 422", ae.Status())
	}
	if !reflect.DeepEqual(ae.Details["requirements"], accounts.PasswordRequirements()) {
		t.Errorf("requirements = %v", ae.Details["requirements"])
	}
	if !reflect.DeepEqual(ae.Details["failedChecks"], failed) {
		t.Errorf("failedChecks = %v, want %q", ae.Details["failedChecks"], failed)
	}
}

func FuzzNormalizeEmail(f *testing.F) {
	for _, seed := range []string{
		"a@b.co", "  Alice@Example.COM ", "first.last+tag@mail.example.org", "JOSÉ@Exämple.COM",
		"", "@", "a@b", "a@@b.co", "a@b@c.co", "a b@c.co", ".a@b.co", "a..b@c.co", "a@-b.co", "a@b..co",
		"a@b.co\x00", "\xff@b.co", "İ@example.com", "ǅ@example.com", "a@\u200bexample.com",
		strings.Repeat("a", 64) + "@" + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 57) + ".com",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := accounts.NormalizeEmail(in)
		if err != nil {
			if !apperr.Is(err, apperr.InvalidEmail) || got != "" {
				t.Fatalf("NormalizeEmail(%q) = %q, %v; a refusal must be INVALID_EMAIL and empty", in, got, err)
			}
			return
		}
		switch {
		case got != strings.TrimSpace(got):
			t.Fatalf("NormalizeEmail(%q) = %q is not trimmed", in, got)
		case got != strings.ToLower(got):
			t.Fatalf("NormalizeEmail(%q) = %q is not lower-case", in, got)
		case len(got) > 254:
			t.Fatalf("NormalizeEmail(%q) = %q is %d bytes, over 254", in, got, len(got))
		case strings.Count(got, "@") != 1:
			t.Fatalf("NormalizeEmail(%q) = %q does not have exactly one @", in, got)
		case !utf8.ValidString(got):
			t.Fatalf("NormalizeEmail(%q) = %q is not valid UTF-8", in, got)
		case strings.ContainsFunc(got, unicode.IsSpace):
			t.Fatalf("NormalizeEmail(%q) = %q contains white space", in, got)
		}
		local, domain, _ := strings.Cut(got, "@")
		if local == "" || !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") {
			t.Fatalf("NormalizeEmail(%q) = %q: empty local part or a domain without an inner dot", in, got)
		}
		if got != strings.ToLower(strings.TrimSpace(in)) {
			t.Fatalf("NormalizeEmail(%q) = %q is not the same address trimmed and lower-cased", in, got)
		}
		// Normalizing is idempotent: what is stored is found again.
		again, err := accounts.NormalizeEmail(got)
		if err != nil || again != got {
			t.Fatalf("NormalizeEmail(%q) = %q, but NormalizeEmail(%q) = %q, %v", in, got, got, again, err)
		}
	})
}

func FuzzCheckPassword(f *testing.F) {
	for _, seed := range []string{
		"", "a", "Abcdefg1", "abcdefg1", "ABCDEFG1", "Abcdefgh", "12345678", "Äb1ççççç", "Äb1çççç",
		"Ab1" + strings.Repeat("x", 125), "Ab1" + strings.Repeat("x", 126), "\xff\xfeAb1xxxx", "ǅǅǅǅǅǅ11", "Ⅻabcdef1", "Ab٣defgh",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, pw string) {
		got := accounts.CheckPassword(pw)
		want := wantFailed(pw)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("CheckPassword(%q) = %q, independent check says %q", pw, got, want)
		}
		err := accounts.ValidatePassword(pw)
		if (err == nil) != (got == nil) {
			t.Fatalf("ValidatePassword(%q) = %v but CheckPassword = %q", pw, err, got)
		}
		if err != nil {
			checkWeak(t, pw, err, want)
		}
	})
}
