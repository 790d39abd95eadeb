package sqlstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

func TestWebhooksConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"EventsOnlyForCommittedChanges", testEventsOnlyForCommitted},
		{"EndpointLifecycle", testWebhookEndpointLifecycle},
		{"AdminEvents", testAdminEvents},
	}, mustOpenWithWebhooks)
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
	if _, _, err := db.CreateAccount(ctx, newAccount("u2", "u1@example.com", "CODEu2")); err == nil {
		t.Fatal("duplicate email accepted")
	}
	if got := eventsOf(t, db, webhooks.UserCreated); len(got) != 1 || got[0]["userId"] != "u1" {
		t.Fatalf("user.created events: %v", got)
	}
	// A registration the quota refuses rolls back, its event with it.
	refuse := errors.New("limit")
	if _, err := db.RegisterDevice(ctx, devices.NewDevice{ID: "d0", AccountID: "u1", Platform: "android", PushToken: "t0"}, func(devices.Quota) error { return refuse }); !errors.Is(err, refuse) {
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
	if err := db.DeactivateDevice(ctx, "u1", "d1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeactivateDevice(ctx, "u1", "d1"); err == nil {
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
	a := webhooks.Attempt{ID: "a1", EndpointID: "ep1", EventID: "msg_1", EventType: webhooks.Ping, Attempt: 1, StatusCode: 500, Error: "HTTP 500", CreatedAt: clk.Now()}
	since, err := db.RecordWebhookAttempt(ctx, a)
	if err != nil || since == nil || !since.Equal(clk.Now()) {
		t.Fatalf("failing since %v %v", since, err)
	}
	a.ID, a.StatusCode, a.Error = "a2", 204, ""
	if since, err := db.RecordWebhookAttempt(ctx, a); err != nil || since != nil {
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
		if _, _, err := db.SetSubscription(ctx, "u1", "premium", expires); err != nil {
			t.Fatal(err)
		}
	}
	if got := eventsOf(t, db, webhooks.UserSubscriptionChanged); len(got) != 1 || got[0]["userId"] != "u1" || got[0]["plan"] != "premium" || got[0]["previousPlan"] == "premium" {
		t.Fatalf("user.subscription_changed events: %v", got)
	}
	for range 2 {
		if _, err := db.SetDisabled(ctx, "u1", true, "chargeback", nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.SetDisabled(ctx, "u1", false, "", nil); err != nil {
		t.Fatal(err)
	}
	if got := eventsOf(t, db, webhooks.UserDisabled); len(got) != 1 || got[0]["userId"] != "u1" || got[0]["reason"] != "chargeback" {
		t.Fatalf("user.disabled events: %v", got)
	}
	if err := db.DeleteAccount(ctx, "u1", nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAccount(ctx, "u1", nil); err == nil {
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
		if _, err := db.ApplySubscriberChange(ctx, c); err != nil {
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
