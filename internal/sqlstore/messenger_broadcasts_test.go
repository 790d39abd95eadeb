package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestMessengerBroadcastConformance(t *testing.T) {
	cases := []storeCase{
		{"WalkWithCursorAndCounters", testMessengerBroadcastWalk},
		{"LeaseExcludesOthersUntilExpiry", testMessengerBroadcastLease},
		{"CancelStopsTheWalk", testMessengerBroadcastCancel},
		{"StalledJobRequeuedOnce", testMessengerBroadcastRequeue},
		{"AudienceOfLinkedChats", testMessengerBroadcastAudience},
	}
	runConformance(t, cases, mustOpenWithMessengerWorker)
}

// mustOpenWithMessengerWorker registers the broadcast worker so that its
// River jobs can be inserted; the runner is never started.
func mustOpenWithMessengerWorker(t *testing.T, url string) (*sqlstore.DB, *testsupport.Clock) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &messenger.BroadcastWorker{})
	return mustOpenJobs(t, url, jobs.Config{Workers: workers})
}

func subscribeChats(t *testing.T, db *sqlstore.DB, ids ...int64) {
	t.Helper()
	for _, id := range ids {
		if _, err := db.ApplySubscriberChange(context.Background(), messenger.Change{Kind: messenger.Subscribe, ChatID: id}); err != nil {
			t.Fatal(err)
		}
	}
}

func mustCreateMessengerBroadcast(t *testing.T, db *sqlstore.DB, id string) messenger.Broadcast {
	t.Helper()
	b, err := db.CreateMessengerBroadcast(context.Background(), id, "Hello *all*", []byte(`{"Silent":true}`), nil, messenger.BroadcastArgs{JobID: id})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func testMessengerBroadcastWalk(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	subscribeChats(t, db, 30, -100, 10, 20, 40)
	if _, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Unsubscribe, ChatID: 40}); err != nil {
		t.Fatal(err)
	}
	b := mustCreateMessengerBroadcast(t, db, "mb1")
	if b.Status != messenger.BroadcastQueued || b.TotalRecipients != 4 || !b.Options.Silent || b.Message != "Hello *all*" {
		t.Fatalf("created %+v", b)
	}
	clk.Advance(time.Second)
	subscribeChats(t, db, 50) // after creation: not a recipient
	until := clk.Now().Add(time.Minute)
	j, held, err := db.AcquireMessengerBroadcast(ctx, "mb1", "w1", until)
	if err != nil || !held || j.Status != messenger.BroadcastRunning || j.StartedAt == nil {
		t.Fatalf("acquire: %v %v %+v", err, held, j)
	}
	var walked []int64
	for range 5 {
		batch, err := db.NextMessengerBroadcastBatch(ctx, "mb1", "w1", 3, until)
		if err != nil || batch.Stop {
			t.Fatalf("batch: %v %+v", err, batch)
		}
		if len(batch.ChatIDs) == 0 {
			break
		}
		walked = append(walked, batch.ChatIDs...)
		// The first chat of each batch blocked the bot, the others got it.
		p := messenger.BroadcastProgress{Cursor: batch.ChatIDs[len(batch.ChatIDs)-1], Blocked: 1, Sent: len(batch.ChatIDs) - 1}
		if ok, err := db.RecordMessengerBroadcast(ctx, "mb1", "w1", p, until); err != nil || !ok {
			t.Fatalf("record: %v %v", err, ok)
		}
	}
	if want := []int64{-100, 10, 20, 30}; !slices.Equal(walked, want) {
		t.Fatalf("walked %v, want %v (chat id order, subscribed at creation)", walked, want)
	}
	f, err := db.FinishMessengerBroadcast(ctx, "mb1", "w1", messenger.BroadcastCompleted, "")
	if err != nil || f.Status != messenger.BroadcastCompleted || f.Sent != 2 || f.Blocked != 2 || f.Failed != 0 || f.FinishedAt == nil {
		t.Fatalf("finish: %v %+v", err, f)
	}
	got, err := db.MessengerBroadcast(ctx, "mb1")
	if err != nil || got.Sent != 2 || got.Status != messenger.BroadcastCompleted {
		t.Fatalf("read back: %v %+v", err, got)
	}
	if _, err := db.MessengerBroadcast(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

func testMessengerBroadcastLease(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	subscribeChats(t, db, 1, 2, 3)
	mustCreateMessengerBroadcast(t, db, "mb1")
	until := clk.Now().Add(10 * time.Second)
	if _, held, err := db.AcquireMessengerBroadcast(ctx, "mb1", "w1", until); err != nil || !held {
		t.Fatalf("w1: %v %v", err, held)
	}
	batch, _ := db.NextMessengerBroadcastBatch(ctx, "mb1", "w1", 2, until)
	if _, err := db.RecordMessengerBroadcast(ctx, "mb1", "w1", messenger.BroadcastProgress{Cursor: batch.ChatIDs[1], Sent: 2}, until); err != nil {
		t.Fatal(err)
	}
	if _, held, err := db.AcquireMessengerBroadcast(ctx, "mb1", "w2", clk.Now().Add(10*time.Second)); err != nil || held {
		t.Fatalf("w2 took a live lease: %v %v", err, held)
	}
	// w1 dies; once its lease expires w2 takes over from the cursor.
	clk.Advance(11 * time.Second)
	until = clk.Now().Add(10 * time.Second)
	if _, held, err := db.AcquireMessengerBroadcast(ctx, "mb1", "w2", until); err != nil || !held {
		t.Fatalf("w2 after expiry: %v %v", err, held)
	}
	if b, err := db.NextMessengerBroadcastBatch(ctx, "mb1", "w1", 2, until); err != nil || !b.Stop {
		t.Fatalf("w1 still walks: %v %+v", err, b)
	}
	if ok, err := db.RecordMessengerBroadcast(ctx, "mb1", "w1", messenger.BroadcastProgress{Cursor: 3, Sent: 1}, until); err != nil || ok {
		t.Fatalf("w1 still records: %v %v", err, ok)
	}
	b, err := db.NextMessengerBroadcastBatch(ctx, "mb1", "w2", 2, until)
	if err != nil || !slices.Equal(b.ChatIDs, []int64{3}) {
		t.Fatalf("w2 resumes: %v %+v", err, b)
	}
}

func testMessengerBroadcastCancel(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	subscribeChats(t, db, 1, 2)
	mustCreateMessengerBroadcast(t, db, "mb1")
	until := clk.Now().Add(time.Minute)
	db.AcquireMessengerBroadcast(ctx, "mb1", "w1", until)
	c, err := db.CancelMessengerBroadcast(ctx, "mb1")
	if err != nil || c.Status != messenger.BroadcastCancelled || c.FinishedAt == nil {
		t.Fatalf("cancel: %v %+v", err, c)
	}
	// The batch that was out at the cancel is counted; the walk stops.
	if ok, err := db.RecordMessengerBroadcast(ctx, "mb1", "w1", messenger.BroadcastProgress{Cursor: 1, Sent: 1}, until); err != nil || !ok {
		t.Fatalf("record the batch out at the cancel: %v %v", err, ok)
	}
	if ok, err := db.RecordMessengerBroadcast(ctx, "mb1", "w2", messenger.BroadcastProgress{Cursor: 2, Sent: 1}, until); err != nil || ok {
		t.Fatalf("record by another worker: %v %v", err, ok)
	}
	if b, err := db.NextMessengerBroadcastBatch(ctx, "mb1", "w1", 2, until); err != nil || !b.Stop {
		t.Fatalf("walk after cancel: %v %+v", err, b)
	}
	if got, err := db.MessengerBroadcast(ctx, "mb1"); err != nil || got.Sent != 1 || got.Status != messenger.BroadcastCancelled {
		t.Fatalf("after cancel: %v %+v, want cancelled with the batch's 1 sent", err, got)
	}
	if f, err := db.FinishMessengerBroadcast(ctx, "mb1", "w1", messenger.BroadcastCompleted, ""); err != nil || f.Status != messenger.BroadcastCancelled {
		t.Fatalf("finish after cancel: %v %+v", err, f)
	}
	if again, err := db.CancelMessengerBroadcast(ctx, "mb1"); err != nil || again.Status != messenger.BroadcastCancelled {
		t.Fatalf("cancel twice: %v %+v", err, again)
	}
	if _, err := db.CancelMessengerBroadcast(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
}

func testMessengerBroadcastRequeue(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	subscribeChats(t, db, 1)
	mustCreateMessengerBroadcast(t, db, "mb1")
	db.AcquireMessengerBroadcast(ctx, "mb1", "w1", clk.Now().Add(10*time.Second))
	newJob := func(id string) river.JobArgs { return messenger.BroadcastArgs{JobID: id} }
	if ids, err := db.RequeueStalledMessengerBroadcasts(ctx, 10*time.Second, newJob); err != nil || len(ids) != 0 {
		t.Fatalf("live lease requeued: %v %v", err, ids)
	}
	clk.Advance(11 * time.Second)
	if ids, err := db.RequeueStalledMessengerBroadcasts(ctx, 10*time.Second, newJob); err != nil || !slices.Equal(ids, []string{"mb1"}) {
		t.Fatalf("expired lease: %v %v", err, ids)
	}
	if ids, err := db.RequeueStalledMessengerBroadcasts(ctx, 10*time.Second, newJob); err != nil || len(ids) != 0 {
		t.Fatalf("requeued twice: %v %v", err, ids)
	}
}

// testMessengerBroadcastAudience: with an audience, a broadcast goes to the
// subscribed chats linked to enabled accounts in it, and its count agrees
// with its walk; without one, to every subscribed chat.
func testMessengerBroadcastAudience(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, u := range []struct {
		id, platform, plan string
		chat               int64
		expires            time.Duration
	}{
		{"u1", "android", "premium", 11, time.Hour},
		{"u2", "ios", "trial", 12, time.Hour},
		{"u3", "android", "premium", 13, time.Hour},  // disabled below
		{"u4", "android", "premium", 15, -time.Hour}, // expired
	} {
		mustAccount(t, db, u.id)
		if _, err := devices.Register(ctx, db, devices.NewDevice{ID: "d-" + u.id, AccountID: u.id, Platform: u.platform, Name: "Phone", PushToken: "tok-" + u.id}, allowAll); err != nil {
			t.Fatal(err)
		}
		if _, _, err := subscriptions.Set(ctx, db, u.id, u.plan, clk.Now().Add(u.expires), nil); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Subscribe, ChatID: u.chat, LinkUserID: u.id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SetDisabled(ctx, "u3", true, "test", nil); err != nil {
		t.Fatal(err)
	}
	subscribeChats(t, db, 14) // not linked
	clk.Advance(time.Second)

	cases := []struct {
		name string
		to   *audience.Audience
		want []int64
	}{
		{"no audience: every subscribed chat", nil, []int64{11, 12, 13, 14, 15}},
		{"empty audience: every linked chat of an enabled account", &audience.Audience{}, []int64{11, 12, 15}},
		{"platform", &audience.Audience{Platforms: []string{"ios"}}, []int64{12}},
		{"plan and active", &audience.Audience{Plans: []string{"premium"}, SubscriptionStatus: "active"}, []int64{11}},
		{"expired", &audience.Audience{SubscriptionStatus: "expired"}, []int64{15}},
		{"nobody", &audience.Audience{Plans: []string{"gold"}}, nil},
	}
	for i, c := range cases {
		id := fmt.Sprintf("ma%d", i)
		b, err := db.CreateMessengerBroadcast(ctx, id, "Hi", []byte(`{}`), c.to, messenger.BroadcastArgs{JobID: id})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if b.TotalRecipients != len(c.want) {
			t.Errorf("%s: totalRecipients %d, want %d", c.name, b.TotalRecipients, len(c.want))
		}
		if (b.Audience == nil) != (c.to == nil) || (c.to != nil && !slices.Equal(b.Audience.Platforms, c.to.Platforms)) {
			t.Errorf("%s: audience read back as %+v", c.name, b.Audience)
		}
		until := clk.Now().Add(time.Minute)
		if _, held, err := db.AcquireMessengerBroadcast(ctx, id, "w", until); err != nil || !held {
			t.Fatalf("%s: acquire: %v %v", c.name, err, held)
		}
		batch, err := db.NextMessengerBroadcastBatch(ctx, id, "w", 100, until)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(batch.ChatIDs, c.want) {
			t.Errorf("%s: walked %v, want %v", c.name, batch.ChatIDs, c.want)
		}
	}
}
