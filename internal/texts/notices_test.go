package texts_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/texts"
)

// The notice names are the subscription package's.
func TestNoticeNamesMatchTheEvents(t *testing.T) {
	want := []string{subscriptions.EventPaymentFailed, subscriptions.EventExpired, subscriptions.EventRefunded, subscriptions.NoticeTrialEnding}
	got := texts.Notices()
	if len(got) != len(want) {
		t.Fatalf("Notices() = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Notices()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}

func TestEveryNoticeHasTextInEveryLocale(t *testing.T) {
	v := texts.NoticeVars{Product: "Acme VPN", Plan: "premium", Date: time.Date(2030, 1, 2, 10, 0, 0, 0, time.UTC)}
	dates := map[string]string{"en": "January 2, 2030", "de": "02.01.2030"}
	for _, n := range texts.Notices() {
		seen := map[string]string{}
		for _, loc := range texts.NoticeLocales() {
			title, body, ok := texts.Notice(n, loc, v)
			if !ok || title == "" || body == "" {
				t.Fatalf("%s/%s: title %q, body %q, ok %v", loc, n, title, body, ok)
			}
			for _, part := range []string{title, body} {
				if strings.Contains(part, "{") || strings.Contains(part, "Herald") {
					t.Errorf("%s/%s: %q keeps a placeholder or names Herald", loc, n, part)
				}
			}
			if !strings.Contains(title, "Acme VPN") || !strings.Contains(body, "premium") {
				t.Errorf("%s/%s: %q / %q lacks the product or the plan", loc, n, title, body)
			}
			if n != texts.NoticeRefunded && !strings.Contains(body, dates[loc]) {
				t.Errorf("%s/%s: body %q lacks the date %s", loc, n, body, dates[loc])
			}
			if other, dup := seen[title]; dup {
				t.Errorf("%s and %s say the same %q", other, loc, title)
			}
			seen[title] = loc
			// Without a date, no zero year.
			_, undated, _ := texts.Notice(n, loc, texts.NoticeVars{Product: "Acme VPN", Plan: "premium"})
			if strings.Contains(undated, "0001") || strings.Contains(undated, "{") || strings.Contains(undated, "  ") {
				t.Errorf("%s/%s undated: %q", loc, n, undated)
			}
		}
	}
}

func TestNoticeLocaleFallback(t *testing.T) {
	for locale, want := range map[string]string{"": "Your", "en-GB": "Your", "de-AT": "Ihr", "de": "Ihr", "fr": "Your", "not a tag": "Your"} {
		title, _, ok := texts.Notice(texts.NoticeExpired, locale, texts.NoticeVars{Product: "P", Plan: "x"})
		if !ok || !strings.HasPrefix(title, want) {
			t.Errorf("locale %q: title %q, want it to start with %q", locale, title, want)
		}
	}
	if _, _, ok := texts.Notice("subscription.renewed", "en", texts.NoticeVars{}); ok {
		t.Error("a notice without texts answers ok")
	}
}
