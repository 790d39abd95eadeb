package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

func TestWebhooksConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"EventsOnlyForCommittedChanges", testEventsOnlyForCommitted},
		{"EndpointLifecycle", testWebhookEndpointLifecycle},
		{"AdminEvents", testAdminEvents},
		{"SlotsPerEndpoint", testWebhookSlots},
		{"BreakerBacksOffTogether", testWebhookBreaker},
		{"DeletionScrubsTheOutbox", testDeletionScrubsOutbox},
	}, mustOpenWithWebhooks)
}

// testSlots are slot rules small enough to see each step.
var testSlots = webhooks.Slots{Concurrency: 2, Threshold: 3, Cooldowns: []time.Duration{time.Minute, 5 * time.Minute},
	LeaseTTL: 30 * time.Second, ReserveTTL: time.Minute}

// mustEvent writes an event sent to one endpoint and returns its id.
func mustEvent(t *testing.T, db *sqlstore.DB, endpointID string, at time.Time) string {
	t.Helper()
	ev, err := webhooks.NewEvent(webhooks.UserCreated, at, map[string]any{"userId": "u-" + endpointID})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SendWebhookEvent(context.Background(), endpointID, ev); err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

func acquire(t *testing.T, db *sqlstore.DB, endpointID, eventID string, job int64, attempts int) bool {
	t.Helper()
	held, err := db.AcquireWebhookSlot(context.Background(), webhooks.SlotRequest{EndpointID: endpointID, EventID: eventID, JobID: job, Attempts: attempts}, testSlots)
	if err != nil {
		t.Fatalf("acquire %s by job %d: %v", eventID, job, err)
	}
	return held
}

func expectSlots(t *testing.T, db *sqlstore.DB, endpointID string, held, parked int) {
	t.Helper()
	h, p, err := db.WebhookSlots(context.Background(), endpointID)
	if err != nil || h != held || p != parked {
		t.Fatalf("%s: %d slots held, %d parked (%v); want %d, %d", endpointID, h, p, err, held, parked)
	}
}

// lastJob is the newest delivery job: its id and args.
func lastJob(t *testing.T, db *sqlstore.DB) (sqlstore.WebhookJob, webhooks.DeliveryArgs) {
	t.Helper()
	jobs, err := sqlstore.WebhookJobs(context.Background(), db)
	if err != nil || len(jobs) == 0 {
		t.Fatalf("jobs: %v %v", jobs, err)
	}
	j := jobs[len(jobs)-1]
	var args webhooks.DeliveryArgs
	if err := json.Unmarshal([]byte(j.Args), &args); err != nil {
		t.Fatalf("args %s: %v", j.Args, err)
	}
	return j, args
}

func record(t *testing.T, db *sqlstore.DB, endpointID, eventID string, job int64, status int, at time.Time) {
	t.Helper()
	a := webhooks.Attempt{ID: fmt.Sprintf("a-%d-%d", job, at.UnixNano()), EndpointID: endpointID, EventID: eventID, EventType: webhooks.UserCreated, Attempt: 1, StatusCode: status, CreatedAt: at}
	if !a.Succeeded() {
		a.Error = webhooks.ErrorHTTPStatus
	}
	if _, err := db.RecordWebhookAttempt(context.Background(), a, job, testSlots); err != nil {
		t.Fatal(err)
	}
}

// At most Concurrency deliveries of an endpoint hold a slot; the others
// are parked, and each release hands its slot to the oldest parked one
// as a new job (with the attempts it had made); another endpoint's
// deliveries are not counted with them; a slot whose holder died lapses.
func testWebhookSlots(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	mustEndpoint(t, db, "ep1", clk.Now())
	mustEndpoint(t, db, "ep2", clk.Now())
	var evs []string
	for range 5 {
		evs = append(evs, mustEvent(t, db, "ep1", clk.Now()))
	}
	other := mustEvent(t, db, "ep2", clk.Now())
	if !acquire(t, db, "ep1", evs[0], 101, 0) || !acquire(t, db, "ep1", evs[1], 102, 0) {
		t.Fatal("the first two deliveries got no slot")
	}
	if !acquire(t, db, "ep1", evs[1], 102, 0) {
		t.Fatal("a job holding a slot asked again and lost it")
	}
	if acquire(t, db, "ep1", evs[2], 103, 3) || acquire(t, db, "ep1", evs[3], 104, 0) {
		t.Fatal("a third delivery got a slot")
	}
	if !acquire(t, db, "ep2", other, 201, 0) {
		t.Fatal("another endpoint's delivery waits for ep1's")
	}
	expectSlots(t, db, "ep1", 2, 2)
	expectSlots(t, db, "ep2", 1, 0)

	// A success releases its slot: the oldest parked delivery gets it, as
	// a new job holding it, with its three earlier attempts.
	record(t, db, "ep1", evs[0], 101, 204, clk.Now())
	expectSlots(t, db, "ep1", 2, 1)
	job, args := lastJob(t, db)
	if args.EventID != evs[2] || args.EndpointID != "ep1" || args.Attempts != 3 || job.State != "available" {
		t.Fatalf("handed to %+v %+v", job, args)
	}
	if !acquire(t, db, "ep1", evs[2], job.ID, 3) {
		t.Fatal("the job handed a slot does not hold it")
	}
	if acquire(t, db, "ep1", evs[4], 105, 0) {
		t.Fatal("a new delivery took a slot handed to a parked one")
	}
	expectSlots(t, db, "ep1", 2, 2)

	// A release without an attempt (the event went) hands on too.
	if err := db.ReleaseWebhookSlot(context.Background(), "ep1", 102, testSlots); err != nil {
		t.Fatal(err)
	}
	expectSlots(t, db, "ep1", 2, 1)
	if _, args := lastJob(t, db); args.EventID != evs[3] {
		t.Fatalf("handed to %+v, want the oldest parked %s", args, evs[3])
	}

	// Holders that died: their slots lapse after LeaseTTL (and the
	// reservation after ReserveTTL), and the next delivery takes one.
	clk.Advance(testSlots.ReserveTTL + time.Second)
	expectSlots(t, db, "ep1", 0, 1)
	if !acquire(t, db, "ep1", evs[4], 106, 0) {
		t.Fatal("lapsed slots still count")
	}
	// Housekeeping's sweep hands the free slot left to the parked one.
	if _, err := db.SweepWebhookSlots(context.Background(), testSlots); err != nil {
		t.Fatal(err)
	}
	expectSlots(t, db, "ep1", 2, 0)

	// Disabling drops its slots and parked deliveries; a disabled
	// endpoint gives no slot.
	if acquire(t, db, "ep1", evs[0], 107, 0) {
		t.Fatal("a third slot")
	}
	if _, err := db.SetWebhookEndpointDisabled(context.Background(), "ep1", true, "operator"); err != nil {
		t.Fatal(err)
	}
	expectSlots(t, db, "ep1", 0, 0)
	if _, err := db.AcquireWebhookSlot(context.Background(), webhooks.SlotRequest{EndpointID: "ep1", EventID: evs[0], JobID: 108}, testSlots); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("acquire on a disabled endpoint: %v", err)
	}
	// A delivery of an event that is gone is not parked (one given a
	// slot finds the event gone and releases it).
	if !acquire(t, db, "ep2", other, 203, 0) || !acquire(t, db, "ep2", other, 204, 0) { // 201's lapsed with the others
		t.Fatal("ep2 has no slot free")
	}
	if held := acquire(t, db, "ep2", "msg_gone", 202, 0); held {
		t.Fatal("a third slot")
	}
	expectSlots(t, db, "ep2", 2, 0)
}

// Threshold failures in a row open the breaker: every delivery of the
// endpoint is parked, and one (the oldest) is scheduled for when it
// half-opens; that probe's failure opens it again for the next cooldown,
// its success closes it and the parked deliveries go out.
func testWebhookBreaker(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	mustEndpoint(t, db, "ep1", clk.Now())
	var evs []string
	for range 8 {
		evs = append(evs, mustEvent(t, db, "ep1", clk.Now()))
	}
	for i := range 3 {
		if !acquire(t, db, "ep1", evs[i], int64(10+i), 0) {
			t.Fatalf("failure %d: no slot", i)
		}
		record(t, db, "ep1", evs[i], int64(10+i), 500, clk.Now())
	}
	opened := clk.Now()
	// Open: no slot, and the first parked delivery is the probe, due
	// when the breaker half-opens.
	if acquire(t, db, "ep1", evs[3], 20, 0) {
		t.Fatal("a slot with the breaker open")
	}
	probe, args := lastJob(t, db)
	if args.EventID != evs[3] || probe.State != "scheduled" || !probe.ScheduledAt.Equal(opened.Add(time.Minute)) {
		t.Fatalf("probe %+v %+v, want %s at %s", probe, args, evs[3], opened.Add(time.Minute))
	}
	if acquire(t, db, "ep1", evs[4], 21, 0) || acquire(t, db, "ep1", evs[5], 22, 0) {
		t.Fatal("a slot with the breaker open")
	}
	expectSlots(t, db, "ep1", 1, 2)
	if jobs, _ := sqlstore.WebhookJobs(context.Background(), db); jobs[len(jobs)-1].ID != probe.ID {
		t.Fatal("a second probe was scheduled")
	}

	// Half-open: the probe goes, nothing else.
	clk.Advance(time.Minute)
	if !acquire(t, db, "ep1", evs[3], probe.ID, 0) {
		t.Fatal("the probe has no slot when the breaker half-opens")
	}
	if acquire(t, db, "ep1", evs[6], 23, 0) {
		t.Fatal("a second delivery while half-open")
	}
	// The probe fails: open again, for the next cooldown; the oldest
	// parked delivery is the next probe.
	record(t, db, "ep1", evs[3], probe.ID, 503, clk.Now())
	probe2, args := lastJob(t, db)
	if args.EventID != evs[4] || probe2.State != "scheduled" || !probe2.ScheduledAt.Equal(clk.Now().Add(5*time.Minute)) {
		t.Fatalf("second probe %+v %+v", probe2, args)
	}
	expectSlots(t, db, "ep1", 1, 2)

	// Its success closes the breaker: the parked deliveries go out,
	// Concurrency at a time.
	clk.Advance(5 * time.Minute)
	if !acquire(t, db, "ep1", evs[4], probe2.ID, 0) {
		t.Fatal("the second probe has no slot")
	}
	record(t, db, "ep1", evs[4], probe2.ID, 200, clk.Now())
	expectSlots(t, db, "ep1", 2, 0)
	if jobs, _ := sqlstore.WebhookJobs(context.Background(), db); jobs[len(jobs)-1].State != "available" || jobs[len(jobs)-2].State != "available" {
		t.Fatalf("the deliveries handed a slot are not available at once: %+v", jobs[len(jobs)-2:])
	}
	// Both slots are held by the jobs handed them: a new delivery waits.
	if acquire(t, db, "ep1", evs[7], 30, 0) {
		t.Fatal("a third slot once closed")
	}
	expectSlots(t, db, "ep1", 2, 1)
}

// Deleting an account deletes every event about it (its email with
// user.created) and their parked deliveries, and removes it from another
// account's event (referrerId), in the same transaction; the user.deleted
// event, naming only its id, is all that remains of it.
func testDeletionScrubsOutbox(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustEndpoint(t, db, "ep1", clk.Now())
	const gone, email = "0197a3c2-gone-7c3a", "gone.person@example.com"
	if _, _, err := accounts.Create(ctx, db, newAccount(gone, email, "GONECODE")); err != nil {
		t.Fatal(err)
	}
	friend := newAccount("friend", "friend@example.com", "FRIENDCD")
	friend.Referral = "GONECODE"
	if _, applied, err := accounts.Create(ctx, db, friend); err != nil || !applied {
		t.Fatalf("referral %v %v", applied, err)
	}
	mustAccount(t, db, "other")
	mustRegister(t, db, "d1", gone, "token-gone")
	mustRegister(t, db, "d2", "other", "token-other")
	if _, _, err := subscriptions.Set(ctx, db, gone, "premium", clk.Now().Add(time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	// Two slots held by the other account's events; the deleted
	// account's user.created waits, parked.
	created := eventsWithID(t, db, webhooks.UserCreated)
	for i, id := range []string{created["other"], created["friend"]} {
		if !acquire(t, db, "ep1", id, int64(1+i), 0) {
			t.Fatal("no slot")
		}
	}
	if acquire(t, db, "ep1", created[gone], 3, 0) {
		t.Fatal("a third slot")
	}
	expectSlots(t, db, "ep1", 2, 1)
	if n, err := sqlstore.WebhookEventAccounts(ctx, db, gone); err != nil || n != 9 {
		t.Fatalf("%d events listed as naming the account (%v), want 9: created, its trial started, the friend's created naming it, "+
			"its referral bonus started and changed its subscription, its device, the plan set (started, plan changed, subscription changed)", n, err)
	}

	if err := accounts.DeleteAccount(ctx, db, gone, nil); err != nil {
		t.Fatal(err)
	}
	outbox, err := sqlstore.WebhookOutbox(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	var mentions []string
	for _, p := range outbox {
		if strings.Contains(p, email) || strings.Contains(p, "gone.person") {
			t.Fatalf("the outbox still holds the email: %s", p)
		}
		if strings.Contains(p, gone) {
			mentions = append(mentions, p)
		}
	}
	if len(mentions) != 1 || !strings.Contains(mentions[0], `"type":"user.deleted"`) || !strings.Contains(mentions[0], `"data":{"userId":"`+gone+`"}`) {
		t.Fatalf("what names the account after its deletion: %v", mentions)
	}
	// The friend's own event stays, without the referrer.
	friendEvents := eventsOf(t, db, webhooks.UserCreated)
	if len(friendEvents) != 2 {
		t.Fatalf("user.created events left: %v", friendEvents)
	}
	for _, d := range friendEvents {
		if _, ok := d["referrerId"]; ok || (d["userId"] != "friend" && d["userId"] != "other") {
			t.Fatalf("user.created after the deletion: %v", d)
		}
	}
	if got := eventsOf(t, db, webhooks.DeviceRegistered); len(got) != 1 || got[0]["userId"] != "other" {
		t.Fatalf("device.registered after the deletion: %v", got)
	}
	if n, err := sqlstore.WebhookEventAccounts(ctx, db, gone); err != nil || n != 0 {
		t.Fatalf("%d events still listed as naming the account (%v)", n, err)
	}
	expectSlots(t, db, "ep1", 2, 0)
	if _, err := db.WebhookEvent(ctx, created[gone]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the deleted account's user.created: %v", err)
	}
}

// eventsWithID maps each event of type typ by its data's userId to its id.
func eventsWithID(t *testing.T, db *sqlstore.DB, typ string) map[string]string {
	t.Helper()
	evs, err := db.WebhookEvents(context.Background(), typ)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, ev := range evs {
		var p struct {
			Data struct {
				UserID string `json:"userId"`
			} `json:"data"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		out[p.Data.UserID] = ev.ID
	}
	return out
}

// mustOpenWithWebhooks registers the delivery worker, so that delivery
// jobs can be inserted; the runner is never started.
func mustOpenWithWebhooks(t *testing.T, url string) (*sqlstore.DB, *testsupport.Clock) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &webhooks.DeliveryWorker{})
	return mustOpenJobs(t, url, jobs.Config{Workers: workers})
}

func mustEndpoint(t testing.TB, db *sqlstore.DB, id string, now time.Time) webhooks.Endpoint {
	t.Helper()
	e := webhooks.Endpoint{ID: id, URL: "https://example.com/hook", EventTypes: webhooks.Catalogue, Secret: "whsec_c2VjcmV0", CreatedAt: now, UpdatedAt: now}
	if err := db.CreateWebhookEndpoint(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func eventsOf(t *testing.T, db *sqlstore.DB, typ string) []map[string]any {
	t.Helper()
	evs, err := db.WebhookEvents(context.Background(), typ)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, ev := range evs {
		var p struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Type != typ {
			t.Fatalf("payload %s: %v", ev.Payload, err)
		}
		out = append(out, p.Data)
	}
	return out
}

func testEventsOnlyForCommitted(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustEndpoint(t, db, "ep1", clk.Now())
	mustAccount(t, db, "u1")
	// A signup that fails (the email is taken) writes no event.
	if _, _, err := accounts.Create(ctx, db, newAccount("u2", "u1@example.com", "CODEu2")); err == nil {
		t.Fatal("duplicate email accepted")
	}
	if got := eventsOf(t, db, webhooks.UserCreated); len(got) != 1 || got[0]["userId"] != "u1" {
		t.Fatalf("user.created events: %v", got)
	}
	// A registration the quota refuses rolls back, its event with it.
	refuse := errors.New("limit")
	if _, err := devices.Register(ctx, db, devices.NewDevice{ID: "d0", AccountID: "u1", Platform: "android", PushToken: "t0"}, func(devices.Quota) error { return refuse }); !errors.Is(err, refuse) {
		t.Fatalf("register: %v", err)
	}
	mustRegister(t, db, "d1", "u1", "tok1")
	// Registering the same app again refreshes it: no second event.
	mustRegister(t, db, "d1", "u1", "tok1")
	if got := eventsOf(t, db, webhooks.DeviceRegistered); len(got) != 1 || got[0]["deviceId"] != "d1" || got[0]["userId"] != "u1" {
		t.Fatalf("device.registered events: %v", got)
	}
	if err := db.InvalidatePushToken(ctx, "d1", "tok1"); err != nil {
		t.Fatal(err)
	}
	if err := db.InvalidatePushToken(ctx, "d1", "tok1"); err != nil { // already invalid: no change, no event
		t.Fatal(err)
	}
	if got := eventsOf(t, db, webhooks.DeviceTokenInvalidated); len(got) != 1 || got[0]["deviceId"] != "d1" {
		t.Fatalf("device.token_invalidated events: %v", got)
	}
	// The devices service removes a device and emits its event in one
	// unit of work.
	owner := devices.NewService(db, nil, devices.Config{})
	if err := owner.Remove(ctx, "u1", "d1"); err != nil {
		t.Fatal(err)
	}
	if err := owner.Remove(ctx, "u1", "d1"); err == nil {
		t.Fatal("removed twice")
	}
	if got := eventsOf(t, db, webhooks.DeviceRemoved); len(got) != 1 {
		t.Fatalf("device.removed events: %v", got)
	}
	for _, ev := range [][]map[string]any{eventsOf(t, db, webhooks.UserCreated), eventsOf(t, db, webhooks.DeviceRegistered)} {
		for _, d := range ev {
			for _, k := range []string{"password", "passwordHash", "pushToken", "code"} {
				if _, ok := d[k]; ok {
					t.Fatalf("event data holds %s: %v", k, d)
				}
			}
		}
	}
}

func testWebhookEndpointLifecycle(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	e := mustEndpoint(t, db, "ep1", clk.Now())
	got, err := db.WebhookEndpoint(ctx, "ep1")
	if err != nil || got.URL != e.URL || len(got.EventTypes) != len(webhooks.Catalogue) || !got.Enabled() {
		t.Fatalf("%+v %v", got, err)
	}
	until := clk.Now().Add(24 * time.Hour)
	r, err := db.RotateWebhookSecret(ctx, "ep1", "whsec_bmV3", until)
	if err != nil || r.Secret != "whsec_bmV3" || r.PreviousSecret != e.Secret || len(r.SigningSecrets(clk.Now())) != 2 || len(r.SigningSecrets(until)) != 1 {
		t.Fatalf("rotate: %+v %v", r, err)
	}
	a := webhooks.Attempt{ID: "a1", EndpointID: "ep1", EventID: "msg_1", EventType: webhooks.Ping, Attempt: 1, StatusCode: 500, Error: webhooks.ErrorHTTPStatus, CreatedAt: clk.Now()}
	since, err := db.RecordWebhookAttempt(ctx, a, 1, testSlots)
	if err != nil || since == nil || !since.Equal(clk.Now()) {
		t.Fatalf("failing since %v %v", since, err)
	}
	a.ID, a.StatusCode, a.Error = "a2", 204, ""
	if since, err := db.RecordWebhookAttempt(ctx, a, 1, testSlots); err != nil || since != nil {
		t.Fatalf("after success: %v %v", since, err)
	}
	page, err := db.WebhookAttempts(ctx, "ep1", "", 10)
	if err != nil || len(page) != 2 || page[0].ID != "a2" {
		t.Fatalf("attempts %+v %v", page, err)
	}
	if page, _ := db.WebhookAttempts(ctx, "ep1", "a2", 10); len(page) != 1 || page[0].ID != "a1" {
		t.Fatalf("second page %+v", page)
	}
	d, err := db.SetWebhookEndpointDisabled(ctx, "ep1", true, "410")
	if err != nil || d.Enabled() || d.DisabledReason != "410" {
		t.Fatalf("%+v %v", d, err)
	}
	if err := db.DeleteWebhookEndpoint(ctx, "ep1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.WebhookEndpoint(ctx, "ep1"); err == nil {
		t.Fatal("deleted endpoint found")
	}
}

// The admin API's changes write their events once per change: a repeated
// call that changes nothing writes none.
func testAdminEvents(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustEndpoint(t, db, "ep1", clk.Now())
	mustAccount(t, db, "u1")
	expires := clk.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	for range 2 {
		if _, _, err := subscriptions.Set(ctx, db, "u1", "premium", expires, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := eventsOf(t, db, webhooks.UserSubscriptionChanged); len(got) != 1 || got[0]["userId"] != "u1" || got[0]["plan"] != "premium" || got[0]["previousPlan"] == "premium" {
		t.Fatalf("user.subscription_changed events: %v", got)
	}
	for range 2 {
		if _, err := accounts.SetDisabled(ctx, db, "u1", true, "chargeback", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := accounts.SetDisabled(ctx, db, "u1", false, "", nil); err != nil {
		t.Fatal(err)
	}
	if got := eventsOf(t, db, webhooks.UserDisabled); len(got) != 1 || got[0]["userId"] != "u1" || got[0]["reason"] != "chargeback" {
		t.Fatalf("user.disabled events: %v", got)
	}
	if err := accounts.DeleteAccount(ctx, db, "u1", nil); err != nil {
		t.Fatal(err)
	}
	if err := accounts.DeleteAccount(ctx, db, "u1", nil); err == nil {
		t.Fatal("deleted twice")
	}
	if got := eventsOf(t, db, webhooks.UserDeleted); len(got) != 1 || got[0]["userId"] != "u1" {
		t.Fatalf("user.deleted events: %v", got)
	}
}

func TestWebhookEventsOfBroadcastsAndMessenger(t *testing.T) {
	runConformance(t, []storeCase{
		{"BroadcastEvents", testBroadcastEvents},
		{"MessengerEvents", testMessengerEvents},
		{"MessengerBroadcastEvents", testMessengerBroadcastEvents},
	}, func(t *testing.T, url string) (*sqlstore.DB, *testsupport.Clock) {
		workers := river.NewWorkers()
		river.AddWorker(workers, &webhooks.DeliveryWorker{})
		river.AddWorker(workers, &notifications.BroadcastWorker{})
		river.AddWorker(workers, &messenger.BroadcastWorker{})
		return mustOpenJobs(t, url, jobs.Config{Workers: workers})
	})
}

func testBroadcastEvents(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustEndpoint(t, db, "ep1", clk.Now())
	seedRecipients(t, db, 2)
	until := clk.Now().Add(time.Minute)
	for _, id := range []string{"done", "failed", "cancelled"} {
		if _, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.AcquireBroadcast(ctx, "done", "w1", until); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ClaimNextBatch(ctx, "done", "w1", 10, until); err != nil {
		t.Fatal(err)
	}
	// A dead token: the Postgres one-statement path gives way to the
	// transaction that writes the event.
	if _, err := db.RecordDeliveries(ctx, "done", "w1", notifications.Record{Outcomes: []notifications.Outcome{{DeviceID: "d000", Token: "t000", Status: "sent"}, {DeviceID: "d001", Token: "t001", Status: "invalid"}}}, until); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FinishBroadcast(ctx, "done", "w1", notifications.StatusCompleted, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FinishBroadcast(ctx, "done", "w1", notifications.StatusCompleted, ""); err != nil { // finished already: no change
		t.Fatal(err)
	}
	if _, err := db.AcquireBroadcast(ctx, "failed", "w1", until); err != nil {
		t.Fatal(err)
	}
	if _, err := db.FinishBroadcast(ctx, "failed", "w1", notifications.StatusFailed, "push provider unavailable"); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := db.CancelBroadcast(ctx, "cancelled"); err != nil {
			t.Fatal(err)
		}
	}
	if got := eventsOf(t, db, webhooks.BroadcastCompleted); len(got) != 1 || got[0]["jobId"] != "done" || got[0]["sent"] != float64(1) || got[0]["invalidTokens"] != float64(1) {
		t.Fatalf("completed: %v", got)
	}
	if got := eventsOf(t, db, webhooks.BroadcastFailed); len(got) != 1 || got[0]["error"] != "push provider unavailable" {
		t.Fatalf("failed: %v", got)
	}
	if got := eventsOf(t, db, webhooks.BroadcastCancelled); len(got) != 1 || got[0]["jobId"] != "cancelled" {
		t.Fatalf("cancelled: %v", got)
	}
	if got := eventsOf(t, db, webhooks.DeviceTokenInvalidated); len(got) != 1 || got[0]["deviceId"] != "d001" {
		t.Fatalf("token invalidated: %v", got)
	}
}

func testMessengerEvents(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustEndpoint(t, db, "ep1", clk.Now())
	for _, c := range []messenger.Change{
		{Kind: messenger.Subscribe, ChatID: 7, Payload: "promo"},
		{Kind: messenger.Subscribe, ChatID: 7}, // already subscribed: no event
		{Kind: messenger.Block, ChatID: 7},
		{Kind: messenger.Unblock, ChatID: 7}, // subscribed again
		{Kind: messenger.Unsubscribe, ChatID: 7},
		{Kind: messenger.Unsubscribe, ChatID: 7}, // no change
	} {
		if _, err := messenger.ApplyChange(ctx, db, c); err != nil {
			t.Fatal(err)
		}
	}
	if got := eventsOf(t, db, webhooks.SubscriberSubscribed); len(got) != 2 || got[0]["chatId"] != "7" || got[0]["startPayload"] != "promo" {
		t.Fatalf("subscribed: %v", got)
	}
	if got := eventsOf(t, db, webhooks.SubscriberBlocked); len(got) != 1 {
		t.Fatalf("blocked: %v", got)
	}
	if got := eventsOf(t, db, webhooks.SubscriberUnsubscribed); len(got) != 1 {
		t.Fatalf("unsubscribed: %v", got)
	}
}

// testMessengerBroadcastEvents: a messenger broadcast's end writes one
// event, in the transaction that ends it; ending it again writes none.
func testMessengerBroadcastEvents(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustEndpoint(t, db, "ep1", clk.Now())
	subscribeChats(t, db, 1, 2)
	until := clk.Now().Add(time.Minute)
	for _, id := range []string{"done", "failed", "cancelled"} {
		mustCreateMessengerBroadcast(t, db, id)
	}
	for _, id := range []string{"done", "failed"} {
		if _, held, err := db.AcquireMessengerBroadcast(ctx, id, "w1", until); err != nil || !held {
			t.Fatalf("acquire %s: %v %v", id, err, held)
		}
	}
	if ok, err := db.RecordMessengerBroadcast(ctx, "done", "w1", messenger.BroadcastProgress{Cursor: 2, Sent: 1, Blocked: 1}, until); err != nil || !ok {
		t.Fatalf("record: %v %v", err, ok)
	}
	for range 2 { // the second finds it finished: no event
		if _, err := db.FinishMessengerBroadcast(ctx, "done", "w1", messenger.BroadcastCompleted, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := db.CancelMessengerBroadcast(ctx, "cancelled"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.FinishMessengerBroadcast(ctx, "failed", "w1", messenger.BroadcastFailed, "telegram unreachable"); err != nil {
		t.Fatal(err)
	}
	if got := eventsOf(t, db, webhooks.MessengerBroadcastCompleted); len(got) != 1 || got[0]["jobId"] != "done" || got[0]["sent"] != float64(1) || got[0]["blocked"] != float64(1) || got[0]["totalRecipients"] != float64(2) {
		t.Fatalf("completed: %v", got)
	}
	if got := eventsOf(t, db, webhooks.MessengerBroadcastFailed); len(got) != 1 || got[0]["error"] != "telegram unreachable" {
		t.Fatalf("failed: %v", got)
	}
	if got := eventsOf(t, db, webhooks.MessengerBroadcastCancelled); len(got) != 1 || got[0]["jobId"] != "cancelled" || got[0]["status"] != "cancelled" {
		t.Fatalf("cancelled: %v", got)
	}
}

// Replicas asking for an endpoint's slots at the same moment (two
// stores on one database, many deliveries each) never hold more than
// Concurrency between them, and every one that gets none is parked.
func TestWebhookSlotsAcrossReplicas(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		a, clk := mustOpenWithWebhooks(t, url)
		b, _ := mustOpenWithWebhooks(t, url)
		b.Now = clk.Now
		mustEndpoint(t, a, "ep1", clk.Now())
		var evs []string
		for range 16 {
			evs = append(evs, mustEvent(t, a, "ep1", clk.Now()))
		}
		var mu sync.Mutex
		held := 0
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, ev := range evs {
			db := a
			if i%2 == 1 {
				db = b
			}
			wg.Go(func() {
				<-start
				ok, err := db.AcquireWebhookSlot(context.Background(), webhooks.SlotRequest{EndpointID: "ep1", EventID: ev, JobID: int64(1000 + i)}, testSlots)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					held++
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if held != testSlots.Concurrency {
			t.Fatalf("%d deliveries got a slot, want %d", held, testSlots.Concurrency)
		}
		expectSlots(t, a, "ep1", testSlots.Concurrency, len(evs)-testSlots.Concurrency)
	})
}
