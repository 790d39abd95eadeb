// Package messenger is Herald's Telegram bot: its connection status, the
// chats that subscribed to it with /start, and messages sent to a chat by an
// operator. It owns the subscriber rules and the Store they are kept in;
// internal/telegram is the Bot API client it speaks through.
package messenger

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// SubscriberStatus is where a chat stands with the bot.
type SubscriberStatus string

const (
	// Subscribed: the chat sent /start (or unblocked the bot since).
	Subscribed SubscriberStatus = "subscribed"
	// Unsubscribed: the chat sent /stop.
	Unsubscribed SubscriberStatus = "unsubscribed"
	// Blocked: the user blocked the bot (or a send answered 403) while
	// subscribed; unblocking restores the subscription.
	Blocked SubscriberStatus = "blocked"
)

// Subscriber is a chat that started the bot.
type Subscriber struct {
	ChatID    string // Telegram's chat id, as a decimal string
	Username  string // without the @; "" when the user has none
	FirstName string // the user's first name, or a group's title
	// StartPayload is the deep-link parameter of the latest /start that
	// carried one (t.me/bot?start=PAYLOAD), "" if none did.
	StartPayload string
	// SubscribedSince is when the current subscription began: the /start
	// that moved the chat to Subscribed. Kept across /stop and blocking.
	SubscribedSince time.Time
	Status          SubscriberStatus
	UpdatedAt       time.Time
	// UserID is the account the chat is linked to, "" when none.
	UserID string
}

// ChangeKind is what an update does to a chat's subscription.
type ChangeKind string

const (
	Subscribe   ChangeKind = "subscribe"   // /start
	Unsubscribe ChangeKind = "unsubscribe" // /stop
	Block       ChangeKind = "block"       // my_chat_member kicked/left, or a send answered 403
	Unblock     ChangeKind = "unblock"     // my_chat_member member
)

// Change is one subscription event for a chat.
type Change struct {
	Kind      ChangeKind
	ChatID    int64
	Username  string
	FirstName string
	Payload   string // /start's deep-link payload
	// LinkTokenHash is the hash of a link token carried by /start; the
	// store consumes the token and sets LinkUserID to its account.
	LinkTokenHash string
	// LinkUserID links the chat to this account (Subscribe only).
	LinkUserID string
}

// Apply is the subscription rule: given the chat's row before the change
// (nil when the chat is unknown) it returns the row to store, or nil when
// the change leaves nothing to write.
//
//   - Subscribe makes any chat Subscribed; SubscribedSince starts now unless
//     it already was subscribed. Names are refreshed and a non-empty payload
//     replaces the stored one.
//     A LinkUserID links the chat to that account.
//   - Unsubscribe moves a known, not yet unsubscribed chat to Unsubscribed
//     and unlinks it.
//   - Block moves a Subscribed chat to Blocked; a chat that already left
//     with /stop stays Unsubscribed, so unblocking will not re-subscribe it.
//   - Unblock moves a Blocked chat back to Subscribed, keeping its
//     SubscribedSince.
func (c Change) Apply(prev *Subscriber, now time.Time) *Subscriber {
	var next Subscriber
	if prev != nil {
		next = *prev
	}
	switch c.Kind {
	case Subscribe:
		if prev == nil || prev.Status != Subscribed {
			next.SubscribedSince = now
		}
		next.Status = Subscribed
		if c.Payload != "" {
			next.StartPayload = c.Payload
		}
		if c.LinkUserID != "" {
			next.UserID = c.LinkUserID
		}
	case Unsubscribe:
		if prev == nil || prev.Status == Unsubscribed {
			return nil
		}
		next.Status = Unsubscribed
		next.UserID = ""
	case Block:
		if prev == nil || prev.Status != Subscribed {
			return nil
		}
		next.Status = Blocked
	case Unblock:
		if prev == nil || prev.Status != Blocked {
			return nil
		}
		next.Status = Subscribed
	default:
		return nil
	}
	next.ChatID = formatChatID(c.ChatID)
	if c.Username != "" {
		next.Username = c.Username
	}
	if c.FirstName != "" {
		next.FirstName = c.FirstName
	}
	next.UpdatedAt = now
	return &next
}

// Outcome is what the store did with a change.
type Outcome struct {
	// Duplicate: the update had been processed before; nothing changed.
	Duplicate bool
	// Changed: a row was written.
	Changed bool
	// Before and After are the chat's row around the change; nil when the
	// chat was (or stays) unknown. After equals Before when unchanged.
	Before, After *Subscriber
	// Link is what became of a link token the change carried ("" when it
	// carried none).
	Link LinkResult
}

// LinkResult is what a /start with a link token did.
type LinkResult string

const (
	Linked       LinkResult = "linked"  // the chat is now linked to the token's account
	LinkExpired  LinkResult = "expired" // the token is past its 15 minutes
	LinkUsed     LinkResult = "used"    // the token linked a chat before
	LinkNotFound LinkResult = "unknown" // no such token (or pruned)
)

// Position is where a page of subscribers starts: after this row in the
// listing order (SubscribedSince descending, then ChatID descending).
type Position struct {
	Since  time.Time
	ChatID int64
}

// UpdateRetention is how long processed update ids are remembered for
// de-duplication. Telegram keeps an undelivered update for at most 24
// hours, so a replay older than this cannot happen.
const UpdateRetention = 48 * time.Hour

// LinkTokenRetention is how long an expired link token is kept, so that
// the bot can still say "expired" rather than "unknown" to someone who
// opens an old link.
const LinkTokenRetention = 24 * time.Hour

// Store keeps subscribers, processed updates and leases. sqlstore
// implements it on SQLite and PostgreSQL; errors are the storage package's.
type Store interface {
	// Secret returns the named server secret, creating it with generate on
	// first use; the first replica to store one wins.
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)

	// The unit of work a subscriber's change runs in (ApplyUpdate,
	// ApplyChange), with its event.
	storage.Transactor
	Emit(ctx context.Context, p webhooks.Payload) error

	// ApplyTelegramUpdate records updateID as processed and, in the same
	// transaction, applies change (nil: only record it) with Change.Apply.
	// An update id already recorded gives Outcome{Duplicate: true} and
	// changes nothing. Ids older than UpdateRetention may be forgotten
	// (sqlstore prunes them in its periodic housekeeping).
	ApplyTelegramUpdate(ctx context.Context, updateID int64, change *Change) (Outcome, error)
	// ApplySubscriberChange applies a change that comes from no update (a
	// send that answered 403).
	ApplySubscriberChange(ctx context.Context, change Change) (Outcome, error)
	// LastTelegramUpdateID is the highest update id processed at or after
	// since; false when there is none.
	LastTelegramUpdateID(ctx context.Context, since time.Time) (int64, bool, error)

	// CountTelegramSubscribers counts chats whose status is Subscribed.
	CountTelegramSubscribers(ctx context.Context) (int, error)
	// ListTelegramSubscribers returns up to limit chats of the status (""
	// every status), newest subscription first, starting after the given
	// position (nil: from the start).
	ListTelegramSubscribers(ctx context.Context, status SubscriberStatus, after *Position, limit int) ([]Subscriber, error)

	// CreateTelegramLinkToken stores the hash of a one-time link token for
	// userID, valid until expiresAt.
	CreateTelegramLinkToken(ctx context.Context, userID, tokenHash string, expiresAt time.Time) error
	// UnlinkTelegramChat removes the link of userID's chat; false when it
	// had none.
	UnlinkTelegramChat(ctx context.Context, userID string) (bool, error)
	// LinkedTelegramChat returns the chat linked to userID; storage's
	// ErrNotFound when there is none.
	LinkedTelegramChat(ctx context.Context, userID string) (Subscriber, error)
	// LinkedTelegramChats is LinkedTelegramChat for many users at once, by
	// user id; a user without a linked chat has no entry.
	LinkedTelegramChats(ctx context.Context, userIDs []string) (map[string]Subscriber, error)

	// AcquireLease takes or renews the named lease for holder until the
	// given time. It fails (false) while another holder's lease has not
	// expired.
	AcquireLease(ctx context.Context, name, holder string, until time.Time) (bool, error)
	// ReleaseLease gives the lease up if holder holds it.
	ReleaseLease(ctx context.Context, name, holder string) error
}
