package notifications_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/apns"
	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
	"github.com/herald-vpn/herald/internal/push/fcm"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/push/hms"
	"github.com/herald-vpn/herald/internal/push/hms/hmstest"
	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/push/webpush/webpushtest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/riverqueue/river"
)

// noSleep makes retries immediate: the tests check what is retried, not
// how long the backoff is.
func noSleep(context.Context, time.Duration) error { return nil }

// fastConfig is the service configuration of the tests.
func fastConfig() notifications.Config {
	return notifications.Config{
		SendRetry:      push.RetryPolicy{Attempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Sleep: noSleep},
		BroadcastRetry: push.RetryPolicy{Attempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Sleep: noSleep},
		Logger:         slog.New(slog.DiscardHandler),
		Wire:           view.NotificationJobWire(),
	}
}

// env is Herald's sending side over a real database, fakes of FCM, APNs,
// a Web Push service and Huawei Push Kit, with a real River client.
type env struct {
	db      *sqlstore.DB
	jobs    *jobs.Runner
	devices *devices.Service
	svc     *notifications.Service
	fcm     *fcmtest.Server
	apns    *apnstest.Server
	web     *webpushtest.Server
	hms     *hmstest.Server
	// provider is what the service sends through; tests may wrap it.
	provider push.Provider
	opts     options
	live     *live.Broker
}

type option func(*options)

type options struct {
	cfg  func(*notifications.Config)
	wrap func(push.Provider) push.Provider
}

func withConfig(f func(*notifications.Config)) option { return func(o *options) { o.cfg = f } }
func wrapProvider(f func(push.Provider) push.Provider) option {
	return func(o *options) { o.wrap = f }
}

func newEnv(t testing.TB, url string, opts ...option) *env {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx := context.Background()
	e := &env{fcm: fcmtest.NewServer(t), apns: apnstest.NewServer(t), web: webpushtest.NewServer(t), hms: hmstest.NewServer(t), opts: o}
	fc, err := fcm.New(ctx, e.fcm.CredentialsJSON("herald-test"), "", e.fcm.URL, e.fcm.Client())
	if err != nil {
		t.Fatal(err)
	}
	const keyID, teamID = "KEYID12345", "TEAMID1234"
	ac, err := apns.New(e.apns.NewKey(keyID, teamID), keyID, teamID, e.apns.Topic, e.apns.URL, apns.WithTLSConfig(e.apns.TLSConfig()))
	if err != nil {
		t.Fatal(err)
	}
	vapid, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	wc, err := webpush.New(vapid, "mailto:ops@example.com", webpush.Options{HTTPClient: e.web.Client()})
	if err != nil {
		t.Fatal(err)
	}
	hc, err := hms.New(hms.Config{AppID: e.hms.AppID, ClientSecret: e.hms.ClientSecret, TokenURL: e.hms.TokenURL(), SendURL: e.hms.URL, HTTPClient: e.hms.Client()})
	if err != nil {
		t.Fatal(err)
	}
	e.provider = push.NewRouter(fc, ac, wc, hc, nil)
	if o.wrap != nil {
		e.provider = o.wrap(e.provider)
	}
	e.open(t, url)
	return e
}

// restart is another Herald process on the same database and providers.
func (e *env) restart(t testing.TB, url string) *env {
	t.Helper()
	e2 := &env{fcm: e.fcm, apns: e.apns, web: e.web, hms: e.hms, provider: e.provider, opts: e.opts}
	e2.open(t, url)
	return e2
}

func (e *env) open(t testing.TB, url string) {
	t.Helper()
	workers := river.NewWorkers()
	db, runner := jobstest.Open(t, url, jobs.Config{
		Workers:     workers,
		Queues:      map[string]river.QueueConfig{notifications.QueuePush: {MaxWorkers: 2}, river.QueueDefault: {MaxWorkers: 2}},
		RetryPolicy: jobs.Backoff{Base: 100 * time.Millisecond, Max: 200 * time.Millisecond},
		FetchPoll:   100 * time.Millisecond,
	})
	e.db, e.jobs = db, runner
	cfg := fastConfig()
	// Live progress as the server wires it: other processes' events by
	// the store's LISTEN, this one's delivered at once.
	e.live = live.New(db, cfg.Logger)
	db.OnLive(e.live.Deliver)
	watchCtx, stopWatch := context.WithCancel(context.Background())
	watchDone := make(chan struct{})
	go func() { defer close(watchDone); db.WatchLive(watchCtx, e.live.Deliver, e.live.Resync) }()
	t.Cleanup(func() { stopWatch(); <-watchDone })
	cfg.Live = e.live
	if e.opts.cfg != nil {
		e.opts.cfg(&cfg)
	}
	e.svc = notifications.NewService(db, e.provider, cfg)
	e.devices = devices.NewService(db, subscriptions.NewService(db, subscriptions.Config{}), devices.Config{})
	river.AddWorker(workers, &notifications.BroadcastWorker{Service: e.svc})
	river.AddWorker(workers, &notifications.HeldSendWorker{Service: e.svc})
	river.AddWorker(workers, &notifications.DigestWorker{Service: e.svc})
	river.AddWorker(workers, emailJobs{})
}

// emailJobs lets a broadcast queue its notification_email jobs, which
// stay in River's table (their queue has no worker here) for a test to
// read: the email itself is package notifyemail's.
type emailJobs struct {
	river.WorkerDefaults[notifications.EmailArgs]
}

func (emailJobs) Work(context.Context, *river.Job[notifications.EmailArgs]) error { return nil }

// start starts the job runner, stopped at cleanup.
func (e *env) start(t testing.TB) {
	t.Helper()
	if err := e.jobs.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.jobs.Stop(ctx)
	})
}

var accountSeq struct {
	sync.Mutex
	n int
}

// account creates an account and returns its ID.
func (e *env) account(t testing.TB, email string) string {
	t.Helper()
	accountSeq.Lock()
	accountSeq.n++
	n := accountSeq.n
	accountSeq.Unlock()
	id := fmt.Sprintf("acct-%06d", n)
	if _, _, err := accounts.Create(context.Background(), e.db, accounts.NewAccount{
		ID: id, Email: email, PasswordHash: "$argon2id$x", ReferralCode: fmt.Sprintf("REF%06d", n), Trial: 7 * 24 * time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	return id
}

// device registers one device for a fresh account.
func (e *env) device(t testing.TB, platform, token string) devices.Device {
	t.Helper()
	a := e.account(t, token+"@example.com")
	d, err := e.devices.Register(context.Background(), a, platform, token, "")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// waitJob polls until the job is finished.
func (e *env) waitJob(t testing.TB, id string, timeout time.Duration) notifications.Job {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		j, err := e.svc.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.Finished() {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job still %s after %v: %+v", j.Status, timeout, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	testsupport.Eventually(t, timeout, cond, "timed out waiting for %s", what)
}

func wantCode(t testing.TB, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	return ae
}

func eachDB(t *testing.T, fn func(t *testing.T, url string)) { sqlstoretest.Each(t, fn) }
