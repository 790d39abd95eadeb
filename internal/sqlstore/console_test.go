package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// The operator console's counts and the bans listing, on every database.
func TestConsoleConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"CountsOfAnEmptyDatabase", testCountsEmpty},
		{"Counts", testCounts},
		{"CountersFollowEveryWrite", testCountersFollowWrites},
		{"BansPages", testBansPages},
	}, mustOpenWithBroadcastWorkers)
}

// mustOpenWithBroadcastWorkers registers both broadcast workers, so that
// push and messenger broadcast jobs can be inserted; the runner is never
// started.
func mustOpenWithBroadcastWorkers(t *testing.T, url string) (*sqlstore.DB, *testsupport.Clock) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &notifications.BroadcastWorker{})
	river.AddWorker(workers, &messenger.BroadcastWorker{})
	return mustOpenJobs(t, url, jobs.Config{Workers: workers})
}

func testCountsEmpty(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	if c, err := db.CountAccounts(ctx, clk.Now().Add(-24*time.Hour)); err != nil || c != (accounts.Counts{}) {
		t.Errorf("accounts: %+v %v", c, err)
	}
	if rows, err := db.CountDeviceTokens(ctx); err != nil || len(rows) != 0 {
		t.Errorf("devices: %+v %v", rows, err)
	}
	if c, err := db.CountActiveNotificationJobs(ctx); err != nil || c != (notifications.JobCounts{}) {
		t.Errorf("jobs: %+v %v", c, err)
	}
	if n, err := db.CountActiveMessengerBroadcasts(ctx); err != nil || n != 0 {
		t.Errorf("messenger broadcasts: %d %v", n, err)
	}
	if c, err := db.CountWebhookEndpoints(ctx); err != nil || c != (webhooks.Counts{}) {
		t.Errorf("webhooks: %+v %v", c, err)
	}
}

func testCounts(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	create := func(id string, verified bool) {
		t.Helper()
		a := newAccount(id, id+"@example.com", "CODE"+id)
		a.Verified = verified
		_, _, err := accounts.Create(ctx, db, a)
		must("create "+id, err)
	}
	// Accounts: one two days old (not new), one exactly 24 hours old (new),
	// then verified, unverified, disabled and deleted ones.
	start := clk.Now()
	create("old", true)
	clk.Set(start.Add(24 * time.Hour))
	create("edge", false)
	clk.Set(start.Add(48 * time.Hour))
	create("ver", true)
	create("unver", false)
	create("dis", false)
	create("gone", true)
	_, err := db.SetDisabled(ctx, "dis", true, "fraud", nil)
	must("disable", err)
	must("delete", accounts.DeleteAccount(ctx, db, "gone", nil))
	got, err := db.CountAccounts(ctx, clk.Now().Add(-24*time.Hour))
	must("count accounts", err)
	if want := (accounts.Counts{Total: 5, Verified: 2, NewLast24h: 4, Disabled: 1}); got != want {
		t.Errorf("accounts: %+v, want %+v", got, want)
	}

	// Devices: valid, a token a provider called dead, a token moved away
	// (missing), a removed device (not counted), on both platforms.
	register := func(id, account, platform, token string) {
		t.Helper()
		_, err := devices.Register(ctx, db, devices.NewDevice{ID: id, AccountID: account, Platform: platform, PushToken: token}, allowAll)
		must("register "+id, err)
	}
	register("d1", "ver", "android", "tok-1")
	register("d2", "ver", "ios", "tok-2")
	register("d3", "unver", "android", "tok-3")
	must("invalidate", db.InvalidatePushToken(ctx, "d3", "tok-3"))
	register("d4", "unver", "android", "tok-4")
	register("d5", "dis", "ios", "tok-4") // takes d4's token
	register("d6", "old", "android", "tok-6")
	must("remove", db.DeactivateDevice(ctx, "old", "d6"))
	rows, err := db.CountDeviceTokens(ctx)
	must("count devices", err)
	wantRows := []devices.PlatformTokens{{Platform: "android", Valid: 1, Invalid: 1, Missing: 1}, {Platform: "ios", Valid: 2}}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Errorf("devices: %+v, want %+v", rows, wantRows)
	}

	// Push broadcasts: queued, scheduled, running, and a cancelled one.
	newJob := func(id string, sendAt *time.Time) {
		t.Helper()
		_, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "s", Content: "c", SendAt: sendAt}, notifications.BroadcastArgs{JobID: id})
		must("broadcast "+id, err)
	}
	later := clk.Now().Add(time.Hour)
	newJob("queued", nil)
	newJob("scheduled", &later)
	newJob("running", nil)
	newJob("cancelled", nil)
	_, err = db.AcquireBroadcast(ctx, "running", "w1", clk.Now().Add(time.Minute))
	must("acquire", err)
	_, err = db.CancelBroadcast(ctx, "cancelled")
	must("cancel", err)
	if c, err := db.CountActiveNotificationJobs(ctx); err != nil || c != (notifications.JobCounts{Queued: 1, Scheduled: 1, Running: 1}) {
		t.Errorf("jobs: %+v %v", c, err)
	}

	// Messenger broadcasts: queued and running count, cancelled not.
	for _, id := range []string{"mq", "mr", "mc"} {
		_, err := db.CreateMessengerBroadcast(ctx, id, "Hello", []byte(`{}`), nil, messenger.BroadcastArgs{JobID: id})
		must("messenger broadcast "+id, err)
	}
	_, _, err = db.AcquireMessengerBroadcast(ctx, "mr", "w1", clk.Now().Add(time.Minute))
	must("acquire messenger broadcast", err)
	_, err = db.CancelMessengerBroadcast(ctx, "mc")
	must("cancel messenger broadcast", err)
	if n, err := db.CountActiveMessengerBroadcasts(ctx); err != nil || n != 2 {
		t.Errorf("messenger broadcasts: %d %v, want 2", n, err)
	}

	// Webhooks: healthy, failing, disabled, and failing then disabled
	// (disabled, not failing).
	for _, id := range []string{"ok", "failing", "off", "failing-off"} {
		mustEndpoint(t, db, id, clk.Now())
	}
	for _, id := range []string{"failing", "failing-off"} {
		_, err := db.RecordWebhookAttempt(ctx, webhooks.Attempt{ID: "a-" + id, EndpointID: id, EventID: "msg_1", EventType: webhooks.Ping, Attempt: 1, StatusCode: 500, Error: webhooks.ErrorHTTPStatus, CreatedAt: clk.Now()}, 1, testSlots)
		must("attempt", err)
	}
	for _, id := range []string{"off", "failing-off"} {
		_, err := db.SetWebhookEndpointDisabled(ctx, id, true, "operator")
		must("disable endpoint", err)
	}
	if c, err := db.CountWebhookEndpoints(ctx); err != nil || c != (webhooks.Counts{Total: 4, Failing: 1, Disabled: 2}) {
		t.Errorf("webhooks: %+v %v", c, err)
	}
}

// Bans page newest first, by address among bans of one instant, each once.
func testBansPages(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for i := range 7 {
		ip := "203.0.113." + string(rune('1'+i))
		at := clk.Now().Add(time.Duration(i/3) * time.Second) // three bans share each instant
		if err := db.AddBan(ctx, limits.Ban{IP: ip, Reason: "r", CreatedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	// Newest instant first; within one, addresses descending.
	want := []string{"203.0.113.7", "203.0.113.6", "203.0.113.5", "203.0.113.4", "203.0.113.3", "203.0.113.2", "203.0.113.1"}
	svc := limits.NewBans(db, clk.Now)
	for _, size := range []int{1, 2, 3, 7, 8} {
		var got []string
		after := ""
		for pages := 0; ; pages++ {
			if pages > len(want) {
				t.Fatalf("pages of %d never end", size)
			}
			p, err := svc.List(ctx, size, after)
			if err != nil {
				t.Fatalf("pages of %d: %v", size, err)
			}
			for _, b := range p.Items {
				got = append(got, b.IP)
				if b.Reason != "r" || b.CreatedAt.Location() != time.UTC {
					t.Fatalf("ban %+v", b)
				}
			}
			if !p.HasNextPage {
				break
			}
			if len(p.Items) != size || p.EndCursor == "" {
				t.Fatalf("pages of %d: a short page (%d) or no cursor before the end", size, len(p.Items))
			}
			after = p.EndCursor
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("pages of %d: %v, want %v", size, got, want)
		}
	}
	if b, err := db.BanByIP(ctx, "203.0.113.4"); err != nil || b.IP != "203.0.113.4" || !b.CreatedAt.Equal(clk.Now().Add(time.Second)) {
		t.Errorf("ban by ip: %+v %v", b, err)
	}
}

// The overview's counters, maintained by the database as rows change,
// say what counting every row says after each kind of write: signups,
// verification, disabling, deletion (which erases the devices), device
// registration, a token moved to another device, a dead token, removal,
// re-registration, an import, and concurrent registrations.
func testCountersFollowWrites(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	step := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		since := clk.Now().Add(-24 * time.Hour)
		gotA, err := db.CountAccounts(ctx, since)
		if err != nil {
			t.Fatalf("after %s, CountAccounts: %v", what, err)
		}
		gotD, err := db.CountDeviceTokens(ctx)
		if err != nil {
			t.Fatalf("after %s, CountDeviceTokens: %v", what, err)
		}
		wantA, wantD, err := sqlstore.Recount(ctx, db, since)
		if err != nil {
			t.Fatalf("after %s, recount: %v", what, err)
		}
		if gotA != wantA {
			t.Errorf("after %s: accounts %+v, counting every row %+v", what, gotA, wantA)
		}
		if len(gotD) != 0 || len(wantD) != 0 {
			if !reflect.DeepEqual(gotD, wantD) {
				t.Errorf("after %s: devices %+v, counting every row %+v", what, gotD, wantD)
			}
		}
	}
	create := func(id string, verified bool) error {
		a := newAccount(id, id+"@example.com", "CODE"+id)
		a.Verified = verified
		_, _, err := accounts.Create(ctx, db, a)
		return err
	}
	register := func(id, account, platform, token string) error {
		_, err := devices.Register(ctx, db, devices.NewDevice{ID: id, AccountID: account, Platform: platform, PushToken: token}, allowAll)
		return err
	}
	for i, id := range []string{"a1", "a2", "a3", "a4"} {
		step("signup "+id, create(id, i%2 == 0))
	}
	_, err := db.MarkVerified(ctx, "a2")
	step("verify", err)
	_, err = db.SetDisabled(ctx, "a3", true, "fraud", nil)
	step("disable", err)
	_, err = db.SetDisabled(ctx, "a3", false, "", nil)
	step("enable", err)
	_, err = db.SetDisabled(ctx, "a4", true, "fraud", nil)
	step("disable another", err)
	step("register", register("d1", "a1", "android", "t1"))
	step("register on ios", register("d2", "a1", "ios", "t2"))
	step("register without a token", register("d3", "a2", "android", ""))
	step("register a held token again (the device refreshed)", register("d1x", "a1", "android", "t1"))
	_, err = db.UpdatePushToken(ctx, "a1", "d1", "t1b")
	step("a new token on a device", err)
	step("move a token to another device", register("d4", "a2", "ios", "t2"))
	step("a dead token", db.InvalidatePushToken(ctx, "d1", "t1b"))
	_, err = db.UpdatePushToken(ctx, "a1", "d1", "t1c")
	step("a new token on the dead one", err)
	step("a token dropped", db.DropPushToken(ctx, "d4"))
	step("remove", db.DeactivateDevice(ctx, "a2", "d3"))
	step("register on a removed device's token", register("d5", "a2", "android", "t3"))
	svc := devices.NewService(db, nil, devices.Config{})
	_, err = svc.Import(ctx, strings.NewReader(`{"email":"a3@example.com","platform":"android","pushToken":"imp-1"}
{"email":"a3@example.com","platform":"ios","pushToken":"imp-2"}
{"email":"a4@example.com","platform":"android","pushToken":"t3"}
`), nil)
	step("import (a token taken from another device)", err)
	var wg sync.WaitGroup
	errs := make([]error, 12)
	for i := range errs {
		wg.Go(func() {
			errs[i] = register(fmt.Sprintf("c%d", i), "a1", []string{"android", "ios", "web"}[i%3], fmt.Sprintf("ct-%d", i))
		})
	}
	wg.Wait()
	step("twelve registrations at once", errors.Join(errs...))
	step("delete an account (its devices erased)", accounts.DeleteAccount(ctx, db, "a1", nil))
	step("delete a disabled account", accounts.DeleteAccount(ctx, db, "a4", nil))
	clk.Advance(25 * time.Hour)
	step("a day later", nil)
}
