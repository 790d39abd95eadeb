package mail_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
)

// noticeWords are words each notice must say in each shipped locale, so a
// locale left in English shows.
var noticeWords = map[string]map[string][]string{
	"en": {
		mail.EmailPaymentFailed: {"payment failed", "Update", "January 2, 2030"},
		mail.EmailExpired:       {"expired", "Renew", "January 2, 2030"},
		mail.EmailRefunded:      {"refunded", "access has ended"},
		mail.EmailTrialEnding:   {"trial", "ends", "January 2, 2030"},
	},
	"de": {
		mail.EmailPaymentFailed: {"Zahlung", "fehlgeschlagen", "02.01.2030"},
		mail.EmailExpired:       {"abgelaufen", "erlängern", "02.01.2030"},
		mail.EmailRefunded:      {"erstattet", "beendet"},
		mail.EmailTrialEnding:   {"Testzeitraum", "endet", "02.01.2030"},
	},
}

func TestEveryNoticeRendersInEveryLocale(t *testing.T) {
	brand := mail.Brand{Product: "Acme VPN", LogoURL: "https://cdn.acme.test/logo.png", SupportEmail: "help@acme.test"}
	tpl, err := mail.LoadTemplates("", brand)
	if err != nil {
		t.Fatal(err)
	}
	const renew = "https://apps.apple.com/account/subscriptions?x=1&y=2"
	v := mail.Vars{Plan: "premium", RenewURL: renew, Date: time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)}
	for _, email := range mail.Notices() {
		subjects := map[string]string{}
		for _, loc := range tpl.Locales() {
			t.Run(loc+"/"+email, func(t *testing.T) {
				m, err := tpl.Render(email, loc, "kim@example.com", v)
				if err != nil {
					t.Fatal(err)
				}
				if m.To != "kim@example.com" || m.Locale != loc || m.Code != "" {
					t.Errorf("To, Locale, Code = %q, %q, %q", m.To, m.Locale, m.Code)
				}
				if !strings.Contains(m.Subject, "Acme VPN") || strings.ContainsAny(m.Subject, "\r\n") || strings.Contains(m.Subject, "Herald") {
					t.Errorf("subject %q: want one line naming the product, not Herald", m.Subject)
				}
				subjects[loc] = m.Subject
				if !strings.Contains(m.Text, renew) {
					t.Errorf("the text part lacks the renew link:\n%s", m.Text)
				}
				// html/template escapes & in an attribute and in text.
				if !strings.Contains(m.HTML, `href="https://apps.apple.com/account/subscriptions?x=1&amp;y=2"`) {
					t.Errorf("the HTML part lacks the renew link:\n%s", m.HTML)
				}
				for _, part := range []string{m.Text, m.HTML} {
					for _, want := range append([]string{"Acme VPN", "help@acme.test", "premium"}, noticeWords[loc][email]...) {
						if !strings.Contains(part, want) {
							t.Errorf("a part lacks %q:\n%s", want, part)
						}
					}
					if strings.Contains(part, "Herald") || strings.Contains(part, "<no value>") || strings.Contains(part, "ZgotmplZ") {
						t.Errorf("a part names Herald or renders a missing or unsafe value:\n%s", part)
					}
				}
				checkHTML(t, m.HTML, loc, m.Subject, renew[:20], brand.LogoURL)
			})
		}
		if subjects["en"] == "" || subjects["en"] == subjects["de"] {
			t.Errorf("%s: the subjects of en and de are %q and %q, want two different ones", email, subjects["en"], subjects["de"])
		}
	}
}

// A notice without a date still reads well: no zero year.
func TestNoticeWithoutDate(t *testing.T) {
	tpl, err := mail.LoadTemplates("", mail.Brand{})
	if err != nil {
		t.Fatal(err)
	}
	for _, email := range mail.Notices() {
		for _, loc := range tpl.Locales() {
			m, err := tpl.Render(email, loc, "a@example.com", mail.Vars{Plan: "premium", RenewURL: "https://example.com/renew"})
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(m.Text, "0001") || strings.Contains(m.HTML, "0001") {
				t.Errorf("%s/%s shows the zero date:\n%s", loc, email, m.Text)
			}
			if !strings.Contains(m.Subject, mail.DefaultProduct) {
				t.Errorf("%s/%s subject %q lacks the default product name", loc, email, m.Subject)
			}
		}
	}
}
