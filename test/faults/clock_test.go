package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

// Three replicas whose clocks disagree (HERALD_TEST_CLOCK_OFFSET): r1 runs
// 2 s behind, r2 2 s ahead, r3 on time. r1 starts alone and takes a push
// broadcast, a messenger broadcast and the Telegram polling lease; r2 and
// r3 then join. While r1 lives, nothing of its work is taken over: no
// other replica works either broadcast, never are two getUpdates calls in
// flight at once, no device and no chat gets a message twice, and River's
// leader does not change. Once r1 is killed (SIGKILL), a survivor resumes
// the push broadcast and polling within the lease TTL + takeoverSlack, and
// the messenger broadcast within its lease (15 s) + takeoverSlack: the
// same bounds as with agreeing clocks (the database's clock decides, so
// the 2 s are not added); both finish, every device and chat reached,
// repeats within the documented crash bounds.
//
// Against a store that writes and compares leases with each replica's
// clock, r1's 3 s leases (push, polling) have lapsed on r2's clock 1 s
// after r1 writes them (3 s − 2 s − 2 s), so r2 takes them over while r1
// lives.
func TestClockSkewedReplicas(t *testing.T) {
	const (
		devicesN = 5000
		chats    = 60
		pushRate = 250 // per second, shared: the broadcast lasts about 20 s
		news     = "Skewed news"
		skew     = 2 * time.Second
		// hold is how long the three replicas run side by side before the
		// kill: several lease periods and sweeps.
		hold          = 3 * harness.LeaseTTL
		takeoverSlack = 7 * time.Second // as in test/cluster
		// messengerLease is a messenger broadcast's lease, fixed
		// (docs/messenger.md: 15 s).
		messengerLease = 15 * time.Second
	)
	offsets := map[string]time.Duration{"r1": -skew, "r2": skew, "r3": 0}
	pg, _, c := servers(t, harness.Options{
		FCMLatency: [2]time.Duration{2 * time.Millisecond, 5 * time.Millisecond},
		Env: map[string]string{
			"HERALD_PUSH_RATE":     strconv.Itoa(pushRate),
			"HERALD_TELEGRAM_RATE": "3", // the messenger broadcast lasts about 20 s
		},
	})
	c.ReplicaEnv = func(name string) map[string]string {
		return map[string]string{"HERALD_TEST_CLOCK_OFFSET": offsets[name].String()}
	}
	c.Prepare(t)
	tokens := c.SeedDevices(t, devicesN)
	owner := c.Start(t, 1)[0]
	admin := c.Login(t, harness.OpsEmail)

	// The messenger's audience, answered by r1, the only poller.
	for i := range chats {
		c.Bot.PushText(int64(8000+i), "/start")
	}
	testsupport.Eventually(t, pollWait, func() bool {
		for i := range chats {
			if len(c.Bot.SentTo(strconv.Itoa(8000+i))) == 0 {
				return false
			}
		}
		return true
	}, "not every chat's /start was answered")

	job, total := c.Broadcast(t, admin, "Skewed")
	if total != devicesN {
		t.Fatalf("totalRecipients %d, want %d", total, devicesN)
	}
	mb := c.MustGQL(t, "sendMessengerBroadcast", admin,
		`mutation($m:String!){sendMessengerBroadcast(message:$m){id totalRecipients}}`, map[string]any{"m": news})
	mbID, _ := jsonPath(mb, "sendMessengerBroadcast", "id").(string)
	if n, _ := jsonPath(mb, "sendMessengerBroadcast", "totalRecipients").(float64); mbID == "" || int(n) != chats {
		t.Fatalf("sendMessengerBroadcast: %v, want a job for %d chats", mb, chats)
	}
	workers := func(msg, id string) []string {
		var names []string
		for _, r := range c.Replicas() {
			if len(r.Logged(msg, map[string]string{"job_id": id})) > 0 {
				names = append(names, r.Name)
			}
		}
		return names
	}
	testsupport.Eventually(t, pollWait, func() bool {
		return len(workers("broadcast working", job)) > 0 && len(workers("messenger broadcast working", mbID)) > 0
	}, "r1 did not start both broadcasts: push %v, messenger %v", workers("broadcast working", job), workers("messenger broadcast working", mbID))

	leaders := watchLeader(t, pg.URL("herald", "clock-probe"))
	c.Start(t, 2) // r2 (+2 s) and r3
	// Nothing may happen for hold: watched until then, or until something
	// does (reported below).
	for end := time.Now().Add(hold); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		if len(workers("broadcast working", job)) > 1 || len(workers("messenger broadcast working", mbID)) > 1 || c.Bot.MaxConcurrentPolls() > 1 {
			break
		}
	}
	leaderChanges := leaders.stop()

	// While r1 lived: its work stayed its own.
	if w := workers("broadcast working", job); len(w) != 1 || w[0] != owner.Name {
		t.Errorf("the push broadcast was worked by %v while %s lived, want %s alone", w, owner.Name, owner.Name)
	}
	if w := workers("messenger broadcast working", mbID); len(w) != 1 || w[0] != owner.Name {
		t.Errorf("the messenger broadcast was worked by %v while %s lived, want %s alone", w, owner.Name, owner.Name)
	}
	if p := c.Poller(); p != owner {
		name := "no replica"
		if p != nil {
			name = p.Name
		}
		t.Errorf("the Telegram polling lease moved to %s while %s lived", name, owner.Name)
	}
	if n := c.Bot.MaxConcurrentPolls(); n > 1 {
		t.Errorf("up to %d getUpdates calls were in flight at once while %s lived, want 1", n, owner.Name)
	}
	newsTo := func() map[string]int {
		got := map[string]int{}
		for _, m := range c.Bot.Sent() {
			if m.Text == news {
				got[m.ChatID]++
			}
		}
		return got
	}
	var twice []string
	for tok, n := range c.Deliveries(job) {
		if n > 1 {
			twice = append(twice, tok)
		}
	}
	for chat, n := range newsTo() {
		if n > 1 {
			twice = append(twice, "chat "+chat)
		}
	}
	if len(twice) > 0 {
		t.Errorf("%d devices or chats got a message more than once while %s lived, want none; first: %v", len(twice), owner.Name, twice[:min(len(twice), 10)])
	}
	if len(leaderChanges) > 1 {
		t.Errorf("River's leader changed while the replicas ran side by side: %v", leaderChanges)
	}
	if t.Failed() {
		t.FailNow()
	}
	delivered, sentNews := c.FCM.TotalDelivered(), len(newsTo())
	if delivered >= devicesN || sentNews >= chats {
		t.Fatalf("both broadcasts must still be running at the kill: %d of %d devices, %d of %d chats", delivered, devicesN, sentNews, chats)
	}
	t.Logf("after %s side by side: %s alone worked both broadcasts (%d of %d devices, %d of %d chats) and polled; River's leader %v",
		hold, owner.Name, delivered, devicesN, sentNews, chats, leaderChanges)

	// r1 killed: the survivors take over.
	killAt, goneAt := c.Kill(t, owner)
	c.Bot.PushText(8999, "/start")
	takeover, takeoverNews := harness.LeaseTTL+takeoverSlack, messengerLease+takeoverSlack
	var pushAt, newsAt, pollAt time.Time
	for pushAt.IsZero() || newsAt.IsZero() || pollAt.IsZero() {
		if pushAt.IsZero() {
			for _, e := range c.FCM.Exchanges() {
				if e.Received.After(goneAt) {
					pushAt = e.Received
					break
				}
			}
		}
		for _, m := range c.Bot.Sent() {
			if m.At.After(goneAt) && m.Text == news && newsAt.IsZero() {
				newsAt = m.At
			}
			if m.ChatID == "8999" && pollAt.IsZero() {
				pollAt = m.At
			}
		}
		if since := time.Since(killAt); (since > takeover && (pushAt.IsZero() || pollAt.IsZero())) || since > takeoverNews {
			t.Fatalf("%s after killing %s, not everything was taken over: push resumed at %v and polling at %v (bound: lease TTL %s + %s), the messenger broadcast at %v (bound: its lease %s + %s); zero: not yet",
				since.Round(time.Millisecond), owner.Name, pushAt, pollAt, harness.LeaseTTL, takeoverSlack, newsAt, messengerLease, takeoverSlack)
		}
		time.Sleep(20 * time.Millisecond)
	}
	expectCompleted := harness.ExpectCompleted
	expectCompleted(t, c.WaitFinished(t, admin, job, jobWait), devicesN)
	repeats, _ := c.ExpectReachedAll(t, job, tokens)
	if repeats > crashBound {
		t.Errorf("%d repeated pushes after the kill, over the documented crash bound of %d", repeats, crashBound)
	}
	m := waitFinished(t, c, admin, "messengerBroadcast", mbID, jobWait)
	if m["status"] != "completed" || m["sent"] != float64(chats) {
		t.Errorf("messenger broadcast %v, want completed with %d sent", m, chats)
	}
	chatRepeats := 0
	got := newsTo()
	for i := range chats {
		n := got[strconv.Itoa(8000+i)]
		if n == 0 {
			t.Errorf("chat %d never got the messenger broadcast", 8000+i)
		}
		chatRepeats += max(n-1, 0)
	}
	if chatRepeats > messengerBatch {
		t.Errorf("%d repeated messenger messages after the kill, over the documented bound of one batch (%d chats)", chatRepeats, messengerBatch)
	}
	t.Logf("after the kill: push resumed in %s, messenger in %s, polling in %s; the broadcasts were worked by %v and %v",
		pushAt.Sub(killAt).Round(time.Millisecond), newsAt.Sub(killAt).Round(time.Millisecond), pollAt.Sub(killAt).Round(time.Millisecond),
		workers("broadcast working", job), workers("messenger broadcast working", mbID))
	t.Logf("%d repeated pushes (bound %d), %d repeated messenger messages (bound %d)", repeats, crashBound, chatRepeats, messengerBatch)
}

// leaderWatch reads River's leader (river_leader) every 100 ms and keeps
// each change.
type leaderWatch struct {
	done, stopped chan struct{}
	mu            sync.Mutex
	seen          []string
}

func watchLeader(t *testing.T, url string) *leaderWatch {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to read River's leader: %v", err)
	}
	w := &leaderWatch{done: make(chan struct{}), stopped: make(chan struct{})}
	go func() {
		defer close(w.stopped)
		defer conn.Close(ctx)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			var id string
			err := conn.QueryRow(ctx, `SELECT leader_id FROM river_leader`).Scan(&id)
			if errors.Is(err, pgx.ErrNoRows) {
				id = "(none)"
			} else if err != nil {
				id = fmt.Sprintf("(error: %v)", err)
			}
			w.mu.Lock()
			if len(w.seen) == 0 || w.seen[len(w.seen)-1] != id {
				w.seen = append(w.seen, id)
			}
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// stop ends the watch and returns the leaders seen, in order, each once
// per change.
func (w *leaderWatch) stop() []string {
	close(w.done)
	<-w.stopped
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen
}
