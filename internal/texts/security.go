package texts

import (
	"strings"
	"time"
)

// NewDeviceVars are what a new-device alert says, outside email.
type NewDeviceVars struct {
	Product   string    // the product's name (HERALD_PRODUCT_NAME)
	At        time.Time // when the sign-in happened
	IP        string    // the client's address
	UserAgent string    // the client's user agent ("" when none was sent)
}

// newDeviceTexts are the alert's title and body in each notice language,
// with {product}, {at}, {ip} and {device}.
var newDeviceTexts = map[string][2]string{
	"en": {"New sign-in to your {product} account", "A device your {product} account had not been used on signed in on {at} from {ip} ({device}). If this was not you, end that session and change your password."},
	"de": {"Neue Anmeldung bei Ihrem {product}-Konto", "Ein Gerät, das Ihr {product}-Konto bisher nicht verwendet hat, hat sich am {at} von {ip} ({device}) angemeldet. Wenn Sie das nicht waren, beenden Sie diese Sitzung und ändern Sie Ihr Passwort."},
}

// newDeviceUnknown is each language's word for a sign-in without a user
// agent, and newDeviceAt its time layout.
var (
	newDeviceUnknown = map[string]string{"en": "unknown device", "de": "unbekanntes Gerät"}
	newDeviceAt      = map[string]string{"en": "January 2, 2006 at 15:04 MST", "de": "02.01.2006 um 15:04 MST"}
)

// NewDevice words a new-device alert for push and Telegram in the
// language that best fits locale: a title and a body, plain text without
// Markdown.
func NewDevice(locale string, v NewDeviceVars) (title, body string) {
	loc := noticeLocale(locale)
	t := newDeviceTexts[loc]
	device := v.UserAgent
	if device == "" {
		device = newDeviceUnknown[loc]
	}
	r := strings.NewReplacer("{product}", v.Product, "{at}", v.At.UTC().Format(newDeviceAt[loc]), "{ip}", v.IP, "{device}", device)
	return r.Replace(t[0]), r.Replace(t[1])
}
