package mfa_test

import (
	"encoding/base32"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// RFC 6238's test secret (SHA-1), its appendix B.
var rfcSecret = []byte("12345678901234567890")

// CodeAt is RFC 6238's TOTP: the appendix's vectors (the last six
// digits of its eight-digit codes) and pquerna/otp agree with it.
func TestCodeAtMatchesRFC6238AndPquerna(t *testing.T) {
	vectors := []struct {
		unix int64
		code string
	}{
		{59, "287082"}, {1111111109, "081804"}, {1111111111, "050471"},
		{1234567890, "005924"}, {2000000000, "279037"}, {20000000000, "353130"},
	}
	b32 := base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(rfcSecret)
	for _, v := range vectors {
		at := time.Unix(v.unix, 0).UTC()
		if got := mfa.CodeAt(rfcSecret, mfa.Step(at)); got != v.code {
			t.Errorf("CodeAt(%d) = %s, want %s", v.unix, got, v.code)
		}
		theirs, err := totp.GenerateCodeCustom(b32, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
		if err != nil || theirs != v.code {
			t.Errorf("pquerna at %d = %s, %v; want %s", v.unix, theirs, err, v.code)
		}
	}
}

// The window: the previous, current and next step are accepted (and say
// which step matched), two steps off either way is refused, and a step
// at or before the last one used is a replay.
func TestMatchTOTPWindow(t *testing.T) {
	now := time.Date(2026, 11, 28, 15, 0, 10, 0, time.UTC)
	cur := mfa.Step(now)
	cases := []struct {
		name     string
		step     int64
		lastStep int64
		want     apperr.Code // "" accepted
	}{
		{"current", cur, 0, ""},
		{"previous", cur - 1, 0, ""},
		{"next", cur + 1, 0, ""},
		{"two steps before", cur - 2, 0, apperr.MFACodeInvalid},
		{"two steps after", cur + 2, 0, apperr.MFACodeInvalid},
		{"replay of the current step", cur, cur, apperr.MFACodeReused},
		{"an earlier step after a later one was used", cur - 1, cur, apperr.MFACodeReused},
		{"the next step after the current was used", cur + 1, cur, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			step, err := mfa.MatchTOTP(rfcSecret, mfa.CodeAt(rfcSecret, c.step), now, c.lastStep)
			if c.want == "" {
				if err != nil || step != c.step {
					t.Fatalf("MatchTOTP = %d, %v; want step %d", step, err, c.step)
				}
				return
			}
			if !apperr.Is(err, c.want) {
				t.Fatalf("MatchTOTP = %d, %v; want %s", step, err, c.want)
			}
		})
	}
	// The edges of a step: its first and last second, in the window of
	// the step before and after.
	first := time.Unix(cur*30, 0).UTC()
	last := first.Add(29 * time.Second)
	if _, err := mfa.MatchTOTP(rfcSecret, mfa.CodeAt(rfcSecret, cur-1), first, 0); err != nil {
		t.Errorf("previous step at a step's first second: %v", err)
	}
	if _, err := mfa.MatchTOTP(rfcSecret, mfa.CodeAt(rfcSecret, cur+1), last, 0); err != nil {
		t.Errorf("next step at a step's last second: %v", err)
	}
	if _, err := mfa.MatchTOTP(rfcSecret, mfa.CodeAt(rfcSecret, cur-1), last.Add(time.Second*31), 0); !apperr.Is(err, apperr.MFACodeInvalid) {
		t.Errorf("a code two steps old: %v", err)
	}
}

// The lockout: Attempts wrong codes lock for Duration with Retry-After;
// the lock ends on time and the count starts again; 0 turns it off.
func TestLockout(t *testing.T) {
	now := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	l := mfa.Lockout{Attempts: 3, Duration: 10 * time.Minute}
	var f mfa.Failures
	for i := 1; i <= 2; i++ {
		f = l.Fail(f, now)
		if err := l.Check(f, now); err != nil || f.Count != i || l.Left(f) != 3-i {
			t.Fatalf("after %d wrong codes: %+v, %v, left %d", i, f, err, l.Left(f))
		}
	}
	f = l.Fail(f, now)
	err := l.Check(f, now.Add(time.Minute))
	ae, ok := err.(*apperr.Error)
	if !ok || ae.Code != apperr.MFALocked || ae.RetryAfterSeconds != 540 || ae.Details["retryAfter"] != 540 || ae.Details["lockedUntil"] != "2026-11-28T15:10:00Z" {
		t.Fatalf("after 3 wrong codes: %+v", err)
	}
	if err := l.Check(f, now.Add(10*time.Minute)); err != nil {
		t.Fatalf("the lock should end after its duration: %v", err)
	}
	if f = l.Fail(f, now.Add(11*time.Minute)); f.Count != 1 || !f.LockedUntil.IsZero() {
		t.Fatalf("a wrong code after the lock ended starts a new count: %+v", f)
	}
	off := mfa.Lockout{}
	var g mfa.Failures
	for range 100 {
		g = off.Fail(g, now)
	}
	if err := off.Check(g, now); err != nil || off.Left(g) != -1 {
		t.Fatalf("a lockout that is off locked: %v", err)
	}
}

func TestParseCode(t *testing.T) {
	cases := []struct {
		in, kind, value string
	}{
		{"123456", mfa.KindTOTP, "123456"},
		{" 123 456 ", mfa.KindTOTP, "123456"},
		{"abcde-fghjk", mfa.KindRecovery, "abcdefghjk"},
		{"ABCDE FGHJK", mfa.KindRecovery, "abcdefghjk"},
		{"23456-78923", mfa.KindRecovery, "2345678923"},
		{"12345", "", ""},
		{"1234567", "", ""},
		{"abcde-fghji", "", ""}, // i is not in the alphabet
		{"", "", ""},
		{"１２３４５６", "", ""}, // full-width digits
		{strings.Repeat("1", 100), "", ""},
	}
	for _, c := range cases {
		got, err := mfa.ParseCode("code", c.in)
		if c.kind == "" {
			if !apperr.Is(err, apperr.ValidationError) {
				t.Errorf("ParseCode(%q) = %+v, %v; want VALIDATION_ERROR", c.in, got, err)
			}
			continue
		}
		if err != nil || got.Kind != c.kind || got.Value != c.value {
			t.Errorf("ParseCode(%q) = %+v, %v; want %s %s", c.in, got, err, c.kind, c.value)
		}
	}
}

// Recovery codes are ten distinct codes of the documented form, each of
// which ParseCode reads back as a recovery code.
func TestNewRecoveryCodes(t *testing.T) {
	codes, err := mfa.NewRecoveryCodes(mfa.RecoveryCodes)
	if err != nil || len(codes) != 10 {
		t.Fatal(codes, err)
	}
	seen := map[string]bool{}
	for _, c := range codes {
		p, err := mfa.ParseCode("code", c)
		if err != nil || p.Kind != mfa.KindRecovery || len(c) != 11 || c[5] != '-' || seen[c] {
			t.Fatalf("code %q: %+v %v", c, p, err)
		}
		seen[c] = true
	}
	key := []byte("k")
	if string(mfa.HashRecoveryCode(key, "a", "abcdefghjk")) == string(mfa.HashRecoveryCode(key, "b", "abcdefghjk")) {
		t.Fatal("a recovery code's hash must be bound to its account")
	}
}

func TestChallenge(t *testing.T) {
	tok, hash, err := mfa.NewChallenge()
	if err != nil {
		t.Fatal(err)
	}
	got, err := mfa.ParseChallenge(tok)
	if err != nil || string(got) != string(hash) {
		t.Fatalf("ParseChallenge(%q) = %x, %v; want %x", tok, got, err, hash)
	}
	for _, bad := range []string{"", "mfa_", tok[:len(tok)-1], "xfa_" + tok[4:], tok + "A", strings.Replace(tok, tok[5:6], "+", 1)} {
		if _, err := mfa.ParseChallenge(bad); !apperr.Is(err, apperr.MFAChallengeInvalid) {
			t.Errorf("ParseChallenge(%q) = %v; want MFA_CHALLENGE_INVALID", bad, err)
		}
	}
	now := time.Date(2026, 11, 28, 15, 0, 0, 0, time.UTC)
	c := mfa.Challenge{ExpiresAt: now.Add(mfa.ChallengeTTL)}
	if err := c.Usable(now.Add(mfa.ChallengeTTL - time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.Usable(now.Add(mfa.ChallengeTTL)); !apperr.Is(err, apperr.MFAChallengeInvalid) {
		t.Fatalf("an expired challenge: %v", err)
	}
	c.UsedAt = &now
	if err := c.Usable(now); !apperr.Is(err, apperr.MFAChallengeInvalid) {
		t.Fatalf("a used challenge: %v", err)
	}
}

// FuzzParseCode: never panics; what it accepts is one of the two forms,
// and reading the value again gives the same code.
func FuzzParseCode(f *testing.F) {
	for _, s := range []string{"123456", "123 456", "abcde-fghjk", "ABCDE FGHJK", "", "-", "１２３４５６", "abcde\x00fghjk"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := mfa.ParseCode("code", s)
		if err != nil {
			if !apperr.Is(err, apperr.ValidationError) {
				t.Fatalf("ParseCode(%q): %v", s, err)
			}
			return
		}
		switch {
		case c.Kind == mfa.KindTOTP && len(c.Value) == 6:
		case c.Kind == mfa.KindRecovery && len(c.Value) == 10:
		default:
			t.Fatalf("ParseCode(%q) = %+v", s, c)
		}
		again, err := mfa.ParseCode("code", c.Value)
		if err != nil || again != c {
			t.Fatalf("ParseCode(%q) again = %+v, %v; want %+v", c.Value, again, err, c)
		}
	})
}

// FuzzParseChallenge: never panics; a token it accepts has the one form.
func FuzzParseChallenge(f *testing.F) {
	tok, _, _ := mfa.NewChallenge()
	for _, s := range []string{tok, "", "mfa_", "mfa_" + strings.Repeat("A", 43), "mfa_" + strings.Repeat("_", 43), " " + tok + " "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := mfa.ParseChallenge(s)
		if err != nil {
			if !apperr.Is(err, apperr.MFAChallengeInvalid) {
				t.Fatalf("ParseChallenge(%q): %v", s, err)
			}
			return
		}
		if len(h) != 32 || !strings.HasPrefix(strings.TrimSpace(s), mfa.ChallengePrefix) || len(strings.TrimSpace(s)) != 47 {
			t.Fatalf("ParseChallenge(%q) accepted: %x", s, h)
		}
	})
}
