package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/live"
)

// InboxItem is one item of a user's in-app inbox (GraphQL InboxItem).
type InboxItem struct {
	ArchivedAt *time.Time     `json:"archivedAt"`
	Body       string         `json:"body"`
	Category   string         `json:"category"`
	CreatedAt  time.Time      `json:"createdAt"`
	Data       map[string]any `json:"data"`
	ExpiresAt  time.Time      `json:"expiresAt"`
	ID         string         `json:"id"`
	ReadAt     *time.Time     `json:"readAt"`
	SeenAt     *time.Time     `json:"seenAt"`
	Title      string         `json:"title"`
}

// NewInboxItem renders an item; data is {} (not null) when it has none.
func NewInboxItem(it inbox.Item) InboxItem {
	d := it.Data
	if d == nil {
		d = map[string]any{}
	}
	return InboxItem{ArchivedAt: optionalSeconds(it.ArchivedAt), Body: it.Body, Category: it.Category, CreatedAt: seconds(it.CreatedAt), Data: d,
		ExpiresAt: seconds(it.ExpiresAt), ID: it.ID, ReadAt: optionalSeconds(it.ReadAt), SeenAt: optionalSeconds(it.SeenAt), Title: it.Title}
}

// InboxCounts are the counts of a user's inbox a badge shows (GraphQL
// InboxCounts).
type InboxCounts struct {
	Unread int `json:"unread"`
	Unseen int `json:"unseen"`
}

// NewInboxCounts renders the counts.
func NewInboxCounts(c inbox.Counts) InboxCounts {
	return InboxCounts{Unread: c.Unread, Unseen: c.Unseen}
}

// InboxEvent is a live event of a user's inbox (GraphQL InboxEvent, the
// SSE event "inbox"): the counts as they are and, when an item was kept,
// the item.
type InboxEvent struct {
	Item   *InboxItem `json:"item"`
	Unread int        `json:"unread"`
	Unseen int        `json:"unseen"`
}

// NewInboxEvent renders an event.
func NewInboxEvent(e inbox.Event) InboxEvent {
	out := InboxEvent{Unread: e.Counts.Unread, Unseen: e.Counts.Unseen}
	if e.Item != nil {
		it := NewInboxItem(*e.Item)
		out.Item = &it
	}
	return out
}

// event is the domain event of w, as a replica that receives it reads it.
func (w InboxEvent) event() inbox.Event {
	e := inbox.Event{Counts: inbox.Counts{Unread: w.Unread, Unseen: w.Unseen}}
	if w.Item != nil {
		it := w.Item.item()
		e.Item = &it
	}
	return e
}

func (w InboxItem) item() inbox.Item {
	return inbox.Item{ID: w.ID, Title: w.Title, Body: w.Body, Data: w.Data, Category: w.Category, CreatedAt: w.CreatedAt, SeenAt: w.SeenAt, ReadAt: w.ReadAt,
		ArchivedAt: w.ArchivedAt, ExpiresAt: w.ExpiresAt}
}

// InboxEventWire is the inbox's live codec: events between replicas are
// the wire type subscribers are shown.
func InboxEventWire() live.Codec[inbox.Event] {
	return jsonCodec(NewInboxEvent, InboxEvent.event)
}
