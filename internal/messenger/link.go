package messenger

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
)

// LinkTokenTTL is how long a messengerLinkUrl token can be used.
const LinkTokenTTL = 15 * time.Minute

// linkTokenPrefix marks a /start payload as a link token, so other deep-link
// payloads (campaign tags) keep being stored as they are.
const linkTokenPrefix = "link-"

// IsLinkToken reports whether a /start payload is shaped as a link token:
// the prefix and 43 characters of unpadded base64url (Telegram's start
// parameter allows A-Z a-z 0-9 _ - and at most 64 characters).
func IsLinkToken(payload string) bool {
	rest, ok := strings.CutPrefix(payload, linkTokenPrefix)
	return ok && len(rest) == 43 && ValidSecret(rest)
}

func hashLinkToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// LinkURL is a messengerLinkUrl answer.
type LinkURL struct {
	URL       string
	ExpiresAt time.Time
}

// LinkURL creates a one-time token for userID and returns the bot's deep
// link carrying it, https://t.me/<bot>?start=<token>, valid LinkTokenTTL.
// Only the token's hash is stored. MESSENGER_NOT_CONNECTED without a
// working bot (its username comes from getMe).
func (s *Service) LinkURL(ctx context.Context, userID string) (LinkURL, error) {
	if s.bot == nil {
		return LinkURL{}, apperr.Newf(apperr.MessengerNotConnected, "The messenger bot is not connected: no bot token is configured.").WithRetryAfter(notConnectedRetryAfter)
	}
	info := s.botInfo(ctx)
	if !info.connected || info.username == "" {
		return LinkURL{}, apperr.Newf(apperr.MessengerNotConnected, "The messenger bot is not connected: Telegram did not confirm the bot.").WithRetryAfter(notConnectedRetryAfter)
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return LinkURL{}, err
	}
	token := linkTokenPrefix + base64.RawURLEncoding.EncodeToString(raw)
	expires := s.now().Add(LinkTokenTTL)
	if err := s.store.CreateTelegramLinkToken(ctx, userID, hashLinkToken(token), expires); err != nil {
		return LinkURL{}, err
	}
	u := url.URL{Scheme: "https", Host: "t.me", Path: "/" + info.username, RawQuery: "start=" + token}
	return LinkURL{URL: u.String(), ExpiresAt: expires}, nil
}

// Unlink removes the link between userID and their chat, which stays
// subscribed. False when there was none (not an error).
func (s *Service) Unlink(ctx context.Context, userID string) (bool, error) {
	return s.store.UnlinkTelegramChat(ctx, userID)
}

// LinkedChat returns the subscribed chat linked to userID; false when the
// user linked none or the chat is not subscribed (blocked).
func (s *Service) LinkedChat(ctx context.Context, userID string) (Subscriber, bool, error) {
	sub, found, err := s.ChatOf(ctx, userID)
	return sub, found && sub.Status == Subscribed, err
}

// ChatOf returns the chat linked to userID, whatever its status; false
// when the user linked none.
func (s *Service) ChatOf(ctx context.Context, userID string) (Subscriber, bool, error) {
	sub, err := s.store.LinkedTelegramChat(ctx, userID)
	if errors.Is(err, storage.ErrNotFound) {
		return Subscriber{}, false, nil
	}
	if err != nil {
		return Subscriber{}, false, err
	}
	return sub, true, nil
}

// ChatsOf is ChatOf for many users at once (a page of them), by user id:
// a user who linked no chat has no entry.
func (s *Service) ChatsOf(ctx context.Context, userIDs []string) (map[string]Subscriber, error) {
	return s.store.LinkedTelegramChats(ctx, userIDs)
}

// SendToLinkedChat sends text to the subscribed chat linked to userID.
// found is false when there is no such chat (nothing is sent); err is
// Send's, CHAT_BLOCKED when the user blocked the bot.
func (s *Service) SendToLinkedChat(ctx context.Context, userID, text string) (chatID string, found bool, err error) {
	sub, ok, err := s.LinkedChat(ctx, userID)
	if err != nil || !ok {
		return "", false, err
	}
	_, err = s.Send(ctx, sub.ChatID, text, SendOptions{})
	return sub.ChatID, true, err
}
