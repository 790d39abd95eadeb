package texts

import (
	"strings"
	"time"

	"golang.org/x/text/language"
)

// The notices of an account's subscription, outside email: the title and
// body of the push, and the Telegram message. Their names are the
// subscription events (subscriptions.EventPaymentFailed …) and
// subscriptions.NoticeTrialEnding; texts does not import subscriptions, so
// they are spelt here and a test checks they match.
const (
	NoticePaymentFailed = "subscription.payment_failed"
	NoticeExpired       = "subscription.expired"
	NoticeRefunded      = "subscription.refunded"
	NoticeTrialEnding   = "trial_ending"
)

// NoticeVars are what a notice says besides its kind.
type NoticeVars struct {
	Product string    // the product's name (HERALD_PRODUCT_NAME)
	Plan    string    // the entitlement's plan
	Date    time.Time // when access ends or ended; zero if unknown
}

// noticeText is one notice in one language: printf-free templates with
// {product}, {plan} and {date} (the body's date clause, dated or not).
type noticeText struct {
	title, body, dated, undated string
}

// noticeLocales are the languages of the notices, the default first.
var noticeLocales = []string{"en", "de"}

// noticeDate is each language's date layout.
var noticeDate = map[string]string{"en": "January 2, 2006", "de": "02.01.2006"}

var noticeTexts = map[string]map[string]noticeText{
	"en": {
		NoticePaymentFailed: {"Your {product} payment failed", "We could not renew your {product} subscription ({plan}).{date} Update your payment method to keep {product}.", " Your access continues until {date} while the payment is retried.", ""},
		NoticeExpired:       {"Your {product} subscription has expired", "Your {product} subscription ({plan}) has expired{date}. Renew it to keep using {product}.", " on {date}", ""},
		NoticeRefunded:      {"Your {product} purchase was refunded", "Your {product} subscription ({plan}) was refunded, so its access has ended.", "", ""},
		NoticeTrialEnding:   {"Your {product} trial ends soon", "Your free {product} trial ({plan}) ends{date}. Subscribe to keep using {product}.", " on {date}", " in a few days"},
	},
	"de": {
		NoticePaymentFailed: {"Ihre Zahlung für {product} ist fehlgeschlagen", "Wir konnten Ihr Abonnement für {product} ({plan}) nicht verlängern.{date} Aktualisieren Sie Ihre Zahlungsmethode, um {product} weiter zu nutzen.", " Ihr Zugang bleibt bis zum {date} bestehen, während die Zahlung erneut versucht wird.", ""},
		NoticeExpired:       {"Ihr Abonnement für {product} ist abgelaufen", "Ihr Abonnement für {product} ({plan}) ist{date} abgelaufen. Verlängern Sie es, um {product} weiter zu nutzen.", " am {date}", ""},
		NoticeRefunded:      {"Ihr Kauf von {product} wurde erstattet", "Ihr Abonnement für {product} ({plan}) wurde erstattet; Ihr Zugang ist damit beendet.", "", ""},
		NoticeTrialEnding:   {"Ihr Testzeitraum für {product} endet bald", "Ihr kostenloser Testzeitraum für {product} ({plan}) endet{date}. Schließen Sie ein Abonnement ab, um {product} weiter zu nutzen.", " am {date}", " in wenigen Tagen"},
	},
}

// Notices lists the notices that have texts.
func Notices() []string {
	return []string{NoticePaymentFailed, NoticeExpired, NoticeRefunded, NoticeTrialEnding}
}

// NoticeLocales lists the languages notices are written in, the default
// first.
func NoticeLocales() []string { return append([]string(nil), noticeLocales...) }

// Notice words notice in the language that best fits locale (an
// account's BCP 47 tag; "" or an unknown language is English): a title
// and a body, plain text without Markdown. ok is false for a notice that
// has no texts.
func Notice(notice, locale string, v NoticeVars) (title, body string, ok bool) {
	loc := noticeLocale(locale)
	t, ok := noticeTexts[loc][notice]
	if !ok {
		return "", "", false
	}
	date := t.undated
	if !v.Date.IsZero() && t.dated != "" {
		date = strings.ReplaceAll(t.dated, "{date}", v.Date.Format(noticeDate[loc]))
	}
	r := strings.NewReplacer("{product}", v.Product, "{plan}", v.Plan)
	body = strings.Replace(t.body, "{date}", date, 1)
	return r.Replace(t.title), r.Replace(body), true
}

// noticeLocale is the notice language for an account's locale: its base
// language when notices are written in it, else the default.
func noticeLocale(locale string) string {
	if tag, err := language.Parse(locale); err == nil {
		base, _ := tag.Base()
		if _, ok := noticeTexts[base.String()]; ok {
			return base.String()
		}
	}
	return noticeLocales[0]
}
