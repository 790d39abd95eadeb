package notices

import (
	"context"
	"errors"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/ownernotice"
	"github.com/herald-vpn/herald/internal/ownernotice/ownernoticetest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// fakeEntitlements reads entitlements from a map.
type fakeEntitlements map[string]subscriptions.Entitlement

func (f fakeEntitlements) EntitlementByID(_ context.Context, id string) (subscriptions.Entitlement, error) {
	e, ok := f[id]
	if !ok {
		return subscriptions.Entitlement{}, storage.ErrNotFound
	}
	return e, nil
}

var (
	grace   = time.Date(2030, 1, 9, 12, 0, 0, 0, time.UTC)
	expires = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
)

// rig is a worker over fakes: account acc-1 (German, with email), one
// entitlement per source.
type rig struct {
	w     *Worker
	push  *ownernoticetest.Push
	mail  *ownernoticetest.Mail
	chats *ownernoticetest.Chats
	accts ownernoticetest.Accounts
	ents  fakeEntitlements
	cfg   Config
}

func newRig(t *testing.T) *rig {
	t.Helper()
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{
		push: &ownernoticetest.Push{}, mail: &ownernoticetest.Mail{}, chats: &ownernoticetest.Chats{},
		accts: ownernoticetest.Accounts{"acc-1": {ID: "acc-1", Email: "kim@example.com", Locale: "de-AT"}},
		ents:  fakeEntitlements{},
	}
	for _, src := range []subscriptions.Source{subscriptions.AppStore, subscriptions.GooglePlay, subscriptions.Stripe, subscriptions.TrialGrant} {
		g := grace
		r.ents["ent-"+string(src)] = subscriptions.Entitlement{ID: "ent-" + string(src), AccountID: "acc-1", Source: src, Plan: "premium", State: subscriptions.StateGrace, ExpiresAt: expires, GraceEndsAt: &g}
	}
	r.cfg = Config{Product: "Acme VPN", RenewURL: subscriptions.NewService(nil, subscriptions.Config{RenewURL: "https://acme.test/renew", RenewURLs: map[subscriptions.Source]string{subscriptions.Stripe: "https://acme.test/billing", subscriptions.AppStore: "https://apps.apple.com/account/subscriptions", subscriptions.GooglePlay: "https://play.google.com/store/account/subscriptions"}}).RenewURL}
	r.w, err = New(Deps{Entitlements: r.ents, Deps: ownernotice.Deps{
		Accounts: r.accts, Push: r.push, Templates: tpl, Mail: r.mail, Chats: r.chats, Idempotency: ownernoticetest.Idempotency(),
	}}, r.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) setState(id string, s subscriptions.State) {
	e := r.ents[id]
	e.State = s
	r.ents[id] = e
}

func job(id int64, attempt int, args subscriptions.NoticeArgs) *river.Job[subscriptions.NoticeArgs] {
	return &river.Job[subscriptions.NoticeArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: attempt, Kind: args.Kind()}, Args: args}
}

// Every notice goes out once on each channel, in the account's language,
// with the data apps need and the source's renew link.
func TestEveryNoticeOnEveryChannel(t *testing.T) {
	for _, tc := range []struct {
		event, state string
		src          subscriptions.Source
		code, renew  string
		email        string // words of the German email
		date         string
	}{
		{subscriptions.EventPaymentFailed, "grace", subscriptions.AppStore, "PAYMENT_FAILED", "https://apps.apple.com/account/subscriptions", "fehlgeschlagen", "09.01.2030"},
		{subscriptions.EventExpired, "expired", subscriptions.GooglePlay, "SUBSCRIPTION_EXPIRED", "https://play.google.com/store/account/subscriptions", "abgelaufen", "02.01.2030"},
		{subscriptions.EventRefunded, "refunded", subscriptions.Stripe, "SUBSCRIPTION_EXPIRED", "https://acme.test/billing", "erstattet", ""},
		{subscriptions.NoticeTrialEnding, "trial", subscriptions.TrialGrant, "", "https://acme.test/renew", "Testzeitraum", "02.01.2030"},
	} {
		t.Run(tc.event, func(t *testing.T) {
			r := newRig(t)
			ent := "ent-" + string(tc.src)
			r.setState(ent, subscriptions.State(tc.state))
			args := subscriptions.NoticeArgs{AccountID: "acc-1", EntitlementID: ent, Event: tc.event, Plan: "premium", At: expires}
			if err := r.w.Work(t.Context(), job(1, 1, args)); err != nil {
				t.Fatal(err)
			}
			if len(r.push.Sent) != 1 || len(r.mail.Sent) != 1 || len(r.chats.Sent) != 1 {
				t.Fatalf("sent push %d, email %d, telegram %d; want one each", len(r.push.Sent), len(r.mail.Sent), len(r.chats.Sent))
			}
			p := r.push.Sent[0]
			want := map[string]any{"type": "subscription", "event": tc.event, "plan": "premium", "renewUrl": tc.renew}
			if tc.code != "" {
				want["code"] = tc.code
			}
			if len(p.Data) != len(want) {
				t.Errorf("push data = %v, want %v", p.Data, want)
			}
			for k, v := range want {
				if p.Data[k] != v {
					t.Errorf("push data[%s] = %v, want %v", k, p.Data[k], v)
				}
			}
			if err := p.Validate(); err != nil {
				t.Errorf("the push is not valid: %v", err)
			}
			if !strings.Contains(p.Subject, "Acme VPN") || !strings.Contains(p.Content, "premium") || !strings.Contains(p.Subject+p.Content, tc.email) {
				t.Errorf("push %q / %q: want German words naming the product and the plan", p.Subject, p.Content)
			}
			m := r.mail.Sent[0]
			if m.To != "kim@example.com" || m.Locale != "de" || !strings.Contains(m.Text, tc.renew) || !strings.Contains(m.Subject+m.Text, tc.email) || !strings.Contains(m.Text, tc.date) {
				t.Errorf("email to %s in %s: %q\n%s", m.To, m.Locale, m.Subject, m.Text)
			}
			tg := r.chats.Sent[0]
			if !strings.Contains(tg, tc.renew) || !strings.Contains(tg, p.Subject) || !strings.Contains(tg, tc.date) {
				t.Errorf("telegram text %q: want the title, the date %q and the link %s", tg, tc.date, tc.renew)
			}
		})
	}
}

// A channel with nothing to send to is skipped and the job succeeds; so
// is one that cannot succeed however often it is tried.
func TestChannelsSkipped(t *testing.T) {
	args := subscriptions.NoticeArgs{AccountID: "acc-1", EntitlementID: "ent-app_store", Event: subscriptions.EventPaymentFailed, Plan: "premium"}
	for _, tc := range []struct {
		name  string
		setup func(*rig)
		push  int
		email int
		chat  int
	}{
		{"no device", func(r *rig) { r.push.Status = notifications.UserNoRecipients }, 0, 1, 1},
		{"only dead tokens", func(r *rig) {
			r.push.Status = notifications.UserFailed
			r.push.Outcomes = []notifications.DeviceOutcome{{Status: notifications.OutcomeInvalidToken}}
		}, 0, 1, 1},
		{"user gone from push", func(r *rig) { r.push.Errs = []error{apperr.Newf(apperr.UserNotFound, "gone")} }, 0, 1, 1},
		{"no email address", func(r *rig) { a := r.accts["acc-1"]; a.Email = ""; r.accts["acc-1"] = a }, 1, 0, 1},
		{"unverified email is told", func(r *rig) { a := r.accts["acc-1"]; a.EmailVerifiedAt = nil; r.accts["acc-1"] = a }, 1, 1, 1},
		{"mail refused for good", func(r *rig) { r.mail.Errs = []error{&textproto.Error{Code: 550, Msg: "no such user"}} }, 1, 0, 1},
		{"no linked chat", func(r *rig) { r.chats.Unlinked = true }, 1, 1, 0},
		{"bot blocked", func(r *rig) { r.chats.Errs = []error{apperr.Newf(apperr.ChatBlocked, "blocked")} }, 1, 1, 0},
		{"no bot", func(r *rig) { r.chats.Errs = []error{apperr.Newf(apperr.MessengerNotConnected, "no bot")} }, 1, 1, 0},
		{"no channels configured", func(r *rig) {
			w, err := New(Deps{Deps: ownernotice.Deps{Accounts: r.accts}, Entitlements: r.ents}, r.cfg)
			if err != nil {
				t.Fatal(err)
			}
			r.w = w
		}, 0, 0, 0},
		{"disabled account", func(r *rig) { a := r.accts["acc-1"]; now := expires; a.DisabledAt = &now; r.accts["acc-1"] = a }, 0, 0, 0},
		{"recovered before the job ran", func(r *rig) { r.setState("ent-app_store", subscriptions.StateActive) }, 0, 0, 0},
		{"entitlement gone: told with the default link", func(r *rig) { delete(r.ents, "ent-app_store") }, 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			tc.setup(r)
			if err := r.w.Work(t.Context(), job(1, 1, args)); err != nil {
				t.Fatal(err)
			}
			if len(r.push.Sent) != tc.push || len(r.mail.Sent) != tc.email || len(r.chats.Sent) != tc.chat {
				t.Errorf("sent push %d, email %d, telegram %d; want %d, %d, %d", len(r.push.Sent), len(r.mail.Sent), len(r.chats.Sent), tc.push, tc.email, tc.chat)
			}
		})
	}
}

// A transient failure of one channel fails the job; its retry sends that
// channel and does not repeat the others.
func TestRetrySendsOnlyWhatFailed(t *testing.T) {
	transient := errors.New("connection reset")
	args := subscriptions.NoticeArgs{AccountID: "acc-1", EntitlementID: "ent-google_play", Event: subscriptions.EventPaymentFailed, Plan: "premium"}
	for _, tc := range []struct {
		name  string
		setup func(*rig)
	}{
		{"push", func(r *rig) { r.push.Errs = []error{transient} }},
		{"push reached no device", func(r *rig) {
			r.push.Status = notifications.UserFailed
			r.push.Outcomes = []notifications.DeviceOutcome{{Status: notifications.OutcomeFailed, Error: "UPSTREAM_ERROR"}}
		}},
		{"email", func(r *rig) { r.mail.Errs = []error{&textproto.Error{Code: 451, Msg: "try later"}} }},
		{"telegram", func(r *rig) { r.chats.Errs = []error{apperr.Newf(apperr.UpstreamError, "telegram is down")} }},
		{"all three", func(r *rig) {
			r.push.Errs, r.mail.Errs, r.chats.Errs = []error{transient}, []error{transient}, []error{transient}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			tc.setup(r)
			err := r.w.Work(t.Context(), job(9, 1, args))
			if err == nil {
				t.Fatal("the first attempt succeeded; want an error so River retries")
			}
			if errors.As(err, new(*river.JobCancelError)) {
				t.Fatalf("a transient failure cancels the job: %v", err)
			}
			r.push.Status, r.push.Outcomes = "", nil
			if err := r.w.Work(t.Context(), job(9, 2, args)); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if err := r.w.Work(t.Context(), job(9, 3, args)); err != nil {
				t.Fatalf("a third attempt: %v", err)
			}
			if len(r.push.Sent) != 1 || len(r.mail.Sent) != 1 || len(r.chats.Sent) != 1 {
				t.Errorf("sent push %d, email %d, telegram %d; want one each", len(r.push.Sent), len(r.mail.Sent), len(r.chats.Sent))
			}
			// Another job of the same notice (a second failure) is
			// told again: keys are per job.
			if err := r.w.Work(t.Context(), job(10, 1, args)); err != nil {
				t.Fatal(err)
			}
			if len(r.push.Sent) != 2 || len(r.mail.Sent) != 2 || len(r.chats.Sent) != 2 {
				t.Errorf("after a second job: sent push %d, email %d, telegram %d; want two each", len(r.push.Sent), len(r.mail.Sent), len(r.chats.Sent))
			}
		})
	}
}

// A job that cannot ever be worked is cancelled, not retried.
func TestCancelled(t *testing.T) {
	for name, args := range map[string]subscriptions.NoticeArgs{
		"account gone":  {AccountID: "nobody", EntitlementID: "ent-stripe", Event: subscriptions.EventExpired},
		"unknown event": {AccountID: "acc-1", EntitlementID: "ent-stripe", Event: subscriptions.EventRenewed},
	} {
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			err := r.w.Work(t.Context(), job(1, 1, args))
			if !errors.As(err, new(*river.JobCancelError)) {
				t.Errorf("Work = %v, want a cancel", err)
			}
			if len(r.push.Sent)+len(r.mail.Sent)+len(r.chats.Sent) != 0 {
				t.Error("something was sent")
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	ok := Deps{Deps: ownernotice.Deps{Accounts: ownernoticetest.Accounts{}}, Entitlements: fakeEntitlements{}}
	for name, tc := range map[string]struct {
		deps Deps
		cfg  Config
	}{
		"no accounts":         {Deps{Entitlements: fakeEntitlements{}}, Config{RenewURL: func(subscriptions.Source) string { return "https://a.test" }}},
		"no default link":     {ok, Config{}},
		"mail sans templates": {Deps{Deps: ownernotice.Deps{Accounts: ownernoticetest.Accounts{}, Mail: &ownernoticetest.Mail{}}, Entitlements: fakeEntitlements{}}, Config{RenewURL: func(subscriptions.Source) string { return "https://a.test" }}},
	} {
		if _, err := New(tc.deps, tc.cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(ok, Config{RenewURL: func(subscriptions.Source) string { return "https://a.test" }}); err != nil {
		t.Errorf("New: %v", err)
	}
}
