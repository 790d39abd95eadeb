// Package inbox owns the in-app inbox: the Item a send keeps for the app
// to show (title, body, data, category) with its seen, read and archived
// marks, the rules of those marks, the listing's pages, the counts an
// app's badge shows, expiry, and the live events that tell a user's own
// subscribers of new items and changed counts on every replica. It holds
// no storage and speaks no HTTP: the store keeps the items, the doors
// render them (internal/view).
package inbox

import (
	"time"
)

// DefaultRetention is HERALD_INBOX_RETENTION's default: an item expires
// 90 days after it was kept.
const DefaultRetention = 90 * 24 * time.Hour

// Listing page sizes.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Item is one entry of a user's inbox.
type Item struct {
	ID        string // a UUIDv7: id order is the order items were kept
	AccountID string
	Title     string
	Body      string
	Data      map[string]any
	Category  string
	CreatedAt time.Time
	// SeenAt, ReadAt and ArchivedAt are nil until the item is marked so.
	SeenAt     *time.Time
	ReadAt     *time.Time
	ArchivedAt *time.Time
	ExpiresAt  time.Time
}

// Filter narrows a listing.
type Filter struct {
	// Archived lists the archive instead of the inbox: the items marked
	// archived, where the inbox lists those that are not.
	Archived bool
	// UnreadOnly leaves out the items marked read.
	UnreadOnly bool
}

// Counts are what an app's badge shows: the items of the inbox (not
// archived, not expired) not yet seen, and not yet read.
type Counts struct {
	Unseen int
	Unread int
}

// Mark is a mark an item can be given.
type Mark string

const (
	Seen     Mark = "seen"
	Read     Mark = "read"
	Archived Mark = "archived"
)

// Marks are every mark a user gives, in the order the doors name them.
var Marks = []Mark{Seen, Read, Archived}

// Withdrawn is the mark an operator gives (the admin API's archive): the
// item archived alone, not marked seen, since the user did not see it. It
// is not among Marks: a user's archive is Archived.
const Withdrawn Mark = "withdrawn"

// Implied is what giving an item mark m sets: reading an item or
// archiving it has shown it, so both mark it seen too; archiving does not
// mark it read. A mark already set keeps its first time.
func Implied(m Mark) (seen, read, archived bool) {
	switch m {
	case Seen:
		return true, false, false
	case Read:
		return true, true, false
	case Archived:
		return true, false, true
	case Withdrawn:
		return false, false, true
	}
	return false, false, false
}

// Apply is item it given mark m at now (Implied's rule): what the store
// writes, as a pure function.
func Apply(it Item, m Mark, now time.Time) Item {
	seen, read, archived := Implied(m)
	set := func(p **time.Time, on bool) {
		if on && *p == nil {
			t := now
			*p = &t
		}
	}
	set(&it.SeenAt, seen)
	set(&it.ReadAt, read)
	set(&it.ArchivedAt, archived)
	return it
}

// Expired reports whether it has expired at now: an expired item is
// neither listed nor counted, and housekeeping deletes it.
func (it Item) Expired(now time.Time) bool { return !now.Before(it.ExpiresAt) }

// Listed reports whether f lists it at now (the store's query, as a pure
// function).
func (f Filter) Listed(it Item, now time.Time) bool {
	if it.Expired(now) || (it.ArchivedAt != nil) != f.Archived {
		return false
	}
	return !f.UnreadOnly || it.ReadAt == nil
}

// Count is the counts of items at now (the store's query, as a pure
// function).
func Count(items []Item, now time.Time) Counts {
	var c Counts
	for _, it := range items {
		if it.Expired(now) || it.ArchivedAt != nil {
			continue
		}
		if it.SeenAt == nil {
			c.Unseen++
		}
		if it.ReadAt == nil {
			c.Unread++
		}
	}
	return c
}
