package inbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/storage"
)

// Store keeps the items. Every method but KeepBroadcast and Prune is
// scoped to one account: an item of another account is not found.
type Store interface {
	// KeepInboxItem writes it (its ID, account, title, body, data and
	// category set), kept now and expiring retention later, and answers
	// it as written.
	KeepInboxItem(ctx context.Context, it Item, retention time.Duration) (Item, error)
	// KeepBroadcastInbox writes broadcast jobID's item, with id itemID,
	// for every account its audience reaches that allows the job's
	// category on the inbox channel, once: written is false (and nothing
	// is written) when the job's items were written before. n is the
	// number of items written.
	KeepBroadcastInbox(ctx context.Context, jobID, itemID string, retention time.Duration) (n int64, written bool, err error)
	// InboxItems lists the account's unexpired items that f lists,
	// newest first: at most limit with ids below beforeID ("" for the
	// newest).
	InboxItems(ctx context.Context, accountID string, f Filter, beforeID string, limit int) ([]Item, error)
	// InboxCounts counts the account's unexpired, unarchived items.
	InboxCounts(ctx context.Context, accountID string) (Counts, error)
	// MarkInboxItem gives the account's unexpired item id mark m (Apply's
	// rule) and answers it; storage.ErrNotFound when there is none.
	MarkInboxItem(ctx context.Context, accountID, id string, m Mark) (Item, error)
	// MarkInboxItems gives mark m to every unexpired item of the account
	// that lacks it, up to item upTo ("" for all), and counts them.
	MarkInboxItems(ctx context.Context, accountID string, m Mark, upTo string) (int64, error)
	// PruneInbox deletes the expired items.
	PruneInbox(ctx context.Context) (int64, error)
	// AccountExists reports whether a live (not deleted) account has the
	// id: the admin API's USER_NOT_FOUND.
	AccountExists(ctx context.Context, accountID string) (bool, error)
}

// Event is what a user's live subscribers get: the counts as they are,
// and the new item when one was kept.
type Event struct {
	Counts Counts
	Item   *Item
}

// Config holds the inbox's settings.
type Config struct {
	// Retention is how long an item is kept (default DefaultRetention).
	Retention time.Duration
	// Live carries the events to subscribers on this replica and,
	// through its bus, the others; nil: one of its own.
	Live *live.Broker
	// Wire writes an event for the other replicas and reads it back: the
	// doors' wire type (view.InboxEventWire); default JSON of Event.
	Wire live.Codec[Event]
	// Buffer is how many events a subscriber may fall behind before it
	// is dropped (default 16).
	Buffer int
	Logger *slog.Logger
}

// Service reads and marks a user's inbox, and keeps what sends ask it
// to.
type Service struct {
	store Store
	cfg   Config
}

// NewService returns the service over store.
func NewService(store Store, cfg Config) *Service {
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Live == nil {
		cfg.Live = live.New(nil, cfg.Logger)
	}
	if cfg.Wire.Encode == nil || cfg.Wire.Decode == nil {
		cfg.Wire = live.Codec[Event]{
			Encode: func(e Event) ([]byte, error) { return json.Marshal(e) },
			Decode: func(b []byte) (Event, error) { var e Event; err := json.Unmarshal(b, &e); return e, err },
		}
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 16
	}
	return &Service{store: store, cfg: cfg}
}

// Retention is how long an item is kept.
func (s *Service) Retention() time.Duration { return s.cfg.Retention }

// Topic is the live topic of accountID's inbox.
func Topic(accountID string) string { return "inbox:" + accountID }

// TopicAll is the live topic of a change to many inboxes at once (a
// broadcast's items): every subscriber reads its counts again.
const TopicAll = "inbox:*"

// Keep writes it to its account's inbox (a new ID; kept now, expiring
// after the retention) and tells the account's subscribers.
func (s *Service) Keep(ctx context.Context, it Item) (Item, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return Item{}, err
	}
	it.ID = id.String()
	it, err = s.store.KeepInboxItem(ctx, it, s.cfg.Retention)
	if err != nil {
		return Item{}, err
	}
	s.changed(ctx, it.AccountID, &it)
	return it, nil
}

// KeepBroadcast writes broadcast jobID's items, one per account in its
// audience that allows its category on the inbox, once however often it
// is called (a takeover after a crash writes nothing more), and tells
// every subscriber to read its counts again. n is the number written by
// this call.
func (s *Service) KeepBroadcast(ctx context.Context, jobID string) (int64, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return 0, err
	}
	n, written, err := s.store.KeepBroadcastInbox(ctx, jobID, id.String(), s.cfg.Retention)
	if err != nil {
		return 0, err
	}
	if written && n > 0 {
		s.cfg.Live.Publish(ctx, TopicAll, nil)
	}
	return n, nil
}

// Page is one page of a listing.
type Page struct {
	Items       []Item
	EndCursor   string
	HasNextPage bool
}

// itemCursor's payload is the ID of the last item of a page.
var itemCursor = cursor.New[string]("inbox")

// List lists accountID's items that f lists, newest first, first at a
// time (default 20, 1 to 100: VALIDATION_ERROR otherwise) after the
// opaque cursor after (VALIDATION_ERROR when malformed). Expired items
// are not listed.
func (s *Service) List(ctx context.Context, accountID string, f Filter, first int, after string) (Page, error) {
	return s.list(ctx, accountID, f, first, after, false)
}

// ListOf is List as an operator reads a user's inbox (the admin API):
// USER_NOT_FOUND for an unknown or deleted account, after the page's
// arguments are checked.
func (s *Service) ListOf(ctx context.Context, accountID string, f Filter, first int, after string) (Page, error) {
	return s.list(ctx, accountID, f, first, after, true)
}

func (s *Service) list(ctx context.Context, accountID string, f Filter, first int, after string, exists bool) (Page, error) {
	first, err := cursor.PageSize(first, DefaultPageSize, MaxPageSize)
	if err != nil {
		return Page{}, err
	}
	before, err := itemCursor.After(after)
	if err != nil {
		return Page{}, apperr.Invalid("after", "a cursor from an earlier page", after)
	}
	if exists {
		if err := s.exists(ctx, accountID); err != nil {
			return Page{}, err
		}
	}
	items, err := s.store.InboxItems(ctx, accountID, f, before, first+1)
	if err != nil {
		return Page{}, err
	}
	p, err := cursor.Cut(itemCursor, items, first, func(it Item) string { return it.ID })
	if err != nil {
		return Page{}, err
	}
	return Page{Items: p.Items, EndCursor: p.EndCursor, HasNextPage: p.HasNextPage}, nil
}

// Counts are accountID's badge counts.
func (s *Service) Counts(ctx context.Context, accountID string) (Counts, error) {
	return s.store.InboxCounts(ctx, accountID)
}

// CountsOf is Counts as an operator reads them: USER_NOT_FOUND for an
// unknown or deleted account.
func (s *Service) CountsOf(ctx context.Context, accountID string) (Counts, error) {
	if err := s.exists(ctx, accountID); err != nil {
		return Counts{}, err
	}
	return s.store.InboxCounts(ctx, accountID)
}

// Mark gives accountID's item id mark m (Implied's rule) and answers it.
// INBOX_ITEM_NOT_FOUND for an unknown id, an expired item or another
// account's.
func (s *Service) Mark(ctx context.Context, accountID, id string, m Mark) (Item, error) {
	if err := checkMark(m); err != nil {
		return Item{}, err
	}
	return s.mark(ctx, accountID, id, m)
}

// Withdraw is an operator's archive of accountID's item id (the admin
// API): archived, and not marked seen, since the user did not see it
// (Withdrawn). The user's subscribers get the new counts.
// USER_NOT_FOUND for an unknown or deleted account, then
// INBOX_ITEM_NOT_FOUND as Mark.
func (s *Service) Withdraw(ctx context.Context, accountID, id string) (Item, error) {
	if err := s.exists(ctx, accountID); err != nil {
		return Item{}, err
	}
	return s.mark(ctx, accountID, id, Withdrawn)
}

func (s *Service) mark(ctx context.Context, accountID, id string, m Mark) (Item, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Item{}, notFound(id)
	}
	it, err := s.store.MarkInboxItem(ctx, accountID, id, m)
	if errors.Is(err, storage.ErrNotFound) {
		return Item{}, notFound(id)
	}
	if err != nil {
		return Item{}, err
	}
	s.changed(ctx, accountID, nil)
	return it, nil
}

// MarkSeen, MarkRead and MarkArchived are Mark with each mark.
func (s *Service) MarkSeen(ctx context.Context, accountID, id string) (Item, error) {
	return s.Mark(ctx, accountID, id, Seen)
}

func (s *Service) MarkRead(ctx context.Context, accountID, id string) (Item, error) {
	return s.Mark(ctx, accountID, id, Read)
}

func (s *Service) MarkArchived(ctx context.Context, accountID, id string) (Item, error) {
	return s.Mark(ctx, accountID, id, Archived)
}

// MarkAll gives mark m to every item of accountID's that lacks it, up to
// and including item upTo when it is not "" (an app marks what it has
// shown, not what arrived since), and answers the counts after it.
// INBOX_ITEM_NOT_FOUND for an upTo that is not a UUID.
func (s *Service) MarkAll(ctx context.Context, accountID string, m Mark, upTo string) (Counts, error) {
	if err := checkMark(m); err != nil {
		return Counts{}, err
	}
	return s.markAll(ctx, accountID, m, upTo)
}

// WithdrawAll is Withdraw for every item of accountID's inbox, up to and
// including item upTo when it is not "" (what the operator was shown, not
// what arrived since), and answers the counts after it. USER_NOT_FOUND for
// an unknown or deleted account; INBOX_ITEM_NOT_FOUND for an upTo that is
// not a UUID.
func (s *Service) WithdrawAll(ctx context.Context, accountID, upTo string) (Counts, error) {
	if err := s.exists(ctx, accountID); err != nil {
		return Counts{}, err
	}
	return s.markAll(ctx, accountID, Withdrawn, upTo)
}

func (s *Service) markAll(ctx context.Context, accountID string, m Mark, upTo string) (Counts, error) {
	if upTo != "" {
		if _, err := uuid.Parse(upTo); err != nil {
			return Counts{}, notFound(upTo)
		}
	}
	n, err := s.store.MarkInboxItems(ctx, accountID, m, upTo)
	if err != nil {
		return Counts{}, err
	}
	c, err := s.store.InboxCounts(ctx, accountID)
	if err != nil {
		return Counts{}, err
	}
	if n > 0 {
		s.publish(ctx, accountID, Event{Counts: c})
	}
	return c, nil
}

// Prune deletes the expired items (housekeeping, hourly).
func (s *Service) Prune(ctx context.Context) (int64, error) { return s.store.PruneInbox(ctx) }

// changed tells accountID's subscribers that the counts changed, with
// the new item when there is one. A failure to count is logged: live
// events are a view of the stored inbox, which a client can read again.
func (s *Service) changed(ctx context.Context, accountID string, it *Item) {
	ctx = context.WithoutCancel(ctx)
	c, err := s.store.InboxCounts(ctx, accountID)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "inbox counts not published", "account_id", accountID, "err", err)
		return
	}
	s.publish(ctx, accountID, Event{Counts: c, Item: it})
}

func (s *Service) publish(ctx context.Context, accountID string, e Event) {
	data, err := s.cfg.Wire.Encode(e)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "inbox event not encoded", "account_id", accountID, "err", err)
		return
	}
	s.cfg.Live.Publish(ctx, Topic(accountID), data)
}

// Watch follows accountID's inbox for a live subscriber: the counts as
// they are first, then an event for every item kept and every change of
// the counts, from whichever replica made it. A broadcast's items, and a
// gap in which events may have been missed, send the counts read again.
// Events repeating the counts of the one before, without an item, are
// left out. The channel is closed when ctx ends or the subscriber fell
// too far behind.
func (s *Service) Watch(ctx context.Context, accountID string) (<-chan Event, error) {
	// Subscribed before the first read, so no change falls in between.
	own := s.cfg.Live.Subscribe(Topic(accountID), false, s.cfg.Buffer)
	all := s.cfg.Live.Subscribe(TopicAll, true, 1)
	first, err := s.store.InboxCounts(ctx, accountID)
	if err != nil {
		own.Close()
		all.Close()
		return nil, err
	}
	out := make(chan Event)
	go func() {
		defer close(out)
		defer own.Close()
		defer all.Close()
		var last *Counts
		emit := func(e Event) bool {
			if e.Item == nil && last != nil && *last == e.Counts {
				return true
			}
			select {
			case out <- e:
				c := e.Counts
				last = &c
				return true
			case <-ctx.Done():
				return false
			}
		}
		reread := func() (Event, bool) {
			c, err := s.store.InboxCounts(ctx, accountID)
			if err != nil {
				if ctx.Err() == nil {
					s.cfg.Logger.WarnContext(ctx, "inbox counts unreadable", "account_id", accountID, "err", err)
				}
				return Event{}, false
			}
			return Event{Counts: c}, true
		}
		if !emit(Event{Counts: first}) {
			return
		}
		for {
			var e Event
			select {
			case <-ctx.Done():
				return
			case data, ok := <-own.C:
				if !ok {
					return
				}
				if data == nil {
					var ok bool
					if e, ok = reread(); !ok {
						continue
					}
					break
				}
				var err error
				if e, err = s.cfg.Wire.Decode(data); err != nil {
					s.cfg.Logger.WarnContext(ctx, "inbox event unreadable", "account_id", accountID, "err", err)
					continue
				}
			case _, ok := <-all.C:
				if !ok {
					return
				}
				var ok2 bool
				if e, ok2 = reread(); !ok2 {
					continue
				}
			}
			if !emit(e) {
				return
			}
		}
	}()
	return out, nil
}

// exists is USER_NOT_FOUND for an unknown or deleted account.
func (s *Service) exists(ctx context.Context, accountID string) error {
	ok, err := s.store.AccountExists(ctx, accountID)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.Newf(apperr.UserNotFound, "No user with the id %q.", fmt.Sprintf("%.64s", accountID))
	}
	return nil
}

func checkMark(m Mark) error {
	if !slices.Contains(Marks, m) {
		return apperr.Invalid("mark", "seen, read or archived", string(m))
	}
	return nil
}

func notFound(id string) error {
	return apperr.Newf(apperr.InboxItemNotFound, "No inbox item with the id %q.", fmt.Sprintf("%.64s", id))
}
