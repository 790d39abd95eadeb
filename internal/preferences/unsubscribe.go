package preferences

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
)

// The unsubscribe link of a notification email. Its token is a link
// token (accounts.SignLinkToken, under the key of UnsubscribePurpose) of
// four fields: the account, the category, the channel (email) and the
// token's own random id; it expires UnsubscribeTTL after the email was
// written. It is single-use: its first use records the id (Store.
// UseUnsubscribeLink) in the same unit of work that turns the category's
// email off, and a second use finds it.

// UnsubscribePurpose names the MAC key of unsubscribe tokens
// (accounts.Service.LinkKey).
const UnsubscribePurpose = "notification-unsubscribe"

// UnsubscribeTTL is how long an unsubscribe link works.
const UnsubscribeTTL = 60 * 24 * time.Hour

// UnsubscribeLinks signs and checks unsubscribe tokens: Key is
// accounts.Service.LinkKey(UnsubscribePurpose); Now is the clock
// (time.Now when nil).
type UnsubscribeLinks struct {
	Key []byte
	Now func() time.Time
}

func (l UnsubscribeLinks) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

// Sign returns the token that turns category's channel off for
// accountID, until UnsubscribeTTL from now.
func (l UnsubscribeLinks) Sign(accountID, category, channel string) string {
	return accounts.SignLinkToken(l.Key, l.now().Add(UnsubscribeTTL), accountID, category, channel, rand.Text())
}

// Unsubscribe is what an unsubscribe token names.
type Unsubscribe struct {
	AccountID, Category, Channel string
	// TokenID is the token's own id, recorded at its first use.
	TokenID string
}

// Parse checks a token's MAC and expiry and returns what it names;
// UNSUBSCRIBE_LINK_INVALID (details.reason format, signature or expired)
// for anything else. It does not say whether the token was used.
func (l UnsubscribeLinks) Parse(token string) (Unsubscribe, error) {
	f, err := accounts.ParseLinkToken(l.Key, token, l.now(), 4)
	if err != nil {
		reason := "format"
		if ae := apperr.As(err); ae != nil {
			if c, ok := ae.Details["constraint"].(string); ok {
				reason = c
			}
		}
		return Unsubscribe{}, invalidLink(reason)
	}
	if !slices.Contains(Channels, f[2]) {
		return Unsubscribe{}, invalidLink("format")
	}
	return Unsubscribe{AccountID: f[0], Category: f[1], Channel: f[2], TokenID: f[3]}, nil
}

func invalidLink(reason string) error {
	msg := map[string]string{
		"format":    "The unsubscribe link is damaged: open it from the email again, or turn the emails off in the app's notification settings.",
		"signature": "The unsubscribe link is not this server's, or was changed: open it from the email again, or turn the emails off in the app's notification settings.",
		"expired":   "The unsubscribe link has expired (links work for 60 days): turn the emails off in the app's notification settings, or use the link of a newer email.",
		"category":  "The unsubscribe link names a category of notifications that cannot be turned off, or no longer exists.",
		"account":   "The unsubscribe link's account no longer exists.",
	}[reason]
	if msg == "" {
		msg = apperr.Lookup(apperr.UnsubscribeLinkInvalid).Message
	}
	return apperr.Newf(apperr.UnsubscribeLinkInvalid, "%s", msg).With("reason", reason)
}

// SetUnsubscribeLinks gives the service the key of unsubscribe tokens;
// without it, Unsubscribe refuses every token.
func (s *Service) SetUnsubscribeLinks(l UnsubscribeLinks) { s.links = l }

// UnsubscribeLinks are the service's signer and checker of unsubscribe
// tokens.
func (s *Service) UnsubscribeLinks() UnsubscribeLinks { return s.links }

// Unsubscribe turns off the category's channel that token names, for its
// account, and records the token's use, in one unit of work; it answers
// what was turned off. UNSUBSCRIBE_LINK_INVALID for a token that is
// damaged, not the server's, expired, names a category the deployment no
// longer has or cannot turn off (reason category), or an account that no
// longer exists (reason account); UNSUBSCRIBE_LINK_USED for a token used
// already.
func (s *Service) Unsubscribe(ctx context.Context, token string) (Unsubscribe, error) {
	if len(s.links.Key) == 0 {
		return Unsubscribe{}, invalidLink("signature")
	}
	u, err := s.links.Parse(token)
	if err != nil {
		return Unsubscribe{}, err
	}
	if k, ok := s.catalogue.Find(u.Category); !ok || k.Critical {
		return Unsubscribe{}, invalidLink("category")
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.exists(ctx, u.AccountID); err != nil {
			if apperr.Is(err, apperr.UserNotFound) {
				return invalidLink("account")
			}
			return err
		}
		first, err := s.store.UseUnsubscribeLink(ctx, u.TokenID, u.AccountID)
		if err != nil {
			return err
		}
		if !first {
			return errUsed
		}
		return s.store.SetNotificationSettings(ctx, u.AccountID, []Setting{{Category: u.Category, Channel: u.Channel, Enabled: false}})
	})
	if errors.Is(err, errUsed) {
		return Unsubscribe{}, apperr.New(apperr.UnsubscribeLinkUsed)
	}
	return u, err
}

var errUsed = errors.New("preferences: unsubscribe link used already")
