package sqlstore_test

import (
	"context"
	"reflect"
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
