package sqlstore_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// Email as a broadcast channel (issue 26): the email part of a broadcast
// walks the accounts of its audience and queues one notification_email
// job per account with a verified real address, in the transaction that
// moves its cursor, only for the lease's owner of a running job.
func TestBroadcastEmailConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"OneEmailPerEligibleAccount", testBroadcastEmailWalk},
		{"ATakeoverQueuesNoSecondEmail", testBroadcastEmailTakeover},
		{"CancelStopsTheWalk", testBroadcastEmailCancel},
		{"CapsCountAnOwnerOnceAcrossChannels", testBroadcastEmailCaps},
		{"EachEmailScheduledAtItsDueTime", testBroadcastEmailDue},
	}, mustOpenWithWorkers)
}

// emailJob is what a queued notification_email job says.
type emailJob struct {
	AccountID   string `json:"account_id"`
	Subject     string `json:"subject"`
	Category    string `json:"category"`
	BroadcastID string `json:"broadcast_id"`
}

// emailJobs are the queued notification_email jobs of broadcast job (all
// when job is "").
func emailJobs(t *testing.T, db *sqlstore.DB, job string) []emailJob {
	t.Helper()
	raw, err := sqlstore.NotificationEmailJobs(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	var out []emailJob
	for _, r := range raw {
		var e emailJob
		if err := json.Unmarshal([]byte(r), &e); err != nil {
			t.Fatal(err)
		}
		if job == "" || e.BroadcastID == job {
			out = append(out, e)
		}
	}
	return out
}

func emailAccounts(jobs []emailJob) []string {
	var ids []string
	for _, j := range jobs {
		ids = append(ids, j.AccountID)
	}
	return ids
}

// seedEmailAudience makes, with a device each (a1 two): a1 and a5
// verified, a2 not verified, a3 a guest (verified placeholder), a4
// verified but opted out of product emails; a6 verified without a device
// (not in the audience); a7 verified but disabled.
func seedEmailAudience(t *testing.T, db *sqlstore.DB) {
	t.Helper()
	for _, a := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7"} {
		mustAccount(t, db, a)
	}
	for _, d := range [][2]string{{"d0", "a1"}, {"d1", "a2"}, {"d2", "a3"}, {"d3", "a4"}, {"d4", "a5"}, {"d5", "a1"}, {"d7", "a7"}} {
		mustRegister(t, db, d[0], d[1], "tok-"+d[0])
	}
	ctx := context.Background()
	for _, q := range []string{
		`UPDATE accounts SET email_verified_at = created_at WHERE id <> 'a2'`,
		`UPDATE accounts SET guest_install_id = 'install-a3', email = 'guest-a3@guests.invalid' WHERE id = 'a3'`,
		`UPDATE accounts SET disabled_at = created_at WHERE id = 'a7'`,
	} {
		if err := sqlstore.ExecInTx(ctx, db, q); err != nil {
			t.Fatal(err)
		}
	}
	setPreference(t, db, "a4", "product", "email", false)
}

// createEmailBroadcast creates and leases to owner a product broadcast on
// push and email (capped at limit a day, 0: uncapped).
func createEmailBroadcast(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock, id, owner string, limit int) notifications.Job {
	t.Helper()
	ctx := context.Background()
	j, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: id, Subject: "News " + id, Content: "Body", Category: "product", CapPerDay: limit,
		Channels: []string{notifications.ChannelPush, notifications.ChannelEmail}}, notifications.BroadcastArgs{JobID: id})
	if err != nil || !j.Emails() || !j.Pushes() {
		t.Fatalf("created %+v, %v", j, err)
	}
	if l, err := db.AcquireBroadcast(ctx, id, owner, clk.Now().Add(time.Hour)); err != nil || !l.Acquired {
		t.Fatalf("acquire %s: %+v, %v", id, l, err)
	}
	return j
}

func emailArgs(job string) func(string, preferences.Schedule) (notifications.EmailArgs, time.Time) {
	return func(account string, _ preferences.Schedule) (notifications.EmailArgs, time.Time) {
		return notifications.EmailArgs{AccountID: account, Subject: "News " + job, Content: "Body", Category: "product", BroadcastID: job}, time.Time{}
	}
}

// claimEmails runs the email walk of job as owner in pages of limit until
// it is done (or stopped), and answers the last page.
func claimEmails(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock, job, owner string, limit int) notifications.EmailClaims {
	t.Helper()
	for range 20 {
		c, err := db.ClaimEmailBatch(context.Background(), job, owner, limit, clk.Now().Add(time.Hour), emailArgs(job))
		if err != nil {
			t.Fatal(err)
		}
		if c.Done || c.Stop {
			return c
		}
	}
	t.Fatalf("the email walk of %s did not end", job)
	return notifications.EmailClaims{}
}

// One email per account with a verified real address, however many
// devices it has; the unverified and the guest counted in
// NoEmailAddress, the opted out in OptedOut; an account without a device
// in the audience, or disabled, is not in it; the job's channels and
// counters read back.
func testBroadcastEmailWalk(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	seedEmailAudience(t, db)
	j := createEmailBroadcast(t, db, clk, "job1", "w1", 0)
	if j.TotalRecipients != 6 { // the devices, as before: d0..d5
		t.Fatalf("totalRecipients %d, want 6", j.TotalRecipients)
	}
	if c := claimEmails(t, db, clk, "job1", "w1", 2); !c.Done {
		t.Fatalf("last page %+v", c)
	}
	got := emailJobs(t, db, "job1")
	if ids := emailAccounts(got); !slices.Equal(ids, []string{"a1", "a5"}) {
		t.Fatalf("emails to %v, want [a1 a5]", ids)
	}
	if got[0].Subject != "News job1" || got[0].Category != "product" {
		t.Fatalf("email job %+v", got[0])
	}
	j, err := db.BroadcastJob(context.Background(), "job1")
	if want := (notifications.EmailCounts{Queued: 2, NoEmailAddress: 2, OptedOut: 1}); err != nil || j.Email != want || j.OptedOut != 0 || !slices.Equal(j.Channels, []string{"push", "email"}) {
		t.Fatalf("job %+v, %v; want email %+v (a1 and a5 queued, a2 and a3 without an address, a4 opted out), no device skipped, channels push,email", j, err, want)
	}
	// Walked to its end: another page queues nothing.
	if c := claimEmails(t, db, clk, "job1", "w1", 2); !c.Done || c.Queued != 0 || len(emailJobs(t, db, "job1")) != 2 {
		t.Fatalf("a page after the end: %+v", c)
	}
	// A broadcast of before (no channels) is push alone.
	old, err := db.CreateBroadcast(context.Background(), notifications.NewBroadcast{ID: "job0", Subject: "s", Content: "c", Category: "product"}, notifications.BroadcastArgs{JobID: "job0"})
	if err != nil || !old.Pushes() || old.Emails() {
		t.Fatalf("a broadcast without channels: %+v, %v", old, err)
	}
}

// A run dies after its first page committed; the run that takes the job
// over continues after it, and every account is emailed once. The dead
// run, should it come back, queues nothing.
func testBroadcastEmailTakeover(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedEmailAudience(t, db)
	createEmailBroadcast(t, db, clk, "job1", "w1", 0)
	c, err := db.ClaimEmailBatch(ctx, "job1", "w1", 1, clk.Now().Add(time.Minute), emailArgs("job1"))
	if err != nil || c.Queued != 1 || c.Done {
		t.Fatalf("first page %+v, %v", c, err)
	}
	clk.Advance(2 * time.Hour)
	if l, err := db.AcquireBroadcast(ctx, "job1", "w2", clk.Now().Add(time.Hour)); err != nil || !l.Acquired {
		t.Fatalf("take over %+v, %v", l, err)
	}
	if c, err := db.ClaimEmailBatch(ctx, "job1", "w1", 10, clk.Now().Add(time.Hour), emailArgs("job1")); err != nil || !c.Stop || c.Queued != 0 {
		t.Fatalf("the old owner's page %+v, %v; want stop", c, err)
	}
	claimEmails(t, db, clk, "job1", "w2", 1)
	if ids := emailAccounts(emailJobs(t, db, "job1")); !slices.Equal(ids, []string{"a1", "a5"}) {
		t.Fatalf("emails to %v, want [a1 a5] once each", ids)
	}
	if j, _ := db.BroadcastJob(ctx, "job1"); j.Email != (notifications.EmailCounts{Queued: 2, NoEmailAddress: 2, OptedOut: 1}) {
		t.Fatalf("counters %+v", j)
	}
}

// A cancel stops the walk at its next page: what was queued stays, no
// other email is queued.
func testBroadcastEmailCancel(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedEmailAudience(t, db)
	createEmailBroadcast(t, db, clk, "job1", "w1", 0)
	if c, err := db.ClaimEmailBatch(ctx, "job1", "w1", 1, clk.Now().Add(time.Hour), emailArgs("job1")); err != nil || c.Queued != 1 {
		t.Fatalf("first page %+v, %v", c, err)
	}
	if _, err := db.CancelBroadcast(ctx, "job1"); err != nil {
		t.Fatal(err)
	}
	if c, err := db.ClaimEmailBatch(ctx, "job1", "w1", 10, clk.Now().Add(time.Hour), emailArgs("job1")); err != nil || !c.Stop {
		t.Fatalf("a page after the cancel %+v, %v; want stop", c, err)
	}
	if ids := emailAccounts(emailJobs(t, db, "job1")); !slices.Equal(ids, []string{"a1"}) {
		t.Fatalf("emails to %v, want [a1] (queued before the cancel)", ids)
	}
}

// A capped broadcast counts an owner once however many channels reach
// them: the device walk counts a1 and a5, the email walk finds them
// counted (same send id) and emails them; an owner already at the cap
// gets no email and is counted in the email part's Capped.
func testBroadcastEmailCaps(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedEmailAudience(t, db)
	useCap(t, db, clk, "a5", "earlier-1", 2)
	useCap(t, db, clk, "a5", "earlier-2", 2) // a5 at the cap of 2
	createEmailBroadcast(t, db, clk, "job1", "w1", 2)
	for range 10 {
		c, err := db.ClaimNextBatch(ctx, "job1", "w1", 3, clk.Now().Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if c.Done {
			break
		}
	}
	if j, _ := db.BroadcastJob(ctx, "job1"); j.Capped != 1 { // a5's one device
		t.Fatalf("the device walk capped %d, want 1", j.Capped)
	}
	claimEmails(t, db, clk, "job1", "w1", 2)
	if ids := emailAccounts(emailJobs(t, db, "job1")); !slices.Equal(ids, []string{"a1"}) {
		t.Fatalf("emails to %v, want [a1] (a5 over the cap)", ids)
	}
	today := clk.Now().UTC().Format(time.DateOnly)
	if n := capCount(t, db, "a1", "product", today); n != 1 {
		t.Fatalf("a1 counted %d today, want 1 (push and email are one broadcast)", n)
	}
	if j, _ := db.BroadcastJob(ctx, "job1"); j.Capped != 1 || j.Email != (notifications.EmailCounts{Queued: 1, Capped: 1, NoEmailAddress: 2, OptedOut: 1}) {
		t.Fatalf("job %+v; want a5's device capped, and its email (1 queued, 1 capped)", j)
	}
}

// The walk reads each account's schedule in its page and schedules the
// account's email job at the time the engine says it is due: a1 (in
// Berlin, quiet 22:00–07:00) at the time given for that schedule, a5
// (no schedule) at once.
func testBroadcastEmailDue(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	seedEmailAudience(t, db)
	night := preferences.QuietHours{Start: 22 * 60, End: 7 * 60}
	if err := db.InTx(ctx, func(ctx context.Context) error {
		return db.SetNotificationSchedule(ctx, "a1", preferences.Schedule{TimeZone: "Europe/Berlin", Quiet: &night})
	}); err != nil {
		t.Fatal(err)
	}
	createEmailBroadcast(t, db, clk, "job1", "w1", 0)
	later := time.Now().Add(30 * 24 * time.Hour).UTC().Truncate(time.Second)
	var seen []preferences.Schedule
	due := func(account string, s preferences.Schedule) (notifications.EmailArgs, time.Time) {
		args, _ := emailArgs("job1")(account, s)
		seen = append(seen, s)
		if s.TimeZone == "Europe/Berlin" && s.Quiet != nil && *s.Quiet == night {
			return args, later
		}
		return args, time.Time{}
	}
	if c, err := db.ClaimEmailBatch(ctx, "job1", "w1", 10, clk.Now().Add(time.Hour), due); err != nil || c.Queued != 2 || !c.Done {
		t.Fatalf("walk %+v, %v", c, err)
	}
	if len(seen) != 2 || seen[1] != (preferences.Schedule{}) {
		t.Fatalf("schedules handed over %+v, want a1's then a5's (none)", seen)
	}
	at, err := sqlstore.NotificationEmailSchedule(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if !at["a1"].Equal(later) {
		t.Fatalf("a1's email scheduled at %v, want %v (its due time)", at["a1"], later)
	}
	if a5, ok := at["a5"]; !ok || !a5.Before(later.Add(-29*24*time.Hour)) {
		t.Fatalf("a5's email scheduled at %v (queued %v), want now", a5, ok)
	}
}
