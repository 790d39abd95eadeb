package accounts_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

func TestNormalizeLocale(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"  ", ""},
		{"de", "de"},
		{"DE-at", "de-AT"},
		{"pt_BR", "pt-BR"},
		{" en-GB ", "en-GB"},
		{"zh-Hant-TW", "zh-Hant-TW"},
	} {
		got, err := accounts.NormalizeLocale(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("NormalizeLocale(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"english", "d", "und", "12", "de--AT", "<script>", strings.Repeat("a", 40), "de;q=1"} {
		_, err := accounts.NormalizeLocale(bad)
		if !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("NormalizeLocale(%q) = %v, want VALIDATION_ERROR", bad, err)
		}
	}
}

// A signup's language decides its account's locale and so the language of
// its verification email.
func TestSignupLocale(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		f := newJobFixture(t, url)
		for i, tc := range []struct {
			lang       accounts.Language
			wantLocale string // stored
			wantEmail  string // the templates used
		}{
			{accounts.Language{}, "", "en"},
			{accounts.Language{Locale: "de-AT"}, "de-AT", "de"},
			{accounts.Language{Locale: "fr", Accepted: []string{"de"}}, "fr", "en"}, // the argument wins; French emails fall back to English
			{accounts.Language{Accepted: []string{"fr", "de", "en"}}, "de", "de"},   // the first accepted language that is shipped
			{accounts.Language{Accepted: []string{"ja", "fr"}}, "ja", "en"},         // none shipped: the first, for when it is
		} {
			email := "locale" + string(rune('a'+i)) + "@example.com"
			queued := f.clk.Now()
			res, err := f.svc.Signup(context.Background(), email, "Secret123", "", tc.lang)
			if err != nil {
				t.Fatalf("%+v: %v", tc.lang, err)
			}
			if res.Account.Locale != tc.wantLocale {
				t.Errorf("%+v: locale %q, want %q", tc.lang, res.Account.Locale, tc.wantLocale)
			}
			f.work(t, res.Account, queued)
			msgs := f.mailer.messages()
			if m := msgs[len(msgs)-1]; m.To != email || m.Locale != tc.wantEmail {
				t.Errorf("%+v: email to %s in %q, want %s in %q", tc.lang, m.To, m.Locale, email, tc.wantEmail)
			}
		}

		_, err := f.svc.Signup(context.Background(), "badlocale@example.com", "Secret123", "", accounts.Language{Locale: "klingon!"})
		if !apperr.Is(err, apperr.ValidationError) {
			t.Fatalf("signup with a bad locale: %v, want VALIDATION_ERROR", err)
		}
		f.expectEmails(t, "a refused signup", "badlocale@example.com", 0)
	})
}

// FuzzNormalizeLocale: any input is either a canonical tag that
// normalizes to itself, "" for a blank one, or VALIDATION_ERROR naming
// locale; never a panic.
func FuzzNormalizeLocale(f *testing.F) {
	for _, s := range []string{"", "de", "pt_br", "zh-Hant-TW", "en-GB-oxendict", "und", "x-private", "de--AT", "sh", "i-klingon", "\x00", strings.Repeat("a-", 20)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		got, err := accounts.NormalizeLocale(in)
		if err != nil {
			if e := apperr.As(err); e.Code != apperr.ValidationError || e.Details["field"] != "locale" {
				t.Fatalf("NormalizeLocale(%q): %v, want VALIDATION_ERROR naming locale", in, err)
			}
			return
		}
		if got == "" {
			if strings.TrimSpace(in) != "" {
				t.Fatalf("NormalizeLocale(%q) = \"\" for a non-blank input", in)
			}
			return
		}
		again, err := accounts.NormalizeLocale(got)
		if err != nil || again != got {
			t.Fatalf("NormalizeLocale(%q) = %q, which normalizes to %q, %v", in, got, again, err)
		}
	})
}
