package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/riverqueue/river"
)

func TestDevicesConformance(t *testing.T) {
	cases := []storeCase{
		{"RegisterListUpdateDeactivate", testDeviceLifecycle},
		{"TokenMovesToNewDevice", testTokenMoves},
		{"SameAccountSameTokenRefreshes", testReRegister},
		{"AllowSeesQuotaAndAborts", testAllow},
		{"ConcurrentRegistrationsHoldTheLimit", testConcurrentLimit},
		{"OtherAccountsDeviceIsNotFound", testOtherAccount},
		{"AdminDevicesKeyset", testAdminDevices},
		{"SetSubscription", testSetSubscription},
		{"ImportRows", testImportRows},
		{"BroadcastLifecycle", testBroadcastLifecycle},
		{"BroadcastPreferences", testBroadcastPreferences},
		{"BroadcastLease", testBroadcastLease},
		{"BroadcastReclaimAndRetry", testBroadcastReclaim},
		{"BroadcastCancelAndList", testBroadcastCancelAndList},
		{"RequeueStalledBroadcasts", testRequeueStalledBroadcasts},
	}
	runConformance(t, cases, mustOpenWithWorkers)
}

// mustOpenWithWorkers is mustOpen with the broadcast worker (and the
// email channel's) registered, so
// that broadcast jobs can be inserted (River refuses unknown kinds). The
// job runner is never started.
func mustOpenWithWorkers(t *testing.T, url string) (*sqlstore.DB, *testsupport.Clock) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &notifications.BroadcastWorker{})
	// A broadcast's email walk queues the email channel's jobs.
	river.AddWorker(workers, river.WorkFunc(func(context.Context, *river.Job[notifications.EmailArgs]) error { return nil }))
	return mustOpenJobs(t, url, jobs.Config{Workers: workers})
}

func allowAll(devices.Quota) error { return nil }

func mustAccount(t *testing.T, db *sqlstore.DB, id string) {
	t.Helper()
	if _, _, err := accounts.Create(context.Background(), db, newAccount(id, id+"@example.com", "CODE"+id)); err != nil {
		t.Fatal(err)
	}
}

func mustRegister(t *testing.T, db *sqlstore.DB, id, account, token string) devices.Device {
	t.Helper()
	d, err := devices.Register(context.Background(), db, devices.NewDevice{ID: id, AccountID: account, Platform: "android", Name: "Phone " + id, PushToken: token}, allowAll)
	if err != nil {
		t.Fatalf("register %s: %v", id, err)
	}
	return d
}

func testDeviceLifecycle(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	d := mustRegister(t, db, "d1", "a1", "tok-1")
	want := devices.Device{ID: "d1", AccountID: "a1", Platform: "android", Name: "Phone d1", PushToken: "tok-1", Active: true,
		PushTokenStatus: "valid", CreatedAt: clk.Now(), LastSeenAt: clk.Now()}
	if d != want {
		t.Fatalf("registered %+v, want %+v", d, want)
	}
	list, err := db.ListDevices(ctx, "a1")
	if err != nil || len(list) != 1 || list[0] != want {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if err := db.InvalidatePushToken(ctx, "d1", "tok-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.DeviceByID(ctx, "d1"); got.PushTokenStatus != "invalid" {
		t.Fatalf("after invalidate: %+v", got)
	}
	clk.Advance(time.Hour)
	d, err = db.UpdatePushToken(ctx, "a1", "d1", "tok-2")
	if err != nil || d.PushToken != "tok-2" || d.PushTokenStatus != "valid" || !d.LastSeenAt.Equal(clk.Now()) {
		t.Fatalf("update = %+v, %v", d, err)
	}
	if err := db.DeactivateDevice(ctx, "a1", "d1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeactivateDevice(ctx, "a1", "d1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second deactivate: %v", err)
	}
	if list, _ := db.ListDevices(ctx, "a1"); len(list) != 0 {
		t.Fatalf("inactive device listed: %+v", list)
	}
	got, err := db.DeviceByID(ctx, "d1")
	if err != nil || got.Active || got.PushToken != "" {
		t.Fatalf("removed device = %+v, %v", got, err)
	}
	if _, err := db.UpdatePushToken(ctx, "a1", "d1", "tok-3"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update inactive: %v", err)
	}
	if _, err := db.DeviceByID(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown device: %v", err)
	}
}

func testTokenMoves(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	mustRegister(t, db, "d1", "a1", "shared")
	mustRegister(t, db, "d2", "a2", "shared")
	old, _ := db.DeviceByID(ctx, "d1")
	if old.PushToken != "" || old.PushTokenStatus != "invalid" || !old.Active {
		t.Fatalf("old device kept the token: %+v", old)
	}
	// And back through an update.
	mustRegister(t, db, "d3", "a1", "other")
	if _, err := db.UpdatePushToken(ctx, "a1", "d3", "shared"); err != nil {
		t.Fatal(err)
	}
	if d2, _ := db.DeviceByID(ctx, "d2"); d2.PushToken != "" {
		t.Fatalf("d2 kept the token: %+v", d2)
	}
}

func testReRegister(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	first := mustRegister(t, db, "d1", "a1", "tok")
	db.InvalidatePushToken(ctx, "d1", "tok")
	clk.Advance(time.Minute)
	called := false
	d, err := devices.Register(ctx, db, devices.NewDevice{ID: "d2", AccountID: "a1", Platform: "ios", Name: "Renamed", PushToken: "tok"},
		func(devices.Quota) error { called = true; return errors.New("limit") })
	if err != nil || called {
		t.Fatalf("re-register: %v, allow called %v", err, called)
	}
	if d.ID != first.ID || d.Platform != "ios" || d.Name != "Renamed" || d.PushTokenStatus != "valid" || !d.LastSeenAt.Equal(clk.Now()) {
		t.Fatalf("re-registered %+v", d)
	}
}

func testAllow(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustRegister(t, db, "d1", "a1", "t1")
	mustRegister(t, db, "d2", "a1", "t2")
	db.DeactivateDevice(ctx, "a1", "d2")
	var got devices.Quota
	refuse := errors.New("refused")
	_, err := devices.Register(ctx, db, devices.NewDevice{ID: "d3", AccountID: "a1", Platform: "android", Name: "x", PushToken: "t3"},
		func(q devices.Quota) error { got = q; return refuse })
	if !errors.Is(err, refuse) {
		t.Fatalf("err = %v", err)
	}
	want := devices.Quota{Subscription: subscriptions.Subscription{Plan: "trial", ExpiresAt: clk.Now().Add(7 * 24 * time.Hour), Source: subscriptions.TrialGrant}, ActiveDevices: 1}
	if got != want {
		t.Fatalf("quota %+v, want %+v", got, want)
	}
	if _, err := db.DeviceByID(ctx, "d3"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("a refused registration left a device")
	}
	_, err = devices.Register(ctx, db, devices.NewDevice{ID: "d4", AccountID: "nobody", Platform: "android", Name: "x", PushToken: "t4"}, allowAll)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
}

func testConcurrentLimit(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	limit := func(q devices.Quota) error {
		if q.ActiveDevices >= 3 {
			return errors.New("limit")
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = devices.Register(ctx, db, devices.NewDevice{ID: fmt.Sprint("d", i), AccountID: "a1", Platform: "android", Name: "x", PushToken: fmt.Sprint("t", i)}, limit)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		}
	}
	list, _ := db.ListDevices(ctx, "a1")
	if ok != 3 || len(list) != 3 {
		t.Fatalf("%d registrations succeeded, %d devices; want 3", ok, len(list))
	}
}

func testOtherAccount(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	mustRegister(t, db, "d1", "a1", "t1")
	if _, err := db.UpdatePushToken(ctx, "a2", "d1", "t2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("update: %v", err)
	}
	if err := db.DeactivateDevice(ctx, "a2", "d1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deactivate: %v", err)
	}
}

func testAdminDevices(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	for i, acct := range []string{"a1", "a2", "a1", "a2", "a1"} {
		mustRegister(t, db, fmt.Sprint("d", i), acct, fmt.Sprint("t", i))
	}
	db.DeactivateDevice(ctx, "a1", "d2")
	ids := func(ds []devices.Device) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.ID)
		}
		return out
	}
	tests := []struct {
		account, after string
		limit          int
		want           []string
	}{
		{"", "", 2, []string{"d0", "d1"}},
		{"", "d1", 2, []string{"d2", "d3"}},
		{"", "d3", 2, []string{"d4"}},
		{"a1", "", 10, []string{"d0", "d2", "d4"}},
		{"a1", "d0", 1, []string{"d2"}},
		{"a2", "d3", 10, nil},
	}
	for _, tt := range tests {
		got, err := db.AdminDevices(ctx, tt.account, tt.after, tt.limit)
		if err != nil || !slices.Equal(ids(got), tt.want) {
			t.Errorf("AdminDevices(%q, %q, %d) = %v, %v; want %v", tt.account, tt.after, tt.limit, ids(got), err, tt.want)
		}
	}
}

func testSetSubscription(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	exp := clk.Now().Add(30 * 24 * time.Hour)
	sub, changed, err := subscriptions.Set(ctx, db, "a1", "premium", exp, nil)
	if err != nil || !changed || sub.Plan != "premium" || !sub.ExpiresAt.Equal(exp) {
		t.Fatalf("set subscription: %+v, %v, %v", sub, changed, err)
	}
	if a, _ := db.AccountByID(ctx, "a1"); a.Subscription != sub {
		t.Fatalf("stored %+v, want %+v", a.Subscription, sub)
	}
	// The same call again is no change (the billing hook's idempotence).
	if again, changed, err := subscriptions.Set(ctx, db, "a1", "premium", exp, nil); err != nil || changed || again != sub {
		t.Fatalf("repeated set: %+v, changed %v, %v", again, changed, err)
	}
	if _, changed, err := subscriptions.Set(ctx, db, "a1", "basic", exp, nil); err != nil || !changed {
		t.Fatalf("new plan: changed %v, %v", changed, err)
	}
	if _, _, err := subscriptions.Set(ctx, db, "nobody", "basic", exp, nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
}

// testImportRows checks the row-level reads and writes of an import batch;
// which line wins a token is devices.planImport's, tested there.
func testImportRows(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	mustRegister(t, db, "old1", "a1", "held-by-a1")
	mustRegister(t, db, "old2", "a2", "held-by-a2")
	err := db.InImportTx(ctx, func(tx devices.ImportTx) error {
		accountOf, err := tx.AccountIDsByEmail(ctx, []string{"a1@example.com", "ghost@example.com", "a2@example.com"})
		if err != nil {
			return err
		}
		if want := map[string]string{"a1@example.com": "a1", "a2@example.com": "a2"}; !maps.Equal(accountOf, want) {
			t.Errorf("accounts %v, want %v", accountOf, want)
		}
		held, err := tx.TokenHolders(ctx, []string{"held-by-a1", "fresh", "held-by-a2"})
		if err != nil {
			return err
		}
		if want := map[string]devices.TokenHolder{"held-by-a1": {DeviceID: "old1", AccountID: "a1"}, "held-by-a2": {DeviceID: "old2", AccountID: "a2"}}; !maps.Equal(held, want) {
			t.Errorf("holders %v, want %v", held, want)
		}
		if err := tx.DropTokens(ctx, []string{"old2"}); err != nil {
			return err
		}
		return tx.PutDevices(ctx, []devices.ImportedDevice{
			{ID: "n1", AccountID: "a1", Platform: "ios", Name: "iOS device"},                         // lost its token
			{ID: "old1", AccountID: "a1", Platform: "ios", PushToken: "held-by-a1"},                  // refreshed, name kept
			{ID: "n3", AccountID: "a1", Platform: "android", Name: "Moved", PushToken: "held-by-a2"}, // took old2's token
			{ID: "n5", AccountID: "a2", Platform: "android", Name: "Renamed", PushToken: "fresh"},    // created
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	check := []struct {
		id, account, platform, token, status, name string
	}{
		{"n1", "a1", "ios", "", "invalid", "iOS device"},
		{"old1", "a1", "ios", "held-by-a1", "valid", "Phone old1"},
		{"n3", "a1", "android", "held-by-a2", "valid", "Moved"},
		{"old2", "a2", "android", "", "invalid", "Phone old2"},
		{"n5", "a2", "android", "fresh", "valid", "Renamed"},
	}
	for _, c := range check {
		d, err := db.DeviceByID(ctx, c.id)
		if err != nil || d.AccountID != c.account || d.Platform != c.platform || d.PushToken != c.token || d.PushTokenStatus != c.status || d.Name != c.name || !d.Active {
			t.Errorf("%s = %+v, %v; want %+v", c.id, d, err, c)
		}
	}
	// A batch whose function fails writes nothing.
	failed := errors.New("stop")
	err = db.InImportTx(ctx, func(tx devices.ImportTx) error {
		if err := tx.PutDevices(ctx, []devices.ImportedDevice{{ID: "n9", AccountID: "a1", Platform: "ios", Name: "x", PushToken: "t9"}}); err != nil {
			return err
		}
		return failed
	})
	if !errors.Is(err, failed) {
		t.Fatalf("failed batch: %v", err)
	}
	if _, err := db.DeviceByID(ctx, "n9"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("rolled-back device: %v", err)
	}
}

// seedRecipients registers n android devices d000… of account a1.
func seedRecipients(t *testing.T, db *sqlstore.DB, n int) {
	t.Helper()
	mustAccount(t, db, "a1")
	var ds []devices.ImportedDevice
	for i := range n {
		ds = append(ds, devices.ImportedDevice{ID: fmt.Sprintf("d%03d", i), AccountID: "a1", Platform: "android", Name: "x", PushToken: fmt.Sprintf("t%03d", i)})
	}
	ctx := context.Background()
	if err := db.InImportTx(ctx, func(tx devices.ImportTx) error { return tx.PutDevices(ctx, ds) }); err != nil {
		t.Fatal(err)
	}
}

func claimIDs(cs []notifications.Claim) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.DeviceID)
	}
	return out
}

func testBroadcastLifecycle(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 5)
	db.DeactivateDevice(ctx, "a1", "d001")
	db.InvalidatePushToken(ctx, "d003", "t003")
	// A device registered without a token has nothing to be sent to: not
	// a recipient, so the job's outcomes add up to its total at the end.
	if _, err := devices.Register(ctx, db, devices.NewDevice{ID: "d005", AccountID: "a1", Platform: "android"}, allowAll); err != nil {
		t.Fatal(err)
	}
	j, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "Hi", Content: "Body", Data: []byte(`{"k":1}`)}, notifications.BroadcastArgs{JobID: "job1"})
	if err != nil {
		t.Fatal(err)
	}
	if j.Status != "queued" || j.TotalRecipients != 3 || fmt.Sprint(j.Data["k"]) != "1" || !j.CreatedAt.Equal(clk.Now()) {
		t.Fatalf("created %+v", j)
	}
	until := clk.Now().Add(time.Minute)
	l, err := db.AcquireBroadcast(ctx, "job1", "w1", until)
	if err != nil || !l.Acquired || l.Job.Status != "running" || l.Job.StartedAt == nil {
		t.Fatalf("acquire %+v, %v", l, err)
	}
	c, err := db.ClaimNextBatch(ctx, "job1", "w1", 2, until)
	if err != nil || c.Stop || c.Done || !slices.Equal(claimIDs(c.Claims), []string{"d000", "d002"}) || c.Claims[0].Token != "t000" || c.Claims[0].Platform != "android" {
		t.Fatalf("first batch %+v, %v", c, err)
	}
	// A device registered after the broadcast was queued is not a recipient.
	clk.Advance(time.Second)
	mustRegister(t, db, "d999", "a1", "late")
	c2, err := db.ClaimNextBatch(ctx, "job1", "w1", 2, until)
	if err != nil || !c2.Done || !slices.Equal(claimIDs(c2.Claims), []string{"d004"}) {
		t.Fatalf("second batch %+v, %v", c2, err)
	}
	kept, err := db.RecordDeliveries(ctx, "job1", "w1", notifications.Record{Outcomes: []notifications.Outcome{
		{DeviceID: "d000", Token: "t000", Status: "sent"},
		{DeviceID: "d002", Token: "t002", Status: "invalid"},
		{DeviceID: "d004", Token: "t004", Status: "failed"},
		{DeviceID: "d000", Token: "t000", Status: "sent"}, // a repeat is not counted twice
	}}, until)
	if err != nil || !kept {
		t.Fatalf("record: %v kept=%v", err, kept)
	}
	if d, _ := db.DeviceByID(ctx, "d002"); d.PushTokenStatus != "invalid" {
		t.Fatalf("dead token not marked: %+v", d)
	}
	if c3, _ := db.ClaimNextBatch(ctx, "job1", "w1", 2, until); !c3.Done || len(c3.Claims) != 0 {
		t.Fatalf("after the walk: %+v", c3)
	}
	j, err = db.FinishBroadcast(ctx, "job1", "w1", "completed", "")
	if err != nil || j.Status != "completed" || j.Sent != 1 || j.InvalidTokens != 1 || j.Failed != 1 || j.FinishedAt == nil {
		t.Fatalf("finished %+v, %v", j, err)
	}
	// Housekeeping drops the delivery records of finished jobs once they are
	// old enough, and keeps the job and its counters.
	if p, _ := db.Prune(ctx, clk.Now().Add(-time.Hour)); p.Deliveries != 0 {
		t.Fatalf("pruned the deliveries of a recent job: %+v", p)
	}
	if p, _ := db.Prune(ctx, clk.Now().Add(time.Hour)); p.Deliveries != 3 {
		t.Fatalf("pruned %+v, want 3 deliveries", p)
	}
	if kept, _ := db.BroadcastJob(ctx, "job1"); kept.Sent != 1 || kept.Status != "completed" {
		t.Fatalf("the job after pruning: %+v", kept)
	}
	l, err = db.AcquireBroadcast(ctx, "job1", "w2", until)
	if err != nil || l.Acquired || !l.Job.Finished() {
		t.Fatalf("acquire finished job: %+v, %v", l, err)
	}
	if _, err := db.AcquireBroadcast(ctx, "nope", "w1", until); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

func testBroadcastLease(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 3)
	db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: "job1"})
	if l, _ := db.AcquireBroadcast(ctx, "job1", "w1", clk.Now().Add(time.Minute)); !l.Acquired {
		t.Fatal("first acquire failed")
	}
	l, err := db.AcquireBroadcast(ctx, "job1", "w2", clk.Now().Add(time.Minute))
	// The holder's end, on this store's clock (on PostgreSQL read from the
	// database's clock: within the round trips' jitter).
	if d := clk.Now().Add(time.Minute).Sub(l.Until).Abs(); err != nil || l.Acquired || l.HeldBy != "w1" || d > time.Second {
		t.Fatalf("second acquire %+v, %v", l, err)
	}
	if c, _ := db.ClaimNextBatch(ctx, "job1", "w2", 10, clk.Now().Add(time.Minute)); !c.Stop {
		t.Fatal("a worker without the lease claimed")
	}
	clk.Advance(2 * time.Minute)
	if l, _ := db.AcquireBroadcast(ctx, "job1", "w2", clk.Now().Add(time.Minute)); !l.Acquired {
		t.Fatal("an expired lease was not taken over")
	}
	kept, err := db.RecordDeliveries(ctx, "job1", "w1", notifications.Record{Sent: 3, Settled: "d002"}, clk.Now().Add(time.Minute))
	if err != nil || kept {
		t.Fatalf("old owner kept the lease: %v %v", kept, err)
	}
	if j, _ := db.BroadcastJob(ctx, "job1"); j.Sent != 0 {
		t.Fatalf("an old owner's settled sends were counted: %+v", j)
	}
	if err := db.ReleaseBroadcast(ctx, "job1", "w2"); err != nil {
		t.Fatal(err)
	}
	if l, _ := db.AcquireBroadcast(ctx, "job1", "w3", clk.Now().Add(time.Minute)); !l.Acquired {
		t.Fatal("a released lease was not free")
	}
}

func testBroadcastReclaim(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 7)
	db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: "job1"})
	until := clk.Now().Add(time.Minute)
	db.AcquireBroadcast(ctx, "job1", "w1", until)
	c, _ := db.ClaimNextBatch(ctx, "job1", "w1", 6, until)
	if len(c.Claims) != 6 || c.Last != "d005" {
		t.Fatalf("claimed %v (last %q)", claimIDs(c.Claims), c.Last)
	}
	// w1 writes two outcomes as rows and dies with the rest unknown.
	db.RecordDeliveries(ctx, "job1", "w1", notifications.Record{Outcomes: []notifications.Outcome{
		{DeviceID: "d000", Status: "sent"}, {DeviceID: "d001", Status: "retry"},
	}}, until)
	db.DeactivateDevice(ctx, "a1", "d003") // no longer a recipient
	clk.Advance(2 * time.Minute)
	until = clk.Now().Add(time.Minute)
	if l, _ := db.AcquireBroadcast(ctx, "job1", "w2", until); !l.Acquired {
		t.Fatal("takeover failed")
	}
	// The rows to take up: the retry only.
	r, err := db.ReclaimDeliveries(ctx, "job1", "w2", false, "", 3, until)
	if err != nil || !slices.Equal(claimIDs(r.Claims), []string{"d001"}) || r.Last != "d001" {
		t.Fatalf("reclaim page 1 %+v, %v", r, err)
	}
	if r, _ := db.ReclaimDeliveries(ctx, "job1", "w2", false, r.Last, 3, until); r.Last != "" {
		t.Fatalf("reclaim page 2 %+v", r)
	}
	// The walk's devices of unknown outcome: claimed, without a row, still
	// recipients; the last page ends at the walk's cursor, not beyond (d006
	// was never claimed).
	steps := []struct {
		after, last string
		want        []string
		done        bool
	}{
		{"", "d004", []string{"d002", "d004"}, false},
		{"d004", "d005", []string{"d005"}, true},
	}
	for _, st := range steps {
		r, err := db.ResumeWalk(ctx, "job1", "w2", st.after, 2, until)
		if err != nil || !slices.Equal(claimIDs(r.Claims), st.want) || r.Last != st.last || r.Done != st.done {
			t.Fatalf("resume after %q: %+v, %v; want %v up to %q", st.after, r, err, st.want, st.last)
		}
	}
	if r, _ := db.ResumeWalk(ctx, "job1", "w1", "", 10, until); !r.Stop {
		t.Fatalf("the old owner resumed: %+v", r)
	}
	// w2 settles through d004: d002 and d004 counted without rows, d001's
	// retry sent, and d000's row (not w2's claim) left alone.
	kept, err := db.RecordDeliveries(ctx, "job1", "w2", notifications.Record{Outcomes: []notifications.Outcome{
		{DeviceID: "d001", Status: "sent"}, {DeviceID: "d000", Status: "failed"},
	}, Sent: 2, Settled: "d004"}, until)
	if err != nil || !kept {
		t.Fatalf("record: %v, kept %v", err, kept)
	}
	if r, _ := db.ResumeWalk(ctx, "job1", "w2", "", 10, until); !slices.Equal(claimIDs(r.Claims), []string{"d005"}) || !r.Done {
		t.Fatalf("after settling through d004: %+v", r)
	}
	db.RecordDeliveries(ctx, "job1", "w2", notifications.Record{Outcomes: []notifications.Outcome{{DeviceID: "d005", Status: "failed"}}, Settled: "d005"}, until)
	if r, _ := db.ResumeWalk(ctx, "job1", "w2", "", 10, until); len(r.Claims) != 0 || !r.Done || r.Last != "" {
		t.Fatalf("after settling the walk: %+v", r)
	}
	// The walk goes on after its cursor.
	if c, _ := db.ClaimNextBatch(ctx, "job1", "w2", 6, until); !slices.Equal(claimIDs(c.Claims), []string{"d006"}) || !c.Done {
		t.Fatalf("the walk after the takeover: %+v", c)
	}
	db.RecordDeliveries(ctx, "job1", "w2", notifications.Record{Sent: 1, Settled: "d006"}, until)
	if r, _ := db.ReclaimDeliveries(ctx, "job1", "w2", true, "", 10, until); r.Last != "" {
		t.Fatalf("retries left: %+v", r)
	}
	j, _ := db.FinishBroadcast(ctx, "job1", "w2", "completed", "")
	if j.Sent != 5 || j.Failed != 1 || j.Status != "completed" {
		t.Fatalf("job %+v, want 5 sent (d000, d001, d002, d004, d006) and 1 failed (d005)", j)
	}
}

func testRequeueStalledBroadcasts(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 2)
	for _, id := range []string{"queued", "live", "dead", "released", "done"} {
		if _, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: id}); err != nil {
			t.Fatal(err)
		}
	}
	db.AcquireBroadcast(ctx, "live", "w1", clk.Now().Add(time.Minute))
	db.AcquireBroadcast(ctx, "dead", "w2", clk.Now().Add(time.Second))
	db.AcquireBroadcast(ctx, "released", "w3", clk.Now().Add(time.Minute))
	db.ReleaseBroadcast(ctx, "released", "w3")
	db.AcquireBroadcast(ctx, "done", "w4", clk.Now().Add(time.Second))
	db.FinishBroadcast(ctx, "done", "w4", "completed", "")
	var queuedFor []string
	requeue := func() []string {
		t.Helper()
		ids, err := db.RequeueStalledBroadcasts(ctx, 30*time.Second, func(id string) river.JobArgs {
			queuedFor = append(queuedFor, id)
			return notifications.BroadcastArgs{JobID: id}
		})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := requeue(); !slices.Equal(got, []string{"released"}) {
		t.Fatalf("within the dead worker's lease: requeued %v, want [released]", got)
	}
	clk.Advance(2 * time.Second)
	if got := requeue(); !slices.Equal(got, []string{"dead"}) {
		t.Fatalf("after the lease expired: requeued %v, want [dead]", got)
	}
	if got := requeue(); len(got) != 0 {
		t.Fatalf("requeued again at once: %v", got)
	}
	clk.Advance(31 * time.Second)
	if got := requeue(); !slices.Equal(got, []string{"dead", "released"}) {
		t.Fatalf("still stalled after another lease period: requeued %v", got)
	}
	if !slices.Equal(queuedFor, []string{"released", "dead", "dead", "released"}) {
		t.Fatalf("jobs made for %v", queuedFor)
	}
}

func testBroadcastCancelAndList(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 2)
	for _, id := range []string{"job1", "job2", "job3"} {
		if _, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: id}); err != nil {
			t.Fatal(err)
		}
	}
	db.AcquireBroadcast(ctx, "job2", "w1", clk.Now().Add(time.Minute))
	j, err := db.CancelBroadcast(ctx, "job2")
	if err != nil || j.Status != "cancelled" || j.FinishedAt == nil {
		t.Fatalf("cancel %+v, %v", j, err)
	}
	if c, _ := db.ClaimNextBatch(ctx, "job2", "w1", 10, clk.Now().Add(time.Minute)); !c.Stop {
		t.Fatal("a cancelled job went on")
	}
	if j, _ := db.CancelBroadcast(ctx, "job2"); j.Status != "cancelled" {
		t.Fatalf("second cancel %+v", j)
	}
	if _, err := db.CancelBroadcast(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
	page := func(before string, n int) []string {
		js, err := db.BroadcastJobs(ctx, before, n)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	if got := page("", 2); !slices.Equal(got, []string{"job3", "job2"}) {
		t.Fatalf("page 1 %v", got)
	}
	if got := page("job2", 2); !slices.Equal(got, []string{"job1"}) {
		t.Fatalf("page 2 %v", got)
	}
}

// setPreference stores one notification setting of an account.
func setPreference(t *testing.T, db *sqlstore.DB, account, category, channel string, on bool) {
	t.Helper()
	ctx := context.Background()
	if err := db.InTx(ctx, func(ctx context.Context) error {
		return db.SetNotificationSettings(ctx, account, []preferences.Setting{{Category: category, Channel: channel, Enabled: on}})
	}); err != nil {
		t.Fatal(err)
	}
}

// A broadcast's walk skips, and counts, the devices whose owner turned
// its category off on push when the walk reaches them: a preference
// changed while the broadcast runs is obeyed for the devices not yet
// claimed; another category or channel is not affected; a resumed walk
// does not send to a device skipped.
func testBroadcastPreferences(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedRecipients(t, db, 4) // a1: d000..d003
	mustAccount(t, db, "a2")
	mustRegister(t, db, "e000", "a2", "u000")
	setPreference(t, db, "a2", "product", "telegram", false) // another channel
	setPreference(t, db, "a2", "service", "push", false)     // another category
	j, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "Hi", Content: "Body", Category: "product"}, notifications.BroadcastArgs{JobID: "job1"})
	if err != nil || j.Category != "product" || j.TotalRecipients != 5 {
		t.Fatalf("created %+v, %v", j, err)
	}
	until := clk.Now().Add(time.Minute)
	if l, err := db.AcquireBroadcast(ctx, "job1", "w1", until); err != nil || !l.Acquired {
		t.Fatalf("acquire %+v, %v", l, err)
	}
	c, err := db.ClaimNextBatch(ctx, "job1", "w1", 2, until)
	if err != nil || !slices.Equal(claimIDs(c.Claims), []string{"d000", "d001"}) || c.Last != "d001" {
		t.Fatalf("first batch %+v, %v", c, err)
	}
	// a1 turns product push off while the broadcast runs.
	setPreference(t, db, "a1", "product", "push", false)
	c, err = db.ClaimNextBatch(ctx, "job1", "w1", 2, until)
	if err != nil || len(c.Claims) != 0 || c.Last != "d003" || c.Done {
		t.Fatalf("second batch, both devices opted out: %+v, %v", c, err)
	}
	c, err = db.ClaimNextBatch(ctx, "job1", "w1", 2, until)
	if err != nil || !slices.Equal(claimIDs(c.Claims), []string{"e000"}) || !c.Done {
		t.Fatalf("last batch %+v, %v", c, err)
	}
	if j, _ := db.BroadcastJob(ctx, "job1"); j.OptedOut != 2 {
		t.Fatalf("opted out %d, want 2", j.OptedOut)
	}
	// Nothing is settled: a new run resumes the walk's claims, and not the
	// skipped devices, even with the preference turned back on.
	setPreference(t, db, "a1", "product", "push", true)
	r, err := db.ResumeWalk(ctx, "job1", "w1", "", 10, until)
	if err != nil || !slices.Equal(claimIDs(r.Claims), []string{"d000", "d001", "e000"}) {
		t.Fatalf("resume %+v, %v", r, err)
	}
}
