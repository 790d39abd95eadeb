package accounts

import (
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
	"golang.org/x/text/language"
)

// MaxLocaleLen bounds a locale argument (BCP 47 tags in use are far
// shorter; the bound keeps parsing cheap).
const MaxLocaleLen = 35

// Language is what a signup says about the user's language: the locale
// the client asked for, else the languages it accepts (the doors parse
// Accept-Language; best first, each a BCP 47 tag).
type Language struct {
	Locale   string
	Accepted []string
}

// NormalizeLocale returns locale as a canonical BCP 47 tag ("de-AT" for
// "de_at"), "" for an empty one, or VALIDATION_ERROR (400) naming the
// field.
func NormalizeLocale(locale string) (string, error) {
	locale = strings.TrimSpace(locale)
	if locale == "" {
		return "", nil
	}
	invalid := func() error {
		return apperr.Newf(apperr.ValidationError, "The locale must be a language tag such as en, de or pt-BR.").
			With("field", "locale").With("constraint", "a BCP 47 language tag such as en, de or pt-BR").With("received", "malformed")
	}
	if len(locale) > MaxLocaleLen {
		return "", invalid()
	}
	tag, err := language.Parse(strings.ReplaceAll(locale, "_", "-"))
	if err != nil || tag == language.Und {
		return "", invalid()
	}
	return tag.String(), nil
}

// chooseLocale is the locale a new account keeps: the one asked for, else
// the accepted language the emails are written in (de for "fr, de;q=0.8"
// when German is shipped and French is not), else the first accepted,
// whose emails then fall back to English until its templates exist.
func (s *Service) chooseLocale(l Language) (string, error) {
	if strings.TrimSpace(l.Locale) != "" {
		return NormalizeLocale(l.Locale)
	}
	if loc, ok := s.emails.Match(l.Accepted...); ok {
		return loc, nil
	}
	for _, a := range l.Accepted {
		if loc, err := NormalizeLocale(a); err == nil && loc != "" {
			return loc, nil
		}
	}
	return "", nil
}
