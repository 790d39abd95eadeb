package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestMessengerConformance(t *testing.T) {
	cases := []storeCase{
		{"SubscriptionLifecycle", testSubscriptionLifecycle},
		{"ReplayedUpdateAppliedOnce", testReplayedUpdate},
		{"ConcurrentReplaysOneWins", testConcurrentReplays},
		{"UpdateIDsPrunedAndLastID", testUpdatePruning},
		{"ListSubscribersKeyset", testListSubscribers},
		{"LeaseExclusiveRenewableExpiring", testLease},
		{"LinkTokensExpireAndAreSingleUse", testLinkTokens},
		{"LinksMoveAndUnlink", testLinks},
	}
	runConformance(t, cases, mustOpen)
}

func count(t *testing.T, db *sqlstore.DB) int {
	t.Helper()
	n, err := db.CountTelegramSubscribers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func testSubscriptionLifecycle(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	start := clk.Now()
	steps := []struct {
		change     messenger.Change
		wantChange bool
		wantStatus messenger.SubscriberStatus // "" : chat unknown
		wantCount  int
	}{
		{messenger.Change{Kind: messenger.Unsubscribe, ChatID: 7}, false, "", 0},
		{messenger.Change{Kind: messenger.Block, ChatID: 7}, false, "", 0},
		{messenger.Change{Kind: messenger.Subscribe, ChatID: 7, Username: "ann", FirstName: "Ann", Payload: "promo"}, true, messenger.Subscribed, 1},
		{messenger.Change{Kind: messenger.Subscribe, ChatID: -100123, FirstName: "A group"}, true, messenger.Subscribed, 2},
		{messenger.Change{Kind: messenger.Block, ChatID: 7}, true, messenger.Blocked, 1},
		{messenger.Change{Kind: messenger.Unblock, ChatID: 7}, true, messenger.Subscribed, 2},
		{messenger.Change{Kind: messenger.Unsubscribe, ChatID: 7}, true, messenger.Unsubscribed, 1},
		{messenger.Change{Kind: messenger.Block, ChatID: 7}, false, messenger.Unsubscribed, 1},
		{messenger.Change{Kind: messenger.Unblock, ChatID: 7}, false, messenger.Unsubscribed, 1},
		{messenger.Change{Kind: messenger.Subscribe, ChatID: 7, Username: "ann2"}, true, messenger.Subscribed, 2},
	}
	for i, st := range steps {
		clk.Set(start.Add(time.Duration(i) * time.Minute))
		out, err := db.ApplyTelegramUpdate(ctx, int64(i+1), &st.change)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		var status messenger.SubscriberStatus
		if out.After != nil {
			status = out.After.Status
		}
		if out.Duplicate || out.Changed != st.wantChange || status != st.wantStatus {
			t.Fatalf("step %d (%s): outcome %+v, want changed=%v status=%q", i, st.change.Kind, out, st.wantChange, st.wantStatus)
		}
		if n := count(t, db); n != st.wantCount {
			t.Fatalf("step %d: %d subscribers, want %d", i, n, st.wantCount)
		}
	}
	items, err := db.ListTelegramSubscribers(ctx, "", nil, 10)
	if err != nil || len(items) != 2 {
		t.Fatalf("list: %v %+v", err, items)
	}
	ann := items[0]
	// Re-subscribing after /stop starts a new subscription; the payload of
	// the earlier /start is kept because the new one carried none.
	want := messenger.Subscriber{ChatID: "7", Username: "ann2", FirstName: "Ann", StartPayload: "promo",
		SubscribedSince: start.Add(9 * time.Minute), Status: messenger.Subscribed, UpdatedAt: start.Add(9 * time.Minute)}
	if !ann.SubscribedSince.Equal(want.SubscribedSince) || !ann.UpdatedAt.Equal(want.UpdatedAt) {
		t.Fatalf("subscriber times\n got %+v\nwant %+v", ann, want)
	}
	ann.SubscribedSince, ann.UpdatedAt, want.SubscribedSince, want.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if ann != want {
		t.Fatalf("subscriber\n got %+v\nwant %+v", ann, want)
	}
	// A send answering 403 blocks without any update.
	out, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Block, ChatID: 7})
	if err != nil || !out.Changed || out.After.Status != messenger.Blocked || out.Before.Status != messenger.Subscribed {
		t.Fatalf("apply change: %+v %v", out, err)
	}
}

func testReplayedUpdate(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	sub := &messenger.Change{Kind: messenger.Subscribe, ChatID: 1}
	if out, err := db.ApplyTelegramUpdate(ctx, 10, sub); err != nil || out.Duplicate || !out.Changed {
		t.Fatalf("first: %+v %v", out, err)
	}
	db.ApplyTelegramUpdate(ctx, 11, &messenger.Change{Kind: messenger.Unsubscribe, ChatID: 1})
	out, err := db.ApplyTelegramUpdate(ctx, 10, sub)
	if err != nil || !out.Duplicate || out.Changed {
		t.Fatalf("replay: %+v %v", out, err)
	}
	if n := count(t, db); n != 0 {
		t.Fatalf("the replayed /start re-subscribed: %d subscribers", n)
	}
	// An update that changes nothing is still recorded.
	db.ApplyTelegramUpdate(ctx, 12, nil)
	if out, _ := db.ApplyTelegramUpdate(ctx, 12, nil); !out.Duplicate {
		t.Fatal("an update without a change was not recorded")
	}
}

func testConcurrentReplays(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	applied := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := db.ApplyTelegramUpdate(ctx, 99, &messenger.Change{Kind: messenger.Subscribe, ChatID: 5})
			if err != nil {
				t.Error(err)
				return
			}
			if !out.Duplicate {
				mu.Lock()
				applied++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if applied != 1 {
		t.Fatalf("update applied %d times, want 1", applied)
	}
}

func testUpdatePruning(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	start := clk.Now()
	if _, ok, err := db.LastTelegramUpdateID(ctx, start.Add(-time.Hour)); err != nil || ok {
		t.Fatalf("empty table: ok=%v err=%v", ok, err)
	}
	for id := int64(1); id <= 3; id++ {
		if _, err := db.ApplyTelegramUpdate(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	if id, ok, _ := db.LastTelegramUpdateID(ctx, start.Add(-time.Hour)); !ok || id != 3 {
		t.Fatalf("last = %d %v, want 3", id, ok)
	}
	clk.Set(start.Add(messenger.UpdateRetention + time.Hour))
	if _, err := db.ApplyTelegramUpdate(ctx, 4, nil); err != nil {
		t.Fatal(err)
	}
	// Housekeeping removes exactly the ids past the retention.
	p, err := db.Prune(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.TelegramUpdates != 3 {
		t.Fatalf("pruned %d update ids, want 3", p.TelegramUpdates)
	}
	if p, _ := db.Prune(ctx, clk.Now()); p.TelegramUpdates != 0 {
		t.Fatalf("a second pass pruned %d update ids", p.TelegramUpdates)
	}
	if _, ok, _ := db.LastTelegramUpdateID(ctx, start.Add(time.Hour)); !ok {
		t.Fatal("the newest update is missing")
	}
	if id, _, _ := db.LastTelegramUpdateID(ctx, start.Add(-time.Hour)); id != 4 {
		t.Fatalf("last = %d, want 4", id)
	}
	// Ids past the retention were pruned: they count as new again.
	if out, _ := db.ApplyTelegramUpdate(ctx, 2, nil); out.Duplicate {
		t.Fatal("an old update id was not pruned")
	}
	if out, _ := db.ApplyTelegramUpdate(ctx, 4, nil); !out.Duplicate {
		t.Fatal("a recent update id was pruned")
	}
}

func testListSubscribers(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	start := clk.Now()
	// Seven chats: pairs share a subscription time, so the chat id breaks ties.
	var want []string
	for i := 0; i < 7; i++ {
		clk.Set(start.Add(time.Duration(i/2) * time.Second).Add(time.Duration(i/2) * 1500 * time.Microsecond))
		if _, err := db.ApplyTelegramUpdate(ctx, int64(i+1), &messenger.Change{Kind: messenger.Subscribe, ChatID: int64(100 + i)}); err != nil {
			t.Fatal(err)
		}
	}
	db.ApplyTelegramUpdate(ctx, 50, &messenger.Change{Kind: messenger.Block, ChatID: 103})
	for i := 6; i >= 0; i-- {
		want = append(want, strconv.Itoa(100+i))
	}
	var got []string
	var after *messenger.Position
	for page := 0; page < 5; page++ {
		items, err := db.ListTelegramSubscribers(ctx, "", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range items {
			got = append(got, s.ChatID)
		}
		if len(items) < 3 {
			break
		}
		last := items[len(items)-1]
		id, _ := strconv.ParseInt(last.ChatID, 10, 64)
		after = &messenger.Position{Since: last.SubscribedSince, ChatID: id}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages gave %v, want %v", got, want)
	}
	// One status, in pages of two across the other statuses' chats.
	db.ApplyTelegramUpdate(ctx, 51, &messenger.Change{Kind: messenger.Unsubscribe, ChatID: 105})
	for status, want := range map[messenger.SubscriberStatus][]string{
		messenger.Subscribed:   {"106", "104", "102", "101", "100"},
		messenger.Blocked:      {"103"},
		messenger.Unsubscribed: {"105"},
	} {
		var got []string
		after = nil
		for page := 0; page < 5; page++ {
			items, err := db.ListTelegramSubscribers(ctx, status, after, 2)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range items {
				got = append(got, s.ChatID)
				if s.Status != status {
					t.Fatalf("%s: listed %+v", status, s)
				}
			}
			if len(items) < 2 {
				break
			}
			last := items[len(items)-1]
			id, _ := strconv.ParseInt(last.ChatID, 10, 64)
			after = &messenger.Position{Since: last.SubscribedSince, ChatID: id}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: pages gave %v, want %v", status, got, want)
		}
	}
}

func testLease(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []string
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := "replica-" + strconv.Itoa(i)
			ok, err := db.AcquireLease(ctx, "poll", h, clk.Now().Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				winners = append(winners, h)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(winners) != 1 {
		t.Fatalf("%d holders, want 1", len(winners))
	}
	holder, other := winners[0], "someone-else"
	steps := []struct {
		desc    string
		advance time.Duration
		holder  string
		want    bool
	}{
		{"the holder renews", 30 * time.Second, holder, true},
		{"another is refused before expiry", 50 * time.Second, other, false},
		{"another takes an expired lease", 20 * time.Second, other, true},
		{"the old holder is refused now", 0, holder, false},
	}
	for _, st := range steps {
		clk.Advance(st.advance)
		ok, err := db.AcquireLease(ctx, "poll", st.holder, clk.Now().Add(time.Minute))
		if err != nil || ok != st.want {
			t.Fatalf("%s: ok=%v err=%v", st.desc, ok, err)
		}
	}
	if ok, _ := db.AcquireLease(ctx, "other-name", holder, clk.Now().Add(time.Minute)); !ok {
		t.Fatal("a lease of another name was refused")
	}
	db.ReleaseLease(ctx, "poll", holder) // not the holder: no effect
	if ok, _ := db.AcquireLease(ctx, "poll", holder, clk.Now().Add(time.Minute)); ok {
		t.Fatal("a release by a non-holder freed the lease")
	}
	db.ReleaseLease(ctx, "poll", other)
	if ok, _ := db.AcquireLease(ctx, "poll", holder, clk.Now().Add(time.Minute)); !ok {
		t.Fatal("a released lease was refused")
	}
}

// linkStart is /start carrying the link token of hash h from chat.
func linkStart(t *testing.T, db *sqlstore.DB, updateID, chat int64, h string) messenger.Outcome {
	t.Helper()
	out, err := db.ApplyTelegramUpdate(context.Background(), updateID, &messenger.Change{Kind: messenger.Subscribe, ChatID: chat, LinkTokenHash: h})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func linkedChat(t *testing.T, db *sqlstore.DB, userID string) string {
	t.Helper()
	sub, err := db.LinkedTelegramChat(context.Background(), userID)
	if errors.Is(err, storage.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return sub.ChatID
}

func testLinkTokens(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	start := clk.Now()
	for _, h := range []string{"fresh", "stale"} {
		if err := db.CreateTelegramLinkToken(ctx, "u1", h, start.Add(15*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		at         time.Duration
		chat       int64
		hash       string
		want       messenger.LinkResult
		wantLinked string // the chat linked to u1 after the step
	}{
		{time.Minute, 5, "nope", messenger.LinkNotFound, ""},
		{15 * time.Minute, 5, "stale", messenger.LinkExpired, ""},
		{14 * time.Minute, 6, "fresh", messenger.Linked, "6"},
		{14 * time.Minute, 7, "fresh", messenger.LinkUsed, "6"},
	}
	for i, st := range steps {
		clk.Set(start.Add(st.at))
		out := linkStart(t, db, int64(i+1), st.chat, st.hash)
		if out.Link != st.want || out.After == nil || out.After.Status != messenger.Subscribed {
			t.Fatalf("step %d: outcome %+v, want link %q and a subscribed chat", i, out, st.want)
		}
		if got := linkedChat(t, db, "u1"); got != st.wantLinked {
			t.Fatalf("step %d: linked chat %q, want %q", i, got, st.wantLinked)
		}
	}
	// Pruning keeps an expired token for a day, so an old link is still
	// answered "expired"; then it forgets it, and it links nothing.
	for i, st := range []struct {
		at   time.Duration
		want messenger.LinkResult
	}{
		{time.Hour, messenger.LinkExpired},
		{15*time.Minute + 25*time.Hour, messenger.LinkNotFound},
	} {
		clk.Set(start.Add(st.at))
		if _, err := db.Prune(ctx, start); err != nil {
			t.Fatal(err)
		}
		if out := linkStart(t, db, int64(10+i), 8, "stale"); out.Link != st.want {
			t.Fatalf("stale token after pruning at +%v: %+v, want %q", st.at, out, st.want)
		}
	}
}

func testLinks(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "u1")
	mustAccount(t, db, "u2")
	exp := clk.Now().Add(15 * time.Minute)
	for _, tok := range []struct{ user, hash string }{{"u1", "a"}, {"u1", "b"}, {"u2", "c"}} {
		if err := db.CreateTelegramLinkToken(ctx, tok.user, tok.hash, exp); err != nil {
			t.Fatal(err)
		}
	}
	linkStart(t, db, 1, 10, "a")
	linkStart(t, db, 2, 20, "c")
	// Relinking u1 from chat 11 moves the link: one chat per account.
	if out := linkStart(t, db, 3, 11, "b"); out.Link != messenger.Linked || out.After.UserID != "u1" {
		t.Fatalf("relink: %+v", out)
	}
	if got := linkedChat(t, db, "u1"); got != "11" {
		t.Fatalf("u1 linked to %q, want 11", got)
	}
	items, err := db.ListTelegramSubscribers(ctx, "", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]string{}
	for _, s := range items {
		users[s.ChatID] = s.UserID
	}
	if want := map[string]string{"10": "", "11": "u1", "20": "u2"}; fmt.Sprint(users) != fmt.Sprint(want) {
		t.Fatalf("subscriber users %v, want %v", users, want)
	}
	// /stop unlinks; unlinking keeps the chat subscribed.
	if out, err := db.ApplyTelegramUpdate(ctx, 4, &messenger.Change{Kind: messenger.Unsubscribe, ChatID: 11}); err != nil || out.After.UserID != "" {
		t.Fatalf("stop: %+v %v", out, err)
	}
	if got := linkedChat(t, db, "u1"); got != "" {
		t.Fatalf("u1 still linked to %q after /stop", got)
	}
	if ok, err := db.UnlinkTelegramChat(ctx, "u2"); err != nil || !ok {
		t.Fatalf("unlink u2: %v %v", ok, err)
	}
	if ok, err := db.UnlinkTelegramChat(ctx, "u2"); err != nil || ok {
		t.Fatalf("unlink u2 twice: %v %v", ok, err)
	}
	if got := linkedChat(t, db, "u2"); got != "" {
		t.Fatalf("u2 still linked to %q", got)
	}
	if n := count(t, db); n != 2 {
		t.Fatalf("%d subscribed chats, want 2 (10 and 20)", n)
	}
	// Deleting the account removes its link and its unused tokens.
	for _, h := range []string{"d1", "d2"} {
		if err := db.CreateTelegramLinkToken(ctx, "u1", h, exp); err != nil {
			t.Fatal(err)
		}
	}
	linkStart(t, db, 5, 12, "d1")
	if err := accounts.DeleteAccount(ctx, db, "u1", nil); err != nil {
		t.Fatal(err)
	}
	if got := linkedChat(t, db, "u1"); got != "" {
		t.Fatalf("deleted account still linked to %q", got)
	}
	if out := linkStart(t, db, 6, 13, "d2"); out.Link != messenger.LinkNotFound {
		t.Fatalf("a deleted account's token: %+v", out)
	}
}
