package inbox_test

import (
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/inbox"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Reading or archiving an item marks it seen; a mark keeps its first time.
func TestApply(t *testing.T) {
	it := inbox.Item{ExpiresAt: t0.Add(time.Hour)}
	read := inbox.Apply(it, inbox.Read, t0)
	if read.SeenAt == nil || read.ReadAt == nil || read.ArchivedAt != nil || !read.SeenAt.Equal(t0) {
		t.Fatalf("read: %+v", read)
	}
	later := t0.Add(time.Minute)
	arch := inbox.Apply(read, inbox.Archived, later)
	if !arch.SeenAt.Equal(t0) || !arch.ReadAt.Equal(t0) || arch.ArchivedAt == nil || !arch.ArchivedAt.Equal(later) {
		t.Fatalf("archived after read: %+v", arch)
	}
	seen := inbox.Apply(it, inbox.Seen, t0)
	if seen.SeenAt == nil || seen.ReadAt != nil || seen.ArchivedAt != nil {
		t.Fatalf("seen: %+v", seen)
	}
	if a := inbox.Apply(it, inbox.Archived, t0); a.SeenAt == nil || a.ReadAt != nil || a.ArchivedAt == nil {
		t.Fatalf("archived: %+v, want seen and archived, not read", a)
	}
	if it.SeenAt != nil {
		t.Fatal("Apply changed its argument")
	}
}

// What a listing shows and what the badge counts: no expired item, no
// archived one in the inbox (only in the archive), unread only on asking.
func TestListedAndCount(t *testing.T) {
	fresh := inbox.Item{ExpiresAt: t0.Add(time.Hour)}
	seen := inbox.Apply(fresh, inbox.Seen, t0)
	read := inbox.Apply(fresh, inbox.Read, t0)
	archived := inbox.Apply(fresh, inbox.Archived, t0)
	expired := inbox.Item{ExpiresAt: t0}
	for _, c := range []struct {
		name string
		f    inbox.Filter
		it   inbox.Item
		want bool
	}{
		{"fresh in the inbox", inbox.Filter{}, fresh, true},
		{"read in the inbox", inbox.Filter{}, read, true},
		{"read, unread only", inbox.Filter{UnreadOnly: true}, read, false},
		{"archived in the inbox", inbox.Filter{}, archived, false},
		{"archived in the archive", inbox.Filter{Archived: true}, archived, true},
		{"fresh in the archive", inbox.Filter{Archived: true}, fresh, false},
		{"expired", inbox.Filter{}, expired, false},
	} {
		if got := c.f.Listed(c.it, t0); got != c.want {
			t.Errorf("%s: listed %v, want %v", c.name, got, c.want)
		}
	}
	got := inbox.Count([]inbox.Item{fresh, seen, read, archived, expired}, t0)
	if got != (inbox.Counts{Unseen: 1, Unread: 2}) {
		t.Fatalf("counts %+v, want 1 unseen (fresh), 2 unread (fresh, seen)", got)
	}
}
