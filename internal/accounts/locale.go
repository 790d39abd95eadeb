package accounts

import (
	"context"
	"errors"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
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

// SetLocale sets the language of the account's emails, from the next one
// on, to locale, a BCP 47 tag kept canonical ("pt-BR" for "pt_br"). A tag
// of a language no templates are shipped for is kept, and its emails are
// English until they are. VALIDATION_ERROR naming locale for a malformed
// or empty tag; USER_NOT_FOUND when the account is unknown or deleted.
func (s *Service) SetLocale(ctx context.Context, id, locale string) error {
	tag, err := NormalizeLocale(locale)
	if err != nil {
		return err
	}
	if tag == "" {
		return apperr.Invalid("locale", "a BCP 47 language tag such as en, de or pt-BR", "empty")
	}
	err = s.store.SetLocale(ctx, id, tag)
	if errors.Is(err, storage.ErrNotFound) {
		return apperr.New(apperr.UserNotFound)
	}
	return err
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
