package notices

import (
	"context"
	"errors"
	"log/slog"
	"net/textproto"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Fakes of the worker's interfaces. Each send records what it was given
// and answers the next scripted error (none once the script is spent).

type fakeAccounts map[string]accounts.Account

func (f fakeAccounts) AccountByID(_ context.Context, id string) (accounts.Account, error) {
	a, ok := f[id]
	if !ok {
		return accounts.Account{}, storage.ErrNotFound
	}
	return a, nil
}

type fakeEntitlements map[string]subscriptions.Entitlement

func (f fakeEntitlements) EntitlementByID(_ context.Context, id string) (subscriptions.Entitlement, error) {
	e, ok := f[id]
	if !ok {
		return subscriptions.Entitlement{}, storage.ErrNotFound
	}
	return e, nil
}

// script pops the next scripted error.
type script struct {
	mu   sync.Mutex
	errs []error
}

func (s *script) next() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) == 0 {
		return nil
	}
	err := s.errs[0]
	s.errs = s.errs[1:]
	return err
}

type fakePush struct {
	script
	status   string // the answer's status; sent when ""
	outcomes []notifications.DeviceOutcome
	sent     []notifications.Notification
}

func (f *fakePush) SendToUser(_ context.Context, userID string, n notifications.Notification, channels []string) (notifications.UserSendResult, error) {
	if !slices.Equal(channels, []string{notifications.ChannelPush}) {
		return notifications.UserSendResult{}, errors.New("push only, please")
	}
	if err := f.next(); err != nil {
		return notifications.UserSendResult{}, err
	}
	status := f.status
	if status == "" {
		status = notifications.UserSent
	}
	if status == notifications.UserSent || status == notifications.UserPartial {
		f.sent = append(f.sent, n)
	}
	return notifications.UserSendResult{UserID: userID, Status: status, Outcomes: f.outcomes}, nil
}

type fakeMail struct {
	script
	sent []mail.Message
}

func (f *fakeMail) Send(_ context.Context, m mail.Message) error {
	if err := f.next(); err != nil {
		return err
	}
	f.sent = append(f.sent, m)
	return nil
}

type fakeChats struct {
	script
	unlinked bool
	sent     []string
}

func (f *fakeChats) SendToLinkedChat(_ context.Context, _ string, text string) (string, bool, error) {
	if f.unlinked {
		return "", false, nil
	}
	if err := f.next(); err != nil {
		return "42", true, err
	}
	f.sent = append(f.sent, text)
	return "42", true, nil
}

// memKeys is an idempotency.Store in memory.
type memKeys struct {
	mu   sync.Mutex
	rows map[[2]string]*memRow
}

type memRow struct {
	idempotency.Record
	token string
}

func (m *memKeys) ClaimIdempotencyKey(_ context.Context, c idempotency.Claim) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{c.Caller, c.Key}
	if _, ok := m.rows[k]; ok {
		return false, nil
	}
	m.rows[k] = &memRow{Record: idempotency.Record{Operation: c.Operation, RequestHash: c.RequestHash, Status: idempotency.StatusPending, ClaimedUntil: c.ClaimedUntil}, token: c.Token}
	return true, nil
}

func (m *memKeys) IdempotencyRecord(_ context.Context, caller, key string) (idempotency.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[[2]string{caller, key}]
	if !ok {
		return idempotency.Record{}, storage.ErrNotFound
	}
	return r.Record, nil
}

func (m *memKeys) CompleteIdempotencyKey(_ context.Context, caller, key, token string, response []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[[2]string{caller, key}]; ok && r.token == token {
		r.Status, r.Response = idempotency.StatusDone, response
	}
	return nil
}

func (m *memKeys) ReleaseIdempotencyKey(_ context.Context, caller, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[[2]string{caller, key}]; ok && r.token == token {
		delete(m.rows, [2]string{caller, key})
	}
	return nil
}

var (
	grace   = time.Date(2030, 1, 9, 12, 0, 0, 0, time.UTC)
	expires = time.Date(2030, 1, 2, 12, 0, 0, 0, time.UTC)
)

// rig is a worker over fakes: account acc-1 (German, with email), one
// entitlement per source.
type rig struct {
	w     *Worker
	push  *fakePush
	mail  *fakeMail
	chats *fakeChats
	accts fakeAccounts
	ents  fakeEntitlements
}

func newRig(t *testing.T) *rig {
	t.Helper()
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{
		push: &fakePush{}, mail: &fakeMail{}, chats: &fakeChats{},
		accts: fakeAccounts{"acc-1": {ID: "acc-1", Email: "kim@example.com", Locale: "de-AT"}},
		ents:  fakeEntitlements{},
	}
	for _, src := range []subscriptions.Source{subscriptions.AppStore, subscriptions.GooglePlay, subscriptions.Stripe, subscriptions.TrialGrant} {
		g := grace
		r.ents["ent-"+string(src)] = subscriptions.Entitlement{ID: "ent-" + string(src), AccountID: "acc-1", Source: src, Plan: "premium", State: subscriptions.StateGrace, ExpiresAt: expires, GraceEndsAt: &g}
	}
	r.w, err = New(Deps{
		Accounts: r.accts, Entitlements: r.ents, Push: r.push, Templates: tpl, Mail: r.mail, Chats: r.chats,
		Idempotency: idempotency.New(&memKeys{rows: map[[2]string]*memRow{}}, slog.New(slog.DiscardHandler)),
	}, Config{Product: "Acme VPN", RenewURL: subscriptions.NewService(nil, subscriptions.Config{RenewURL: "https://acme.test/renew", RenewURLs: map[subscriptions.Source]string{subscriptions.Stripe: "https://acme.test/billing", subscriptions.AppStore: "https://apps.apple.com/account/subscriptions", subscriptions.GooglePlay: "https://play.google.com/store/account/subscriptions"}}).RenewURL})
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
			if len(r.push.sent) != 1 || len(r.mail.sent) != 1 || len(r.chats.sent) != 1 {
				t.Fatalf("sent push %d, email %d, telegram %d; want one each", len(r.push.sent), len(r.mail.sent), len(r.chats.sent))
			}
			p := r.push.sent[0]
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
			m := r.mail.sent[0]
			if m.To != "kim@example.com" || m.Locale != "de" || !strings.Contains(m.Text, tc.renew) || !strings.Contains(m.Subject+m.Text, tc.email) || !strings.Contains(m.Text, tc.date) {
				t.Errorf("email to %s in %s: %q\n%s", m.To, m.Locale, m.Subject, m.Text)
			}
			tg := r.chats.sent[0]
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
		{"no device", func(r *rig) { r.push.status = notifications.UserNoRecipients }, 0, 1, 1},
		{"only dead tokens", func(r *rig) {
			r.push.status = notifications.UserFailed
			r.push.outcomes = []notifications.DeviceOutcome{{Status: notifications.OutcomeInvalidToken}}
		}, 0, 1, 1},
		{"user gone from push", func(r *rig) { r.push.errs = []error{apperr.Newf(apperr.UserNotFound, "gone")} }, 0, 1, 1},
		{"no email address", func(r *rig) { a := r.accts["acc-1"]; a.Email = ""; r.accts["acc-1"] = a }, 1, 0, 1},
		{"unverified email is told", func(r *rig) { a := r.accts["acc-1"]; a.EmailVerifiedAt = nil; r.accts["acc-1"] = a }, 1, 1, 1},
		{"mail refused for good", func(r *rig) { r.mail.errs = []error{&textproto.Error{Code: 550, Msg: "no such user"}} }, 1, 0, 1},
		{"no linked chat", func(r *rig) { r.chats.unlinked = true }, 1, 1, 0},
		{"bot blocked", func(r *rig) { r.chats.errs = []error{apperr.Newf(apperr.ChatBlocked, "blocked")} }, 1, 1, 0},
		{"no bot", func(r *rig) { r.chats.errs = []error{apperr.Newf(apperr.MessengerNotConnected, "no bot")} }, 1, 1, 0},
		{"no channels configured", func(r *rig) { r.w.deps.Push, r.w.deps.Mail, r.w.deps.Templates, r.w.deps.Chats = nil, nil, nil, nil }, 0, 0, 0},
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
			if len(r.push.sent) != tc.push || len(r.mail.sent) != tc.email || len(r.chats.sent) != tc.chat {
				t.Errorf("sent push %d, email %d, telegram %d; want %d, %d, %d", len(r.push.sent), len(r.mail.sent), len(r.chats.sent), tc.push, tc.email, tc.chat)
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
		{"push", func(r *rig) { r.push.errs = []error{transient} }},
		{"push reached no device", func(r *rig) {
			r.push.status = notifications.UserFailed
			r.push.outcomes = []notifications.DeviceOutcome{{Status: notifications.OutcomeFailed, Error: "UPSTREAM_ERROR"}}
		}},
		{"email", func(r *rig) { r.mail.errs = []error{&textproto.Error{Code: 451, Msg: "try later"}} }},
		{"telegram", func(r *rig) { r.chats.errs = []error{apperr.Newf(apperr.UpstreamError, "telegram is down")} }},
		{"all three", func(r *rig) {
			r.push.errs, r.mail.errs, r.chats.errs = []error{transient}, []error{transient}, []error{transient}
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
			r.push.status, r.push.outcomes = "", nil
			if err := r.w.Work(t.Context(), job(9, 2, args)); err != nil {
				t.Fatalf("the retry: %v", err)
			}
			if err := r.w.Work(t.Context(), job(9, 3, args)); err != nil {
				t.Fatalf("a third attempt: %v", err)
			}
			if len(r.push.sent) != 1 || len(r.mail.sent) != 1 || len(r.chats.sent) != 1 {
				t.Errorf("sent push %d, email %d, telegram %d; want one each", len(r.push.sent), len(r.mail.sent), len(r.chats.sent))
			}
			// Another job of the same notice (a second failure) is
			// told again: keys are per job.
			if err := r.w.Work(t.Context(), job(10, 1, args)); err != nil {
				t.Fatal(err)
			}
			if len(r.push.sent) != 2 || len(r.mail.sent) != 2 || len(r.chats.sent) != 2 {
				t.Errorf("after a second job: sent push %d, email %d, telegram %d; want two each", len(r.push.sent), len(r.mail.sent), len(r.chats.sent))
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
			if len(r.push.sent)+len(r.mail.sent)+len(r.chats.sent) != 0 {
				t.Error("something was sent")
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	ok := Deps{Accounts: fakeAccounts{}, Entitlements: fakeEntitlements{}}
	for name, tc := range map[string]struct {
		deps Deps
		cfg  Config
	}{
		"no accounts":         {Deps{Entitlements: fakeEntitlements{}}, Config{RenewURL: func(subscriptions.Source) string { return "https://a.test" }}},
		"no default link":     {ok, Config{}},
		"mail sans templates": {Deps{Accounts: fakeAccounts{}, Entitlements: fakeEntitlements{}, Mail: &fakeMail{}}, Config{RenewURL: func(subscriptions.Source) string { return "https://a.test" }}},
	} {
		if _, err := New(tc.deps, tc.cfg); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
	if _, err := New(ok, Config{RenewURL: func(subscriptions.Source) string { return "https://a.test" }}); err != nil {
		t.Errorf("New: %v", err)
	}
}
