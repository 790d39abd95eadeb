package securityalert

import (
	"context"
	"errors"
	"log/slog"
	"net/textproto"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type fakeAccounts map[string]accounts.Account

func (f fakeAccounts) AccountByID(_ context.Context, id string) (accounts.Account, error) {
	a, ok := f[id]
	if !ok {
		return accounts.Account{}, storage.ErrNotFound
	}
	return a, nil
}

// script answers the next scripted error (none once spent).
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
	status string
	sent   []notifications.Notification
}

func (f *fakePush) SendToUser(_ context.Context, userID string, n notifications.Notification, _ []string) (notifications.UserSendResult, error) {
	if err := f.next(); err != nil {
		return notifications.UserSendResult{}, err
	}
	st := f.status
	if st == "" {
		st = notifications.UserSent
	}
	if st == notifications.UserSent {
		f.sent = append(f.sent, n)
	}
	return notifications.UserSendResult{UserID: userID, Status: st}, nil
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

type rig struct {
	w     *Worker
	push  *fakePush
	mail  *fakeMail
	chats *fakeChats
	accts fakeAccounts
}

func newRig(t *testing.T) *rig {
	t.Helper()
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{push: &fakePush{}, mail: &fakeMail{}, chats: &fakeChats{},
		accts: fakeAccounts{"acc-1": {ID: "acc-1", Email: "kim@example.com", Locale: "de-AT"}}}
	r.w, err = New(Deps{
		Accounts: r.accts, Push: r.push, Templates: tpl, Mail: r.mail, Chats: r.chats,
		EndURL:      func(a, s string) string { return "https://acme.test/end?token=" + a + "_" + s },
		Idempotency: idempotency.New(&memKeys{rows: map[[2]string]*memRow{}}, slog.New(slog.DiscardHandler)),
	}, Config{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var at = time.Date(2030, 1, 2, 3, 4, 0, 0, time.UTC)

func args() securitylog.NewDeviceAlertArgs {
	return securitylog.NewDeviceAlertArgs{AccountID: "acc-1", EventID: "ev-1", SessionID: "sess-1", IP: "198.51.100.9", UserAgent: "Evil_Browser/1.0 (*nix)", At: at}
}

func job(id int64, attempt int) *river.Job[securitylog.NewDeviceAlertArgs] {
	a := args()
	return &river.Job[securitylog.NewDeviceAlertArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: attempt, Kind: a.Kind()}, Args: a}
}

// The alert goes out once on each channel, in the account's language,
// naming when, the IP and the device, with the link.
func TestAlertOnEveryChannel(t *testing.T) {
	r := newRig(t)
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil {
		t.Fatal(err)
	}
	if len(r.push.sent) != 1 || len(r.mail.sent) != 1 || len(r.chats.sent) != 1 {
		t.Fatalf("sent push %d, email %d, telegram %d; want one each", len(r.push.sent), len(r.mail.sent), len(r.chats.sent))
	}
	link := "https://acme.test/end?token=acc-1_sess-1"
	m := r.mail.sent[0]
	for _, w := range []string{"198.51.100.9", "Evil_Browser/1.0 (*nix)", link, "02.01.2030 um 03:04"} {
		if !strings.Contains(m.Text, w) {
			t.Errorf("email text lacks %q:\n%s", w, m.Text)
		}
	}
	if m.Locale != "de" {
		t.Errorf("email locale %q, want de", m.Locale)
	}
	p := r.push.sent[0]
	if err := p.Validate(); err != nil {
		t.Errorf("the push is not valid: %v", err)
	}
	if !strings.Contains(p.Content, "198.51.100.9") || !strings.Contains(p.Content, "Evil_Browser") || p.Data["endSessionUrl"] != link || p.Data["sessionId"] != "sess-1" {
		t.Errorf("push %q data %v", p.Content, p.Data)
	}
	if c := r.chats.sent[0]; !strings.Contains(c, `Evil\_Browser/1.0 \(\*nix\)`) || !strings.HasSuffix(c, "\n\n"+link) {
		t.Errorf("telegram text %q: want the device escaped and the link last", c)
	}
}

// A transient failure retries only the channel that failed: the email
// that went is not sent again.
func TestRetryDoesNotRepeat(t *testing.T) {
	r := newRig(t)
	r.chats.errs = []error{apperr.Newf(apperr.UpstreamError, "telegram is down")}
	r.push.errs = []error{errors.New("fcm is down")}
	if err := r.w.Work(t.Context(), job(7, 1)); err == nil {
		t.Fatal("Work = nil, want the channels' errors so River retries")
	}
	if len(r.mail.sent) != 1 || len(r.push.sent) != 0 || len(r.chats.sent) != 0 {
		t.Fatalf("first attempt sent email %d push %d telegram %d", len(r.mail.sent), len(r.push.sent), len(r.chats.sent))
	}
	if err := r.w.Work(t.Context(), job(7, 2)); err != nil {
		t.Fatal(err)
	}
	if len(r.mail.sent) != 1 || len(r.push.sent) != 1 || len(r.chats.sent) != 1 {
		t.Fatalf("after the retry: email %d push %d telegram %d, want one each", len(r.mail.sent), len(r.push.sent), len(r.chats.sent))
	}
}

// A channel with nothing to send to, or that no retry can mend, is
// skipped; a disabled account is told nothing; a deleted one cancels.
func TestSkips(t *testing.T) {
	r := newRig(t)
	r.chats.unlinked = true
	r.push.status = notifications.UserNoRecipients
	r.mail.errs = []error{&textproto.Error{Code: 550, Msg: "no such mailbox"}}
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil {
		t.Fatalf("Work = %v, want nil: every channel skipped", err)
	}
	r = newRig(t)
	r.chats.errs = []error{apperr.Newf(apperr.ChatBlocked, "blocked")}
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil {
		t.Fatalf("Work = %v, want nil: a blocked chat is skipped", err)
	}

	r = newRig(t)
	now := at
	a := r.accts["acc-1"]
	a.DisabledAt = &now
	r.accts["acc-1"] = a
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil || len(r.mail.sent)+len(r.push.sent)+len(r.chats.sent) != 0 {
		t.Fatalf("disabled account: Work = %v, sent %d/%d/%d", err, len(r.mail.sent), len(r.push.sent), len(r.chats.sent))
	}
	delete(r.accts, "acc-1")
	var cancel *river.JobCancelError
	if err := r.w.Work(t.Context(), job(1, 1)); !errors.As(err, &cancel) {
		t.Fatalf("deleted account: Work = %v, want JobCancel", err)
	}
}
