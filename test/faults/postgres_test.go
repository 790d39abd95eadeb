package faults

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/test/harness"
)

// The documented crash bound (docs/operations.md, "After a crash, what can
// be sent twice"): the sends in flight, at most HERALD_PUSH_CONCURRENCY,
// plus the outcomes of about two batches of HERALD_PUSH_BATCH_SIZE not yet
// settled. The replicas run with the defaults.
const (
	pushConcurrency = 64
	pushBatchSize   = 500
	crashBound      = pushConcurrency + 2*pushBatchSize
	// docs/messenger.md: a crash repeats at most one batch, 20 chats.
	messengerBatch = 20
)

// PostgreSQL stopped (pg_ctl stop -m fast) and started again in the middle
// of a 50,000-device broadcast, a burst of webhook deliveries, code emails
// and a messenger broadcast, later every Herald connection terminated by
// pg_terminate_backend, and later still pg_ctl restart -m fast, under two
// replicas: every device is delivered, with repeats within the documented
// crash bound for each of the three disruptions; the broadcast's progress
// stream (live events, on PostgreSQL's LISTEN) reaches the final state; every webhook event arrives; every code email is sent
// exactly once; the messenger broadcast reaches every chat; and while the
// database was away clients got 200 or 503 SERVICE_UNAVAILABLE with
// Retry-After, never a 500.
func TestPostgresRestartMidWork(t *testing.T) {
	const (
		devicesN = 50_000
		signups  = 20
		chats    = 100
		pushRate = 2500 // per second, shared: the broadcast lasts about 20 s
		news     = "Fault news"
		outage   = harness.LeaseTTL + 2*time.Second
		// The stop, pg_terminate_backend and the restart.
		disruptions = 3
	)
	pg, _, c := servers(t, harness.Options{
		FCMLatency: [2]time.Duration{2 * time.Millisecond, 5 * time.Millisecond},
		Env: map[string]string{
			"HERALD_PUSH_RATE":               strconv.Itoa(pushRate),
			"HERALD_TELEGRAM_RATE":           "10", // the messenger broadcast lasts about 10 s
			"HERALD_WEBHOOKS_ALLOW_INSECURE": "on",
			"HERALD_WEBHOOKS_ALLOW_PRIVATE":  "on",
			"HERALD_WEBHOOKS_RETRY_SCHEDULE": "1s" + strings.Repeat(",2s", 40), // retried past any outage here
			"HERALD_JOB_RETRY_MAX":           "1s",                             // an email's 100 attempts last past any outage here
		},
	})
	c.Prepare(t)
	tokens := c.SeedDevices(t, devicesN)
	c.Start(t, 2)
	admin := c.Login(t, harness.OpsEmail)

	hooks := newReceiver(t)
	subscribeReceiver(t, c, admin, hooks, "user.created", "messenger.subscriber.subscribed", "notification.broadcast.completed", "messenger.broadcast.completed")

	// The messenger's audience: chats that sent /start to the bot.
	for i := range chats {
		c.Bot.PushText(int64(7000+i), "/start")
	}
	testsupport.Eventually(t, pollWait, func() bool {
		for i := range chats {
			if len(c.Bot.SentTo(strconv.Itoa(7000+i))) == 0 {
				return false
			}
		}
		return true
	}, "not every chat's /start was answered")

	sentNews := func() int {
		n := 0
		for _, m := range c.Bot.Sent() {
			if m.Text == news {
				n++
			}
		}
		return n
	}
	probe := startProber(t, c, admin)
	job, total := c.Broadcast(t, admin, "Restart")
	if total != devicesN {
		t.Fatalf("totalRecipients %d, want %d", total, devicesN)
	}
	// Live events ride PostgreSQL's LISTEN: the progress stream must
	// outlive the outages (reconnecting as EventSource does).
	progress := watchProgress(t, c, admin, job)

	testsupport.Eventually(t, 2*time.Minute, func() bool { return c.FCM.TotalDelivered() >= devicesN/5 },
		"the broadcast never reached a fifth of the devices (%d)", c.FCM.TotalDelivered())
	mb := c.MustGQL(t, "sendMessengerBroadcast", admin,
		`mutation($m:String!){sendMessengerBroadcast(message:$m){id totalRecipients}}`, map[string]any{"m": news})
	mbID, _ := jsonPath(mb, "sendMessengerBroadcast", "id").(string)
	if n, _ := jsonPath(mb, "sendMessengerBroadcast", "totalRecipients").(float64); mbID == "" || int(n) != chats {
		t.Fatalf("sendMessengerBroadcast: %v, want a job for %d chats", mb, chats)
	}
	testsupport.Eventually(t, pollWait, func() bool { return sentNews() >= chats/10 },
		"the messenger broadcast never reached a tenth of the chats (%d)", sentNews())
	// Code emails and webhook deliveries in flight across the restart: the
	// mail server and the receiver refuse (temporarily) until it is over.
	c.SMTP.SetFailing(true)
	hooks.setFailing(true)
	var emails []string
	for i := range signups {
		email := fmt.Sprintf("signup-%02d@example.com", i)
		d := c.MustGQL(t, "signup "+email, "", `mutation($e:String!,$p:String!){signup(email:$e,password:$p){success}}`,
			map[string]any{"e": email, "p": harness.Password})
		if jsonPath(d, "signup", "success") != true {
			t.Fatalf("signup %s: %v", email, d)
		}
		emails = append(emails, email)
	}

	stoppedAt := time.Now()
	pg.Stop(t)
	atStop, newsAtStop := c.FCM.TotalDelivered(), sentNews()
	if newsAtStop >= chats || atStop >= devicesN {
		t.Fatalf("at the stop %d of %d devices and %d of %d chats were reached; the test needs both in flight", atStop, devicesN, newsAtStop, chats)
	}
	// Held down past the lease TTL, and until clients have seen it
	// (logins need the database).
	testsupport.Eventually(t, pollWait, func() bool {
		return probe.Unavailable("login", stoppedAt) >= 3 && time.Since(stoppedAt) > outage
	}, "no login answered 503 while PostgreSQL was stopped")
	pg.Start(t)
	t.Logf("PostgreSQL down for %s, from %d devices delivered and %d of %d chats sent the messenger broadcast",
		time.Since(stoppedAt).Round(time.Millisecond), atStop, newsAtStop, chats)
	c.SMTP.SetFailing(false)
	hooks.setFailing(false)

	testsupport.Eventually(t, 2*time.Minute, func() bool { return c.FCM.TotalDelivered() >= atStop+devicesN/4 },
		"the broadcast made no progress after PostgreSQL came back (%d of %d delivered)", c.FCM.TotalDelivered(), devicesN)
	if c.FCM.TotalDelivered() >= devicesN {
		t.Fatalf("the broadcast had reached all %d devices before pg_terminate_backend; the test needs more devices or a lower rate", devicesN)
	}
	killed := pg.TerminateBackends(t, heraldApp)
	if killed == 0 {
		t.Fatal("pg_terminate_backend found no connection of Herald's")
	}
	atKill := c.FCM.TotalDelivered()
	t.Logf("pg_terminate_backend ended %d connections, at %d devices delivered", killed, atKill)

	// And a plain restart, as an operator's pg_ctl restart -m fast.
	testsupport.Eventually(t, 2*time.Minute, func() bool { return c.FCM.TotalDelivered() >= atKill+devicesN/4 },
		"the broadcast made no progress after pg_terminate_backend (%d of %d delivered)", c.FCM.TotalDelivered(), devicesN)
	if c.FCM.TotalDelivered() >= devicesN {
		t.Fatalf("the broadcast had reached all %d devices before the restart; the test needs more devices or a lower rate", devicesN)
	}
	pg.Restart(t)
	t.Logf("PostgreSQL restarted at %d devices delivered", c.FCM.TotalDelivered())

	j := waitFinished(t, c, admin, "notificationJob", job, jobWait)
	harness.ExpectCompleted(t, j, devicesN)
	if last := progress.check(t, pollWait); last["status"] != "completed" || last["sent"] != float64(devicesN) {
		t.Errorf("the progress stream's final state %v, want completed with %d sent", last, devicesN)
	}
	repeats, _ := c.ExpectReachedAll(t, job, tokens)
	if bound := disruptions * crashBound; repeats > bound {
		t.Errorf("%d repeated pushes over %d disruptions, over the documented bound of %d (%d × (HERALD_PUSH_CONCURRENCY %d + 2 × HERALD_PUSH_BATCH_SIZE %d))",
			repeats, disruptions, bound, disruptions, pushConcurrency, pushBatchSize)
	}
	t.Logf("broadcast: %d devices, %d repeated pushes (bound %d)", devicesN, repeats, disruptions*crashBound)

	// The messenger broadcast: every chat, once or more.
	m := waitFinished(t, c, admin, "messengerBroadcast", mbID, jobWait)
	if m["status"] != "completed" || m["sent"] != float64(chats) {
		t.Errorf("messenger broadcast %v, want completed with %d sent", m, chats)
	}
	chatRepeats := 0
	for i := range chats {
		n := 0
		for _, msg := range c.Bot.SentTo(strconv.Itoa(7000 + i)) {
			if msg.Text == news {
				n++
			}
		}
		if n == 0 {
			t.Errorf("chat %d never got the messenger broadcast", 7000+i)
		}
		chatRepeats += max(n-1, 0)
	}
	if bound := disruptions * messengerBatch; chatRepeats > bound {
		t.Errorf("%d repeated messenger messages over %d disruptions, over the documented bound of %d (one batch of %d chats each, docs/messenger.md)",
			chatRepeats, disruptions, bound, messengerBatch)
	}
	t.Logf("messenger broadcast: %d chats, %d repeated messages (bound %d)", chats, chatRepeats, disruptions*messengerBatch)

	// Code emails: each exactly once (the failed attempts recorded nothing).
	for _, email := range emails {
		msg := c.SMTP.WaitForMessage(t, email, pollWait)
		if _, ok := mailtest.ExtractCode(msg.Text); !ok {
			t.Errorf("the email to %s has no code:\n%s", email, msg.Text)
		}
	}
	// Webhooks: every event, each signed (the receiver counts a repeat of
	// a webhook-id once).
	var created map[string]receivedEvent
	testsupport.Eventually(t, 2*time.Minute, func() bool {
		created = hooks.byType("user.created")
		return len(created) >= signups && len(hooks.byType("messenger.subscriber.subscribed")) >= chats &&
			len(hooks.byType("notification.broadcast.completed")) >= 1 && len(hooks.byType("messenger.broadcast.completed")) >= 1
	}, "webhook events missing: %d user.created of %d, %d messenger.subscriber.subscribed of %d, %d notification.broadcast.completed, %d messenger.broadcast.completed",
		len(hooks.byType("user.created")), signups, len(hooks.byType("messenger.subscriber.subscribed")), chats,
		len(hooks.byType("notification.broadcast.completed")), len(hooks.byType("messenger.broadcast.completed")))
	for _, email := range emails {
		found := false
		for _, e := range created {
			found = found || e.Data["email"] == email
		}
		if !found {
			t.Errorf("no user.created event for %s", email)
		}
	}
	if bad := hooks.badDeliveries(); len(bad) > 0 {
		t.Errorf("%d webhook deliveries were not signed as Standard Webhooks says; first: %v", len(bad), bad[0])
	}
	for _, email := range emails {
		if n := c.SMTP.Count(email); n != 1 {
			t.Errorf("%s got %d code emails, want exactly 1", email, n)
		}
	}

	probe.Stop()
	t.Logf("answers during the run: %v", probe.check(t))
	for _, r := range c.Replicas() {
		for _, e := range r.Logged("request", map[string]string{"status": "500"}) {
			t.Errorf("%s answered 500: %v", r.Name, e)
		}
	}
}
