package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// The inbox's store, on every database: items listed newest first by
// page and filter, the counts, marks on one item and on all (up to an
// item), another account's item not found, expiry and pruning, deletion
// with the account, and a broadcast's items written once per account in
// its audience that allows the category on the inbox.
func TestInboxConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"ListPageCounts", testInboxList},
		{"Marks", testInboxMarks},
		{"OperatorArchive", testInboxWithdrawn},
		{"ExpiryAndErasure", testInboxExpiry},
		{"BroadcastItemsOnce", testInboxBroadcast},
	}, mustOpenWithWorkers)
}

const week = 7 * 24 * time.Hour

// kept numbers the items keep writes, for their ids.
var kept int

// keep writes n items for account with ids in kept order, advancing the
// clock a second between them.
func keep(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock, account string, n int) []inbox.Item {
	t.Helper()
	var out []inbox.Item
	for i := range n {
		it, err := db.KeepInboxItem(context.Background(), inbox.Item{ID: fmt.Sprintf("0190a000-0000-7000-8000-%012d", kept), AccountID: account,
			Title: fmt.Sprintf("T%d", i), Body: "B", Data: map[string]any{"n": i}, Category: "product"}, week)
		if err != nil {
			t.Fatal(err)
		}
		kept++
		out = append(out, it)
		clk.Advance(time.Second)
	}
	return out
}

func ids(items []inbox.Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.Title)
	}
	return out
}

func testInboxList(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a22")
	kept := keep(t, db, clk, "a1", 3)
	keep(t, db, clk, "a22", 1)
	page, err := db.InboxItems(ctx, "a1", inbox.Filter{}, "", 2)
	if err != nil || fmt.Sprint(ids(page)) != "[T2 T1]" {
		t.Fatalf("first page %v, %v", ids(page), err)
	}
	page, err = db.InboxItems(ctx, "a1", inbox.Filter{}, page[1].ID, 2)
	if err != nil || fmt.Sprint(ids(page)) != "[T0]" {
		t.Fatalf("second page %v, %v", ids(page), err)
	}
	got := page[0]
	if got.AccountID != "a1" || got.Body != "B" || got.Category != "product" || fmt.Sprint(got.Data["n"]) != "0" || !got.CreatedAt.Equal(kept[0].CreatedAt) ||
		!got.ExpiresAt.Equal(kept[0].CreatedAt.Add(week)) || got.SeenAt != nil || got.ReadAt != nil || got.ArchivedAt != nil {
		t.Fatalf("item read back %+v, kept %+v", got, kept[0])
	}
	if c, err := db.InboxCounts(ctx, "a1"); err != nil || c != (inbox.Counts{Unseen: 3, Unread: 3}) {
		t.Fatalf("counts %+v, %v", c, err)
	}
	if c, err := db.InboxCounts(ctx, "nobody"); err != nil || c != (inbox.Counts{}) {
		t.Fatalf("counts of an account without items %+v, %v", c, err)
	}
}

func testInboxMarks(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a22")
	kept := keep(t, db, clk, "a1", 4)
	other := keep(t, db, clk, "a22", 1)

	seen, err := db.MarkInboxItem(ctx, "a1", kept[0].ID, inbox.Seen)
	if err != nil || seen.SeenAt == nil || !seen.SeenAt.Equal(clk.Now()) || seen.ReadAt != nil {
		t.Fatalf("mark seen: %+v, %v", seen, err)
	}
	clk.Advance(time.Minute)
	read, err := db.MarkInboxItem(ctx, "a1", kept[0].ID, inbox.Read)
	if err != nil || !read.SeenAt.Equal(*seen.SeenAt) || read.ReadAt == nil || !read.ReadAt.Equal(clk.Now()) {
		t.Fatalf("mark read keeps the first seen time: %+v, %v", read, err)
	}
	if c, _ := db.InboxCounts(ctx, "a1"); c != (inbox.Counts{Unseen: 3, Unread: 3}) {
		t.Fatalf("counts after one read %+v", c)
	}
	// Another account's item, and an unknown one, are not found.
	if _, err := db.MarkInboxItem(ctx, "a1", other[0].ID, inbox.Read); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another account's item: %v", err)
	}
	if _, err := db.MarkInboxItem(ctx, "a1", "0190a000-0000-7000-8000-999999999999", inbox.Read); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an unknown item: %v", err)
	}
	// Archived: out of the inbox and its counts, in the archive.
	if it, err := db.MarkInboxItem(ctx, "a1", kept[1].ID, inbox.Archived); err != nil || it.ArchivedAt == nil || it.SeenAt == nil || it.ReadAt != nil {
		t.Fatalf("archive: %+v, %v", it, err)
	}
	if page, _ := db.InboxItems(ctx, "a1", inbox.Filter{}, "", 10); fmt.Sprint(ids(page)) != "[T3 T2 T0]" {
		t.Fatalf("inbox after archiving T1: %v", ids(page))
	}
	if page, _ := db.InboxItems(ctx, "a1", inbox.Filter{Archived: true}, "", 10); fmt.Sprint(ids(page)) != "[T1]" {
		t.Fatalf("archive: %v", ids(page))
	}
	if page, _ := db.InboxItems(ctx, "a1", inbox.Filter{UnreadOnly: true}, "", 10); fmt.Sprint(ids(page)) != "[T3 T2]" {
		t.Fatalf("unread: %v", ids(page))
	}
	if c, _ := db.InboxCounts(ctx, "a1"); c != (inbox.Counts{Unseen: 2, Unread: 2}) {
		t.Fatalf("counts after archiving %+v", c)
	}
	// All seen up to T2: T3 stays unseen; then all read.
	if n, err := db.MarkInboxItems(ctx, "a1", inbox.Seen, kept[2].ID); err != nil || n != 1 {
		t.Fatalf("all seen up to T2: %d, %v", n, err)
	}
	if c, _ := db.InboxCounts(ctx, "a1"); c != (inbox.Counts{Unseen: 1, Unread: 2}) {
		t.Fatalf("counts after all seen up to T2 %+v", c)
	}
	if n, err := db.MarkInboxItems(ctx, "a1", inbox.Read, ""); err != nil || n != 3 {
		t.Fatalf("all read: %d, %v (T1 archived unread, T2, T3)", n, err)
	}
	if c, _ := db.InboxCounts(ctx, "a1"); c != (inbox.Counts{}) {
		t.Fatalf("counts after all read %+v", c)
	}
	if n, err := db.MarkInboxItems(ctx, "a1", inbox.Archived, ""); err != nil || n != 3 {
		t.Fatalf("archive all: %d, %v", n, err)
	}
	if page, _ := db.InboxItems(ctx, "a1", inbox.Filter{}, "", 10); len(page) != 0 {
		t.Fatalf("inbox after archiving all: %v", ids(page))
	}
	// The other account's item was not touched.
	if c, _ := db.InboxCounts(ctx, "a22"); c != (inbox.Counts{Unseen: 1, Unread: 1}) {
		t.Fatalf("the other account's counts %+v", c)
	}
}

// An operator's archive (inbox.Withdrawn) sets archived_at alone: not
// seen, the user's marks kept; all of them counts only those it archived.
func testInboxWithdrawn(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	kept := keep(t, db, clk, "a1", 3) // T0 T1 T2
	if _, err := db.MarkInboxItem(ctx, "a1", kept[0].ID, inbox.Read); err != nil {
		t.Fatal(err)
	}
	if it, err := db.MarkInboxItem(ctx, "a1", kept[2].ID, inbox.Withdrawn); err != nil || it.ArchivedAt == nil || it.SeenAt != nil || it.ReadAt != nil {
		t.Fatalf("withdrawn: %+v, %v", it, err)
	}
	if c, _ := db.InboxCounts(ctx, "a1"); c != (inbox.Counts{Unseen: 1, Unread: 1}) {
		t.Fatalf("counts after withdrawing T2 %+v", c)
	}
	if n, err := db.MarkInboxItems(ctx, "a1", inbox.Withdrawn, ""); err != nil || n != 2 {
		t.Fatalf("withdraw all: %d, %v (T0, T1)", n, err)
	}
	page, _ := db.InboxItems(ctx, "a1", inbox.Filter{Archived: true}, "", 10)
	if fmt.Sprint(ids(page)) != "[T2 T1 T0]" {
		t.Fatalf("archive %v", ids(page))
	}
	for _, it := range page {
		if read := it.Title == "T0"; it.ArchivedAt == nil || (it.SeenAt != nil) != read || (it.ReadAt != nil) != read {
			t.Fatalf("%s withdrawn: seen %v read %v archived %v", it.Title, it.SeenAt, it.ReadAt, it.ArchivedAt)
		}
	}
	if ok, err := db.AccountExists(ctx, "a1"); err != nil || !ok {
		t.Fatalf("a1 exists: %v, %v", ok, err)
	}
}

func testInboxExpiry(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	old := keep(t, db, clk, "a1", 1)
	clk.Advance(week - 10*time.Second)
	keep(t, db, clk, "a1", 1)
	clk.Advance(10 * time.Second) // the first is a week old now
	if page, _ := db.InboxItems(ctx, "a1", inbox.Filter{}, "", 10); len(page) != 1 || page[0].ID == old[0].ID {
		t.Fatalf("an expired item listed: %v", ids(page))
	}
	if c, _ := db.InboxCounts(ctx, "a1"); c != (inbox.Counts{Unseen: 1, Unread: 1}) {
		t.Fatalf("an expired item counted: %+v", c)
	}
	if _, err := db.MarkInboxItem(ctx, "a1", old[0].ID, inbox.Read); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an expired item marked: %v", err)
	}
	if n, err := db.PruneInbox(ctx); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the expired item", n, err)
	}
	if err := accounts.DeleteAccount(ctx, db, "a1", nil); err != nil {
		t.Fatal(err)
	}
	if page, err := db.InboxItems(ctx, "a1", inbox.Filter{}, "", 10); err != nil || len(page) != 0 {
		t.Fatalf("after deletion: %v, %v", ids(page), err)
	}
}

func testInboxBroadcast(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 3) // a1: three devices
	mustAccount(t, db, "a2")
	mustRegister(t, db, "e000", "a2", "u000")
	mustAccount(t, db, "a3") // turned product off on the inbox
	mustRegister(t, db, "f000", "a3", "v000")
	setPreference(t, db, "a3", "product", "inbox", false)
	mustAccount(t, db, "a4") // turned product off on push only
	mustRegister(t, db, "g000", "a4", "w000")
	setPreference(t, db, "a4", "product", "push", false)
	mustAccount(t, db, "a5") // no device: not in a broadcast's audience
	if _, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job0", Subject: "No", Content: "inbox"}, notifications.BroadcastArgs{JobID: "job0"}); err != nil {
		t.Fatal(err)
	}
	if _, written, err := db.KeepBroadcastInbox(ctx, "job0", "0190a000-0000-7000-8000-000000000000", week); err != nil || written {
		t.Fatalf("a broadcast without inbox wrote its items (%v, %v)", written, err)
	}
	j, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "Hi", Content: "Body", Data: []byte(`{"k":1}`), Category: "product", Inbox: true}, notifications.BroadcastArgs{JobID: "job1"})
	if err != nil || !j.Inbox || j.InboxWritten {
		t.Fatalf("created %+v, %v", j, err)
	}
	n, written, err := db.KeepBroadcastInbox(ctx, "job1", "0190a000-0000-7000-8000-000000000001", week)
	if err != nil || !written || n != 3 {
		t.Fatalf("wrote %d (%v, %v), want a1, a2 and a4", n, written, err)
	}
	// A takeover tries again: nothing more.
	if n, written, err := db.KeepBroadcastInbox(ctx, "job1", "0190a000-0000-7000-8000-000000000002", week); err != nil || written || n != 0 {
		t.Fatalf("second attempt wrote %d (%v, %v)", n, written, err)
	}
	if j, err := db.BroadcastJob(ctx, "job1"); err != nil || !j.InboxWritten || j.InboxItems != 3 {
		t.Fatalf("job after %+v, %v", j, err)
	}
	for account, want := range map[string]int{"a1": 1, "a2": 1, "a3": 0, "a4": 1, "a5": 0} {
		page, err := db.InboxItems(ctx, account, inbox.Filter{}, "", 10)
		if err != nil || len(page) != want {
			t.Fatalf("%s: %d items, %v; want %d", account, len(page), err, want)
		}
		if want == 1 && (page[0].Title != "Hi" || page[0].Body != "Body" || page[0].Category != "product" || fmt.Sprint(page[0].Data["k"]) != "1") {
			t.Fatalf("%s: item %+v", account, page[0])
		}
	}
}
