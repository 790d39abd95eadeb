package notifications

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
)

// Channels of sendNotificationToUser.
const (
	ChannelPush = "push"
	// ChannelTelegram is the Telegram chat the user linked to the account.
	ChannelTelegram = "telegram"
	// ChannelInbox is the user's in-app inbox: the outcome of an item kept
	// (UserSendOptions.Inbox), platform and channel "inbox".
	ChannelInbox = preferences.ChannelInbox
)

// InboxKeeper keeps what a send asks to keep in the in-app inbox
// (inbox.Service implements it).
type InboxKeeper interface {
	// Keep writes it to its account's inbox and tells the account's live
	// subscribers.
	Keep(ctx context.Context, it inbox.Item) (inbox.Item, error)
	// KeepBroadcast writes broadcast jobID's items, once however often
	// it is called.
	KeepBroadcast(ctx context.Context, jobID string) (int64, error)
}

// ChatSender sends a text to the Telegram chat linked to a user
// (messenger.Service implements it).
type ChatSender interface {
	// SendToLinkedChat sends text to userID's linked, subscribed chat;
	// found is false when there is none (nothing is sent). err is a
	// catalogue error, CHAT_BLOCKED when the user blocked the bot.
	SendToLinkedChat(ctx context.Context, userID, text string) (chatID string, found bool, err error)
}

// Statuses of a send to a user: every device got it, some did, none did,
// or the user has no device to send to (not an error).
const (
	UserSent         = "sent"
	UserPartial      = "partial"
	UserFailed       = "failed"
	UserNoRecipients = "no_recipients"
)

// Outcomes of one device in a send to a user.
const (
	OutcomeSent         = "sent"
	OutcomeInvalidToken = "invalid_token"
	OutcomeFailed       = "failed"
	// OutcomeBlocked: the linked Telegram chat blocked the bot.
	OutcomeBlocked = "blocked"
)

// DeviceOutcome is how the send to one device, or to the linked Telegram
// chat, went.
type DeviceOutcome struct {
	DeviceID string `json:"deviceId,omitempty"` // "" for the chat
	// ChatID is the linked chat's id (channel telegram), "" for a device.
	ChatID   string `json:"chatId,omitempty"`
	Platform string `json:"platform"` // android, ios, or telegram for the chat
	Channel  string `json:"channel"`
	// Status is OutcomeSent, OutcomeInvalidToken or OutcomeFailed for a
	// device; OutcomeSent, OutcomeFailed or OutcomeBlocked for the chat.
	Status string `json:"status"`
	// Error is the catalogue code of a failed or invalid_token outcome.
	Error string `json:"error,omitempty"`
}

// UserSendResult is the answer of SendToUser. It is stored as JSON by the
// idempotency layer, hence the tags.
type UserSendResult struct {
	UserID   string          `json:"userId"`
	Status   string          `json:"status"`
	Message  string          `json:"message"`
	Outcomes []DeviceOutcome `json:"outcomes"`
	// Skipped counts the devices and the chat not sent to, per reason.
	Skipped SkipCounts `json:"skipped"`
}

// SkipCounts counts the recipients of a send skipped, per reason.
type SkipCounts struct {
	// OptedOut: the user turned the send's category off on that channel.
	OptedOut int `json:"optedOut"`
}

// UserSendOptions are sendNotificationToUser's optional arguments.
type UserSendOptions struct {
	// Channels are ChannelPush (the default) and ChannelTelegram.
	Channels []string
	// Category is the notification category ("" is
	// preferences.DefaultCategory).
	Category string
	// Inbox also keeps the notification in the user's in-app inbox, when
	// the user allows its category on the inbox channel: one more
	// outcome, channel "inbox", status "sent".
	Inbox bool
}

// DeviceChannel is the preference channel of a device of platform: a
// browser's push subscription is web push, any other device push.
func DeviceChannel(platform string) string {
	if platform == PlatformWeb {
		return preferences.ChannelWebPush
	}
	return preferences.ChannelPush
}

// PlatformWeb is a browser's push subscription's platform.
const PlatformWeb = "web"

// SendToUser pushes n now to every active device of the user that has a
// valid push token, at once, and answers one outcome per such device.
// channels defaults to push; with telegram, the subject and content also
// go to the user's linked, subscribed Telegram chat (one more outcome).
// With opts.Inbox the notification is kept in the user's inbox first (one
// more outcome, channel inbox, status sent), so a user with no device
// still has it: such a send is status sent, not no_recipients.
// Another channel is INVALID_INPUT (field channels). USER_NOT_FOUND for an
// unknown user; a user without such a device or chat, or whose account is
// disabled, is status no_recipients, not an error.
func (s *Service) SendToUser(ctx context.Context, userID string, n Notification, opts UserSendOptions) (UserSendResult, error) {
	if err := n.Validate(); err != nil {
		return UserSendResult{}, err
	}
	channels := opts.Channels
	if err := checkChannels(channels); err != nil {
		return UserSendResult{}, err
	}
	category, err := s.category(opts.Category)
	if err != nil {
		return UserSendResult{}, err
	}
	if _, err := s.store.AccountByID(ctx, userID); errors.Is(err, storage.ErrNotFound) {
		return UserSendResult{}, apperr.Newf(apperr.UserNotFound, "No user with the id %q.", userID)
	} else if err != nil {
		return UserSendResult{}, err
	}
	disabled, err := s.store.AccountDisabled(ctx, userID)
	if err != nil {
		return UserSendResult{}, err
	}
	if disabled {
		return UserSendResult{UserID: userID, Status: UserNoRecipients, Message: "The account is disabled; it gets no notifications.", Outcomes: []DeviceOutcome{}}, nil
	}
	settings, err := s.store.NotificationSettings(ctx, userID)
	if err != nil {
		return UserSendResult{}, err
	}
	allows := func(channel string) bool { return s.cfg.Categories.Allows(settings, category, channel) }
	var skipped SkipCounts
	push, telegram := channelSet(channels)
	var list []devices.Device
	if push {
		if list, err = s.store.ListDevices(ctx, userID); err != nil {
			return UserSendResult{}, err
		}
		list = slices.DeleteFunc(list, func(d devices.Device) bool {
			if d.PushTokenStatus != devices.TokenValid || d.PushToken == "" {
				return true
			}
			if !allows(DeviceChannel(d.Platform)) {
				skipped.OptedOut++
				return true
			}
			return false
		})
	}
	if telegram && !allows(preferences.ChannelTelegram) {
		// Whether a chat is linked is not asked: the user said no.
		telegram = false
		skipped.OptedOut++
	}
	var kept *DeviceOutcome
	if opts.Inbox {
		if !allows(preferences.ChannelInbox) {
			skipped.OptedOut++
		} else if s.cfg.Inbox != nil {
			// Kept before anything is sent: a store that cannot keep it
			// fails the send, which the caller may repeat.
			if _, err := s.cfg.Inbox.Keep(ctx, inbox.Item{AccountID: userID, Title: n.Subject, Body: n.Content, Data: n.Data, Category: category}); err != nil {
				return UserSendResult{}, err
			}
			kept = &DeviceOutcome{Platform: ChannelInbox, Channel: ChannelInbox, Status: OutcomeSent}
		}
	}
	res := UserSendResult{UserID: userID, Outcomes: make([]DeviceOutcome, len(list)), Skipped: skipped}
	var chat *DeviceOutcome
	var wg sync.WaitGroup
	if telegram && s.cfg.Chats != nil {
		wg.Go(func() {
			chatID, found, err := s.cfg.Chats.SendToLinkedChat(ctx, userID, chatText(n))
			if !found && err == nil {
				return
			}
			o := DeviceOutcome{ChatID: chatID, Platform: ChannelTelegram, Channel: ChannelTelegram, Status: OutcomeSent}
			if err != nil {
				o.Status, o.Error = OutcomeFailed, string(apperr.As(err).Code)
				if apperr.Is(err, apperr.ChatBlocked) {
					o.Status = OutcomeBlocked
				}
			}
			chat = &o
		})
	}
	for i, d := range list {
		wg.Go(func() {
			o := DeviceOutcome{DeviceID: d.ID, Platform: d.Platform, Channel: ChannelPush, Status: OutcomeSent}
			if err := s.deliver(ctx, d, n); err != nil {
				o.Status, o.Error = OutcomeFailed, string(apperr.As(err).Code)
				if apperr.Is(err, apperr.InvalidPushToken) {
					o.Status = OutcomeInvalidToken
				}
			}
			res.Outcomes[i] = o
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return UserSendResult{}, ctx.Err()
	}
	if chat != nil {
		res.Outcomes = append(res.Outcomes, *chat)
	}
	if kept != nil {
		res.Outcomes = append(res.Outcomes, *kept)
	}
	sent := 0
	for _, o := range res.Outcomes {
		if o.Status == OutcomeSent {
			sent++
		}
	}
	total, what := len(res.Outcomes), "devices"
	if telegram || kept != nil {
		what = "recipients"
	}
	switch {
	case total == 0 && skipped.OptedOut > 0:
		res.Status, res.Message = UserNoRecipients, fmt.Sprintf("The user turned %s notifications off on the channels asked; nothing was sent.", category)
	case total == 0 && telegram:
		res.Status, res.Message = UserNoRecipients, "The user has no device with a valid push token and no linked Telegram chat; nothing was sent."
	case total == 0:
		res.Status, res.Message = UserNoRecipients, "The user has no device with a valid push token; nothing was sent."
	case kept != nil && total == 1:
		res.Status, res.Message = UserSent, "Kept in the user's inbox; no other recipient on the channels asked."
	case sent == total:
		res.Status, res.Message = UserSent, fmt.Sprintf("Notification sent to %d of %d %s.", sent, total, what)
	case sent > 0:
		res.Status, res.Message = UserPartial, fmt.Sprintf("Notification sent to %d of %d %s.", sent, total, what)
	default:
		res.Status, res.Message = UserFailed, fmt.Sprintf("Notification sent to none of %d %s.", total, what)
	}
	return res, nil
}

// channelSet says which channels a send uses; none named is push alone.
func channelSet(channels []string) (push, telegram bool) {
	if len(channels) == 0 {
		return true, false
	}
	return slices.Contains(channels, ChannelPush), slices.Contains(channels, ChannelTelegram)
}

// chatText is a notification as a Telegram message: the subject, a blank
// line and the content.
func chatText(n Notification) string {
	return strings.TrimSpace(n.Subject + "\n\n" + n.Content)
}

func checkChannels(channels []string) error {
	for _, c := range channels {
		switch c {
		case ChannelPush, ChannelTelegram:
		default:
			return invalidInput("channels", fmt.Sprintf("Unknown channel %q; the channels are push and telegram.", c))
		}
	}
	return nil
}

// Idempotent forms of the sends, for the doors: each runs the send under
// idempotency.Do with its name and arguments as the request, so the same
// key and arguments answer the first answer through either door.

// SendToDeviceIdempotent is SendToDevice under the idempotency key k.
func (s *Service) SendToDeviceIdempotent(ctx context.Context, k idempotency.Key, deviceID string, n Notification) (SendResult, error) {
	return idempotency.Do(ctx, k, "sendNotificationByDeviceId", []any{deviceID, n}, func(ctx context.Context) (SendResult, error) {
		return s.SendToDevice(ctx, deviceID, n)
	})
}

// SendToUserIdempotent is SendToUser under the idempotency key k.
func (s *Service) SendToUserIdempotent(ctx context.Context, k idempotency.Key, userID string, n Notification, opts UserSendOptions) (UserSendResult, error) {
	return idempotency.Do(ctx, k, "sendNotificationToUser", []any{userID, n, opts}, func(ctx context.Context) (UserSendResult, error) {
		return s.SendToUser(ctx, userID, n, opts)
	})
}

// BroadcastIdempotent is Broadcast under the idempotency key k: a repeat
// answers the job as it was queued, and queues nothing.
func (s *Service) BroadcastIdempotent(ctx context.Context, k idempotency.Key, n Notification, opts BroadcastOptions) (Job, error) {
	return idempotency.Do(ctx, k, "sendNotificationToAll", []any{n, opts}, func(ctx context.Context) (Job, error) {
		return s.BroadcastWith(ctx, n, opts)
	})
}

// SendToToken pushes n now to a bare push token of platform, without a
// device record: an operator's test of a token. The answer is
// SendToDevice's; a dead token is INVALID_PUSH_TOKEN and marks nothing.
// VALIDATION_ERROR for an unknown platform or a malformed token.
func (s *Service) SendToToken(ctx context.Context, platform, token string, n Notification) (SendResult, error) {
	if err := n.Validate(); err != nil {
		return SendResult{}, err
	}
	if err := devices.ValidatePlatform(platform); err != nil {
		return SendResult{}, err
	}
	token, err := devices.NormalizePushToken(token)
	if err != nil {
		return SendResult{}, err
	}
	if err := s.deliver(ctx, devices.Device{Platform: platform, PushToken: token, PushTokenStatus: devices.TokenValid}, n); err != nil {
		return SendResult{}, err
	}
	return SendResult{Status: StatusSent, Message: fmt.Sprintf("Notification sent to the %s token.", platform)}, nil
}

// SendToTokenIdempotent is SendToToken under the idempotency key k.
func (s *Service) SendToTokenIdempotent(ctx context.Context, k idempotency.Key, platform, token string, n Notification) (SendResult, error) {
	return idempotency.Do(ctx, k, "sendNotificationByToken", []any{platform, token, n}, func(ctx context.Context) (SendResult, error) {
		return s.SendToToken(ctx, platform, token, n)
	})
}
