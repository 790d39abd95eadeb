package cluster

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

// Three replicas started at the same moment on a fresh database (no
// `herald migrate` before) all come up, and all serve.
func TestReplicasStartTogether(t *testing.T) {
	c := newCluster(t, nil)
	rs := c.Launch(t, replicas)
	for _, err := range c.WaitAllHealthy(rs) {
		t.Errorf("a replica started together with %d others on a fresh database did not come up: %v", len(rs)-1, err)
	}
	if t.Failed() {
		return
	}
	for _, r := range rs {
		resp, err := r.Client.Get(r.URL + "/readyz")
		if err != nil {
			t.Fatalf("%s /readyz: %v", r.Name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s /readyz: %d, want 200", r.Name, resp.StatusCode)
		}
	}
	// The schema they made works from every replica: an operator created
	// by the CLI logs in through each.
	c.CLI(t, "admin", "create", "--email", opsEmail, "--password", password)
	seen := map[string]bool{}
	for range 2 * replicas {
		a := c.GQL(t, "", `mutation($e:String!,$p:String!){login(email:$e,password:$p){accessToken}}`,
			map[string]any{"e": opsEmail, "p": password})
		if a.Status != http.StatusOK || jsonPath(a.Data, "login", "accessToken") == nil {
			t.Fatalf("login via %s: %d %.300s", a.Replica, a.Status, a.Raw)
		}
		seen[a.Replica] = true
	}
	if len(seen) != replicas {
		t.Fatalf("logins were answered by %v, want all %d replicas", seen, replicas)
	}
}

// A broadcast delivers exactly once across the replicas: every device gets
// exactly one push at the fake FCM, and the job's counters say so.
func TestBroadcastOnceAcrossReplicas(t *testing.T) {
	const devicesN = 2000
	c := newCluster(t, nil)
	c.Prepare(t)
	tokens := c.SeedDevices(t, devicesN)
	c.Start(t, replicas)
	admin := c.Login(t, opsEmail)

	job, total := c.Broadcast(t, admin, "Once")
	if total != devicesN {
		t.Fatalf("totalRecipients %d, want %d", total, devicesN)
	}
	expectCompleted(t, c.WaitFinished(t, admin, job, jobWait), devicesN)
	got := c.Deliveries(job)
	var wrong []string
	for _, tok := range tokens {
		if n := got[tok]; n != 1 {
			wrong = append(wrong, fmt.Sprintf("%s: %d", tok, n))
		}
	}
	if len(wrong) > 0 || len(got) != devicesN {
		t.Fatalf("%d of %d devices did not get exactly one push (%d tokens reached); first: %v",
			len(wrong), devicesN, len(got), wrong[:min(len(wrong), 10)])
	}
	t.Logf("worked by %v", names(c.WorkersOf(job)))
}

// SIGKILL to the replica working a broadcast, in the middle of it, while
// the fake FCM (answering in 20–40 ms, never paused) has many sends in
// flight: the survivors resume it within the takeover time (lease TTL +
// takeoverSlack) without a restart and finish it, no device is missed,
// and the devices pushed twice are at most the sends in flight at the kill
// plus 20.
func TestBroadcastWorkerKilled(t *testing.T) {
	const devicesN = 3000
	c := newCluster(t, nil)
	c.Prepare(t)
	tokens := c.SeedDevices(t, devicesN)
	c.Start(t, replicas)
	admin := c.Login(t, opsEmail)

	job, total := c.Broadcast(t, admin, "Takeover")
	if total != devicesN {
		t.Fatalf("totalRecipients %d, want %d", total, devicesN)
	}
	var worker *replica
	testsupport.Eventually(t, pollWait, func() bool {
		if ws := c.WorkersOf(job); len(ws) > 0 {
			worker = ws[0]
			return true
		}
		return false
	}, `no replica logged "broadcast working" for job %s`, job)
	testsupport.Eventually(t, pollWait, func() bool { return c.FCM.TotalDelivered() >= devicesN/3 },
		"the broadcast never reached a third of the devices (%d)", c.FCM.TotalDelivered())

	killAt, goneAt := c.Kill(t, worker)
	atKill := c.FCM.TotalDelivered()
	if atKill >= devicesN {
		t.Fatalf("the broadcast had reached all %d devices before the kill; the test needs more devices", devicesN)
	}
	// In flight at the kill: received by the fake before the process was
	// gone, and not answered before the signal.
	inFlight := 0
	for _, e := range c.FCM.Exchanges() {
		if e.Received.Before(goneAt) && (e.Answered.IsZero() || !e.Answered.Before(killAt)) {
			inFlight++
		}
	}
	// What the dead worker had written: sends it saw answered but had not
	// yet recorded are sent again by design (at least once), the rest
	// never. Read before any survivor takes over (checked below).
	jk := c.Job(t, admin, job)
	readAt := time.Now()
	recorded := asInt(t, jk["sent"]) + asInt(t, jk["failed"]) + asInt(t, jk["invalidTokens"])
	unrecorded := max(atKill-recorded, 0)
	t.Logf("killed %s, the broadcast's worker, after %d of %d devices (%d recorded), with %d sends in flight", worker.Name, atKill, devicesN, recorded, inFlight)

	// Takeover: a survivor sends again within the lease TTL + slack.
	takeover := leaseTTL + takeoverSlack
	var resumedAt time.Time
	for resumedAt.IsZero() {
		for _, e := range c.FCM.Exchanges() {
			if e.Received.After(goneAt) {
				resumedAt = e.Received
				break
			}
		}
		if resumedAt.IsZero() && time.Since(killAt) > takeover {
			t.Fatalf("no live replica resumed the broadcast within %s of the kill (HERALD_PUSH_LEASE_TTL %s + %s): the fake FCM got no send since; job now %v, %d of %d devices reached",
				takeover, leaseTTL, takeoverSlack, c.Job(t, admin, job), c.FCM.TotalDelivered(), devicesN)
		}
		time.Sleep(20 * time.Millisecond)
	}
	j := c.WaitFinished(t, admin, job, jobWait)
	t.Logf("resumed %s after the kill, by %v", resumedAt.Sub(killAt).Round(time.Millisecond), names(c.WorkersOf(job)))
	expectCompleted(t, j, devicesN)

	repeats, twice := c.ExpectReachedAll(t, job, tokens)
	if !resumedAt.After(readAt) {
		t.Fatalf("the job's counts were read at %s, after the takeover at %s: the bound below would be wrong", readAt, resumedAt)
	}
	bound := inFlight + unrecorded + 20
	if repeats > bound {
		t.Errorf("%d repeated pushes (%d devices pushed more than once) after the kill, over the bound of %d: %d sends in flight at the kill + %d answered but not yet recorded + 20",
			repeats, twice, bound, inFlight, unrecorded)
	}
	t.Logf("%d repeated pushes after the kill (bound %d)", repeats, bound)
}

// SIGKILL to the replica polling Telegram (no webhook URL): another
// replica polls within the takeover time (an update sent after the kill is
// answered), and never are two getUpdates calls in flight at once.
func TestPollerKilled(t *testing.T) {
	c := newCluster(t, nil)
	c.Prepare(t)
	c.Start(t, replicas)

	var poller *replica
	testsupport.Eventually(t, pollWait, func() bool {
		poller = c.Poller()
		return poller != nil && c.Bot.PollsInFlight() == 1
	}, "no replica took the polling lease and polled getUpdates")
	c.Bot.PushText(1001, "/start")
	testsupport.Eventually(t, pollWait, func() bool { return len(c.Bot.SentTo("1001")) > 0 }, "/start was not answered before the kill")

	killAt, goneAt := c.Kill(t, poller)
	c.Bot.PushText(1002, "/start")
	takeover := leaseTTL + takeoverSlack
	for len(c.Bot.SentTo("1002")) == 0 {
		if time.Since(killAt) > takeover {
			t.Fatalf("no live replica took polling over within %s of killing the poller %s (HERALD_TELEGRAM_POLL_LEASE_TTL %s + %s): /start sent after the kill is unanswered; %d getUpdates calls since the kill",
				takeover, poller.Name, leaseTTL, takeoverSlack, pollsSince(c.Bot, goneAt))
		}
		time.Sleep(20 * time.Millisecond)
	}
	next := "a replica that logged no lease"
	if r := c.Poller(); r != nil {
		next = r.Name
	}
	t.Logf("killed the poller %s; %s polled and answered an update %s after the kill", poller.Name, next, time.Since(killAt).Round(time.Millisecond))
	// Polling goes on.
	c.Bot.PushText(1003, "/start")
	testsupport.Eventually(t, pollWait, func() bool { return len(c.Bot.SentTo("1003")) > 0 }, "/start was not answered after the takeover")

	if n := c.Bot.MaxConcurrentPolls(); n > 1 {
		var overlaps []string
		for _, p := range c.Bot.Polls() {
			if p.Concurrent > 1 {
				overlaps = append(overlaps, fmt.Sprintf("%s (%d at once)", p.Start.Format("15:04:05.000"), p.Concurrent))
			}
		}
		t.Errorf("up to %d getUpdates calls were in flight at once, want never more than 1; overlapping calls started at %v", n, overlaps)
	}
}

func pollsSince(fake *telegramtest.Server, at time.Time) int {
	n := 0
	for _, p := range fake.Polls() {
		if p.Start.After(at) {
			n++
		}
	}
	return n
}

// A verification code emailed by one replica verifies at another the
// moment the email arrives, 30 times over: signup through the proxy, wait
// for the email at the shared SMTP server, verifyEmail through the proxy
// at once (the code is still being sent: docs/operations.md says it verifies).
func TestCodeVerifiesAtAnotherReplica(t *testing.T) {
	const signups = 30
	const sentSample = `herald_emails_total{result="sent"}`
	c := newCluster(t, nil)
	c.Prepare(t)
	rs := c.Start(t, replicas)

	sent := map[string]float64{}
	var failures []string
	cross := 0
	for i := range signups {
		email := fmt.Sprintf("user-%02d@example.com", i)
		d := c.MustGQL(t, "signup "+email, "", `mutation($e:String!,$p:String!){signup(email:$e,password:$p){success}}`,
			map[string]any{"e": email, "p": password})
		if jsonPath(d, "signup", "success") != true {
			t.Fatalf("signup %s: %v", email, d)
		}
		msg := c.SMTP.WaitForMessage(t, email, mailWait)
		code, ok := mailtest.ExtractCode(msg.Text)
		if !ok {
			t.Fatalf("the email to %s has no code:\n%s", email, msg.Text)
		}
		lag := time.Since(msg.Received)
		a := c.GQL(t, "", `mutation($e:String!,$c:String!){verifyEmail(email:$e,code:$c)}`, map[string]any{"e": email, "c": code})

		// Which replica sent it: the one whose count of sent emails grew.
		sender := ""
		testsupport.Eventually(t, pollWait, func() bool {
			for _, r := range rs {
				if n := r.Metric(t, sentSample); n > sent[r.Name] {
					sent[r.Name], sender = n, r.Name
				}
			}
			return sender != ""
		}, "no replica counted the email to %s as sent", email)
		if sender != a.Replica {
			cross++
		}
		if a.Status != http.StatusOK || jsonPath(a.Data, "verifyEmail") != true {
			failures = append(failures, fmt.Sprintf("%s: emailed by %s, verifyEmail at %s sent %s after the email arrived: status %d %s",
				email, sender, a.Replica, lag.Round(time.Microsecond), a.Status, strings.TrimSpace(a.Raw)))
		}
	}
	t.Logf("%d of %d codes were verified at another replica than the one that emailed them", cross, signups)
	if cross == 0 {
		t.Errorf("no code was verified at another replica than the one that emailed it")
	}
	if len(failures) > 0 {
		t.Errorf("%d of %d codes did not verify immediately after their email arrived:\n%s", len(failures), signups, strings.Join(failures, "\n"))
	}
}

// The send-rate cap (HERALD_PUSH_RATE) is shared by the replicas through
// Redis: six broadcasts at once, two on each replica (each works at most
// two at a time), and the rate the fake FCM sees stays within the cap,
// with 20% and one burst (a tenth of a second's worth) of tolerance, in
// every one-second window and over the whole run.
func TestSharedSendRate(t *testing.T) {
	const (
		rate       = 200
		devicesN   = 150
		broadcasts = 6
		window     = time.Second
	)
	c := newCluster(t, map[string]string{"HERALD_PUSH_RATE": fmt.Sprint(rate)})
	c.Prepare(t)
	tokens := c.SeedDevices(t, devicesN)
	c.Start(t, replicas)
	admin := c.Login(t, opsEmail)

	var jobs []string
	for i := range broadcasts {
		id, total := c.Broadcast(t, admin, fmt.Sprintf("Rate %d", i))
		if total != devicesN {
			t.Fatalf("totalRecipients %d, want %d", total, devicesN)
		}
		jobs = append(jobs, id)
	}
	for _, id := range jobs {
		expectCompleted(t, c.WaitFinished(t, admin, id, jobWait), devicesN)
		got := c.Deliveries(id)
		for _, tok := range tokens {
			if got[tok] != 1 {
				t.Fatalf("broadcast %s reached %s %d times, want once", id, tok, got[tok])
			}
		}
	}
	for _, r := range c.Live() {
		var worked []string
		for _, id := range jobs {
			if len(r.Logged("broadcast working", map[string]string{"job_id": id})) > 0 {
				worked = append(worked, id)
			}
		}
		if len(worked) == 0 {
			t.Errorf("%s worked none of the broadcasts: the cap was not measured across all %d replicas", r.Name, replicas)
		}
	}

	times := harness.SendTimes(c.FCM.Exchanges())
	if len(times) < 2 {
		t.Fatalf("the fake FCM got %d sends", len(times))
	}
	burst := max(rate/10, 1)
	limit := rate*12/10 + burst
	most, from := harness.MostInWindow(times, window)
	span := times[len(times)-1].Sub(times[0])
	overall := float64(len(times)-1) / span.Seconds()
	t.Logf("%d sends in %s (%.0f/s); at most %d in one second (from %s); cap %d/s, allowed %d in a second",
		len(times), span.Round(time.Millisecond), overall, most, from.Format("15:04:05.000"), rate, limit)
	if most > limit {
		t.Errorf("%d sends reached the fake FCM within one second (from %s), over the shared cap of HERALD_PUSH_RATE=%d/s (allowed: %d, i.e. +20%% and a burst of %d)",
			most, from.Format("15:04:05.000"), rate, limit, burst)
	}
	if overall > rate*1.2 {
		t.Errorf("the fake FCM got %d sends in %s, %.0f per second, over the shared cap of %d/s (+20%%)", len(times), span.Round(time.Millisecond), overall, rate)
	}
}

// A logout at one replica is refused at every replica, though each had the
// session's live answer cached: the revocation is announced to all.
func TestLogoutEverywhere(t *testing.T) {
	c := newCluster(t, nil)
	c.Prepare(t)
	rs := c.Start(t, replicas)
	admin := c.Login(t, opsEmail)
	me := func(r *replica) int {
		req, _ := http.NewRequest(http.MethodGet, r.URL+"/api/v1/users/me", nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := r.Client.Do(req)
		if err != nil {
			t.Fatalf("users/me at %s: %v", r.Name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, r := range rs { // every replica caches the live session
		for range 3 {
			if s := me(r); s != http.StatusOK {
				t.Fatalf("users/me at %s before the logout: %d", r.Name, s)
			}
		}
	}
	req, _ := http.NewRequest(http.MethodPost, rs[0].URL+"/api/v1/auth/logout", nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	resp, err := rs[0].Client.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("logout at %s: %v %v", rs[0].Name, resp, err)
	}
	resp.Body.Close()
	if s := me(rs[0]); s != http.StatusUnauthorized {
		t.Fatalf("users/me at %s, where the logout happened: %d, want 401 at once", rs[0].Name, s)
	}
	for _, r := range rs[1:] {
		testsupport.Eventually(t, pollWait, func() bool { return me(r) == http.StatusUnauthorized },
			"users/me at %s to refuse the logged-out token", r.Name)
	}
}
