package inbox_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/storage"
)

// memStore is the store as the pure rules describe it, in memory.
type memStore struct {
	mu    sync.Mutex
	now   time.Time
	items []inbox.Item
	// broadcast is the accounts a broadcast's items go to.
	broadcast []string
	written   bool
	// accounts are the accounts that exist (AccountExists); nil: every one.
	accounts []string
}

func (m *memStore) AccountExists(_ context.Context, id string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.accounts == nil || slices.Contains(m.accounts, id), nil
}

func (m *memStore) KeepInboxItem(_ context.Context, it inbox.Item, retention time.Duration) (inbox.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	it.CreatedAt, it.ExpiresAt = m.now, m.now.Add(retention)
	m.items = append(m.items, it)
	return it, nil
}

func (m *memStore) KeepBroadcastInbox(_ context.Context, jobID, itemID string, retention time.Duration) (int64, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.written {
		return 0, false, nil
	}
	m.written = true
	for _, a := range m.broadcast {
		m.items = append(m.items, inbox.Item{ID: itemID, AccountID: a, Title: jobID, CreatedAt: m.now, ExpiresAt: m.now.Add(retention)})
	}
	return int64(len(m.broadcast)), true, nil
}

func (m *memStore) InboxItems(_ context.Context, accountID string, f inbox.Filter, beforeID string, limit int) ([]inbox.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []inbox.Item
	for _, it := range slices.Backward(m.items) {
		if it.AccountID == accountID && f.Listed(it, m.now) && (beforeID == "" || it.ID < beforeID) && len(out) < limit {
			out = append(out, it)
		}
	}
	return out, nil
}

func (m *memStore) own(accountID string) []inbox.Item {
	var out []inbox.Item
	for _, it := range m.items {
		if it.AccountID == accountID {
			out = append(out, it)
		}
	}
	return out
}

func (m *memStore) InboxCounts(_ context.Context, accountID string) (inbox.Counts, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return inbox.Count(m.own(accountID), m.now), nil
}

func (m *memStore) MarkInboxItem(_ context.Context, accountID, id string, mk inbox.Mark) (inbox.Item, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, it := range m.items {
		if it.AccountID == accountID && it.ID == id && !it.Expired(m.now) {
			m.items[i] = inbox.Apply(it, mk, m.now)
			return m.items[i], nil
		}
	}
	return inbox.Item{}, storage.ErrNotFound
}

func (m *memStore) MarkInboxItems(_ context.Context, accountID string, mk inbox.Mark, upTo string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for i, it := range m.items {
		if it.AccountID != accountID || it.Expired(m.now) || (upTo != "" && it.ID > upTo) {
			continue
		}
		if after := inbox.Apply(it, mk, m.now); !sameMarks(after, it) {
			m.items[i] = after
			n++
		}
	}
	return n, nil
}

func sameMarks(a, b inbox.Item) bool {
	return (a.SeenAt == nil) == (b.SeenAt == nil) && (a.ReadAt == nil) == (b.ReadAt == nil) && (a.ArchivedAt == nil) == (b.ArchivedAt == nil)
}

func (m *memStore) PruneInbox(context.Context) (int64, error) { return 0, nil }

// next is the next event of ch within a few seconds.
func next(t *testing.T, ch <-chan inbox.Event, what string) inbox.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatalf("%s: the channel closed", what)
		}
		return e
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no event within 5s", what)
	}
	return inbox.Event{}
}

// quiet checks nothing more comes for a moment: the events this test
// expects come at once, so 100ms is plenty.
func quiet(t *testing.T, ch <-chan inbox.Event, what string) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("%s: an event %+v", what, e)
	case <-time.After(100 * time.Millisecond):
	}
}

// Watch: the counts first, an item kept with the counts, a mark's counts,
// nothing for another account's item or for a change that changes no
// count, and the counts read again after a broadcast's items or a gap.
func TestWatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &memStore{now: t0, broadcast: []string{"a1", "a2"}}
	b := live.New(nil, nil)
	s := inbox.NewService(st, inbox.Config{Live: b})
	events, err := s.Watch(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if e := next(t, events, "first"); e.Counts != (inbox.Counts{}) || e.Item != nil {
		t.Fatalf("first %+v", e)
	}
	if _, err := s.Keep(ctx, inbox.Item{AccountID: "a2", Title: "Not yours"}); err != nil {
		t.Fatal(err)
	}
	it, err := s.Keep(ctx, inbox.Item{AccountID: "a1", Title: "Hello", Data: map[string]any{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	if e := next(t, events, "the item"); e.Item == nil || e.Item.Title != "Hello" || e.Item.ID != it.ID || e.Counts != (inbox.Counts{Unseen: 1, Unread: 1}) {
		t.Fatalf("after keeping %+v (another account's item must not come)", e)
	}
	if _, err := s.Mark(ctx, "a1", it.ID, inbox.Read); err != nil {
		t.Fatal(err)
	}
	if e := next(t, events, "read"); e.Item != nil || e.Counts != (inbox.Counts{}) {
		t.Fatalf("after read %+v", e)
	}
	// Seen after read: the counts do not change, nothing is sent.
	if _, err := s.Mark(ctx, "a1", it.ID, inbox.Seen); err != nil {
		t.Fatal(err)
	}
	if c, err := s.MarkAll(ctx, "a1", inbox.Read, ""); err != nil || c != (inbox.Counts{}) {
		t.Fatalf("mark all read again: %+v, %v", c, err)
	}
	quiet(t, events, "marks that change no count")
	if n, err := s.KeepBroadcast(ctx, "job1"); err != nil || n != 2 {
		t.Fatalf("broadcast items %d, %v", n, err)
	}
	if e := next(t, events, "the broadcast"); e.Item != nil || e.Counts != (inbox.Counts{Unseen: 1, Unread: 1}) {
		t.Fatalf("after the broadcast %+v", e)
	}
	if n, err := s.KeepBroadcast(ctx, "job1"); err != nil || n != 0 {
		t.Fatalf("the broadcast's items again: %d, %v", n, err)
	}
	quiet(t, events, "a broadcast written before")
	// A gap: counts read again; the same counts are not sent twice.
	b.Resync()
	quiet(t, events, "a resync with unchanged counts")
	st.mu.Lock()
	st.items = append(st.items, inbox.Item{ID: "z", AccountID: "a1", ExpiresAt: t0.Add(time.Hour)}) // missed
	st.mu.Unlock()
	b.Resync()
	if e := next(t, events, "a resync"); e.Item != nil || e.Counts != (inbox.Counts{Unseen: 2, Unread: 2}) {
		t.Fatalf("after a resync %+v", e)
	}
	cancel()
	select {
	case _, ok := <-events:
		if ok {
			t.Fatal("an event after the end")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the channel stayed open after the context ended")
	}
	if n := b.Subscribers(inbox.Topic("a1")) + b.Subscribers(inbox.TopicAll); n != 0 {
		t.Fatalf("%d subscriptions left", n)
	}
}

// Marking: an unknown id, another account's item and a malformed id are
// INBOX_ITEM_NOT_FOUND; a mark that is none is VALIDATION_ERROR; pages
// are bounded.
func TestMarkAndListRefusals(t *testing.T) {
	ctx := context.Background()
	st := &memStore{now: t0}
	s := inbox.NewService(st, inbox.Config{})
	it, err := s.Keep(ctx, inbox.Item{AccountID: "a1", Title: "Mine"})
	if err != nil || !it.ExpiresAt.Equal(t0.Add(inbox.DefaultRetention)) {
		t.Fatalf("kept %+v, %v", it, err)
	}
	for _, c := range []struct {
		what, account, id string
		mark              inbox.Mark
		code              apperr.Code
	}{
		{"another account's item", "a2", it.ID, inbox.Read, apperr.InboxItemNotFound},
		{"an unknown id", "a1", "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", inbox.Read, apperr.InboxItemNotFound},
		{"a malformed id", "a1", "nope", inbox.Read, apperr.InboxItemNotFound},
		{"a mark that is none", "a1", it.ID, "liked", apperr.ValidationError},
	} {
		if _, err := s.Mark(ctx, c.account, c.id, c.mark); !apperr.Is(err, c.code) {
			t.Errorf("%s: %v, want %s", c.what, err, c.code)
		}
	}
	if _, err := s.MarkAll(ctx, "a1", inbox.Seen, "nope"); !apperr.Is(err, apperr.InboxItemNotFound) {
		t.Errorf("mark all up to a malformed id: %v", err)
	}
	for _, first := range []int{-1, 101} {
		if _, err := s.List(ctx, "a1", inbox.Filter{}, first, ""); !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("first %d: %v", first, err)
		}
	}
	if _, err := s.List(ctx, "a1", inbox.Filter{}, 0, "garbage"); err == nil || !strings.Contains(err.Error(), "after") {
		t.Errorf("a malformed cursor: %v", err)
	}
	p, err := s.List(ctx, "a1", inbox.Filter{}, 0, "")
	if err != nil || len(p.Items) != 1 || p.HasNextPage {
		t.Fatalf("list %+v, %v", p, err)
	}
}

// The operator's doors: an unknown account is USER_NOT_FOUND (after the
// page's arguments are checked); Withdraw and WithdrawAll archive without
// marking seen, leave the marks already given, refuse a malformed item id
// as Mark does, and tell the user's subscribers the new counts.
func TestOperatorReadsAndWithdraws(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st := &memStore{now: t0, accounts: []string{"a1", "a2"}}
	s := inbox.NewService(st, inbox.Config{})
	var kept []inbox.Item
	for _, title := range []string{"One", "Two", "Three"} {
		it, err := s.Keep(ctx, inbox.Item{AccountID: "a1", Title: title})
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, it)
	}
	if _, err := s.Mark(ctx, "a1", kept[0].ID, inbox.Read); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ListOf(ctx, "nobody", inbox.Filter{}, 0, ""); !apperr.Is(err, apperr.UserNotFound) {
		t.Errorf("list of an unknown account: %v", err)
	}
	if _, err := s.ListOf(ctx, "nobody", inbox.Filter{}, 0, "garbage"); !apperr.Is(err, apperr.ValidationError) {
		t.Errorf("a malformed cursor for an unknown account: %v, want VALIDATION_ERROR first", err)
	}
	if _, err := s.CountsOf(ctx, "nobody"); !apperr.Is(err, apperr.UserNotFound) {
		t.Errorf("counts of an unknown account: %v", err)
	}
	if _, err := s.Withdraw(ctx, "nobody", kept[1].ID); !apperr.Is(err, apperr.UserNotFound) {
		t.Errorf("withdraw for an unknown account: %v", err)
	}
	if _, err := s.WithdrawAll(ctx, "nobody", ""); !apperr.Is(err, apperr.UserNotFound) {
		t.Errorf("withdraw all for an unknown account: %v", err)
	}
	if _, err := s.Withdraw(ctx, "a2", kept[1].ID); !apperr.Is(err, apperr.InboxItemNotFound) {
		t.Errorf("withdraw another account's item: %v", err)
	}
	if _, err := s.Withdraw(ctx, "a1", "nope"); !apperr.Is(err, apperr.InboxItemNotFound) {
		t.Errorf("withdraw a malformed id: %v", err)
	}
	p, err := s.ListOf(ctx, "a1", inbox.Filter{}, 2, "")
	if err != nil || len(p.Items) != 2 || p.Items[0].Title != "Three" || !p.HasNextPage {
		t.Fatalf("first page %+v, %v", p, err)
	}
	events, err := s.Watch(ctx, "a1")
	if err != nil {
		t.Fatal(err)
	}
	if e := next(t, events, "first"); e.Counts != (inbox.Counts{Unseen: 2, Unread: 2}) {
		t.Fatalf("first %+v", e)
	}
	w, err := s.Withdraw(ctx, "a1", kept[2].ID)
	if err != nil || w.ArchivedAt == nil || w.SeenAt != nil || w.ReadAt != nil {
		t.Fatalf("withdrawn %+v, %v: want archived, not seen or read", w, err)
	}
	if e := next(t, events, "withdrawn"); e.Counts != (inbox.Counts{Unseen: 1, Unread: 1}) {
		t.Fatalf("after withdrawing %+v", e)
	}
	c, err := s.WithdrawAll(ctx, "a1", "")
	if err != nil || c != (inbox.Counts{}) {
		t.Fatalf("withdraw all: %+v, %v", c, err)
	}
	if e := next(t, events, "all withdrawn"); e.Counts != (inbox.Counts{}) {
		t.Fatalf("after withdrawing all %+v", e)
	}
	arch, err := s.ListOf(ctx, "a1", inbox.Filter{Archived: true}, 0, "")
	if err != nil || len(arch.Items) != 3 {
		t.Fatalf("archive %+v, %v", arch, err)
	}
	for _, it := range arch.Items {
		if wantSeen := it.ID == kept[0].ID; (it.SeenAt != nil) != wantSeen || (it.ReadAt != nil) != wantSeen {
			t.Errorf("%s: seen %v read %v: only One, read by the user, is", it.Title, it.SeenAt, it.ReadAt)
		}
	}
	if _, err := s.Mark(ctx, "a1", kept[1].ID, inbox.Withdrawn); !apperr.Is(err, apperr.ValidationError) {
		t.Errorf("a user giving the operator's mark: %v, want VALIDATION_ERROR", err)
	}
}
