package securityalert

import (
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
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

type rig struct {
	w     *Worker
	push  *ownernoticetest.Push
	mail  *ownernoticetest.Mail
	chats *ownernoticetest.Chats
	accts ownernoticetest.Accounts
}

func newRig(t *testing.T) *rig {
	t.Helper()
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{push: &ownernoticetest.Push{}, mail: &ownernoticetest.Mail{}, chats: &ownernoticetest.Chats{},
		accts: ownernoticetest.Accounts{"acc-1": {ID: "acc-1", Email: "kim@example.com", Locale: "de-AT"}}}
	r.w, err = New(Deps{
		Deps:   ownernotice.Deps{Accounts: r.accts, Push: r.push, Templates: tpl, Mail: r.mail, Chats: r.chats, Idempotency: ownernoticetest.Idempotency()},
		EndURL: func(a, s string) string { return "https://acme.test/end?token=" + a + "_" + s },
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
	if len(r.push.Sent) != 1 || len(r.mail.Sent) != 1 || len(r.chats.Sent) != 1 {
		t.Fatalf("sent push %d, email %d, telegram %d; want one each", len(r.push.Sent), len(r.mail.Sent), len(r.chats.Sent))
	}
	link := "https://acme.test/end?token=acc-1_sess-1"
	m := r.mail.Sent[0]
	for _, w := range []string{"198.51.100.9", "Evil_Browser/1.0 (*nix)", link, "02.01.2030 um 03:04"} {
		if !strings.Contains(m.Text, w) {
			t.Errorf("email text lacks %q:\n%s", w, m.Text)
		}
	}
	if m.Locale != "de" {
		t.Errorf("email locale %q, want de", m.Locale)
	}
	p := r.push.Sent[0]
	if err := p.Validate(); err != nil {
		t.Errorf("the push is not valid: %v", err)
	}
	if !strings.Contains(p.Content, "198.51.100.9") || !strings.Contains(p.Content, "Evil_Browser") || p.Data["endSessionUrl"] != link || p.Data["sessionId"] != "sess-1" {
		t.Errorf("push %q data %v", p.Content, p.Data)
	}
	if c := r.chats.Sent[0]; !strings.Contains(c, `Evil\_Browser/1.0 \(\*nix\)`) || !strings.HasSuffix(c, "\n\n"+link) {
		t.Errorf("telegram text %q: want the device escaped and the link last", c)
	}
}

// A transient failure retries only the channel that failed: the email
// that went is not sent again.
func TestRetryDoesNotRepeat(t *testing.T) {
	r := newRig(t)
	r.chats.Errs = []error{apperr.Newf(apperr.UpstreamError, "telegram is down")}
	r.push.Errs = []error{errors.New("fcm is down")}
	if err := r.w.Work(t.Context(), job(7, 1)); err == nil {
		t.Fatal("Work = nil, want the channels' errors so River retries")
	}
	if len(r.mail.Sent) != 1 || len(r.push.Sent) != 0 || len(r.chats.Sent) != 0 {
		t.Fatalf("first attempt sent email %d push %d telegram %d", len(r.mail.Sent), len(r.push.Sent), len(r.chats.Sent))
	}
	if err := r.w.Work(t.Context(), job(7, 2)); err != nil {
		t.Fatal(err)
	}
	if len(r.mail.Sent) != 1 || len(r.push.Sent) != 1 || len(r.chats.Sent) != 1 {
		t.Fatalf("after the retry: email %d push %d telegram %d, want one each", len(r.mail.Sent), len(r.push.Sent), len(r.chats.Sent))
	}
}

// A channel with nothing to send to, or that no retry can mend, is
// skipped; a disabled account is told nothing; a deleted one cancels.
func TestSkips(t *testing.T) {
	r := newRig(t)
	r.chats.Unlinked = true
	r.push.Status = notifications.UserNoRecipients
	r.mail.Errs = []error{&textproto.Error{Code: 550, Msg: "no such mailbox"}}
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil {
		t.Fatalf("Work = %v, want nil: every channel skipped", err)
	}
	r = newRig(t)
	r.chats.Errs = []error{apperr.Newf(apperr.ChatBlocked, "blocked")}
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil {
		t.Fatalf("Work = %v, want nil: a blocked chat is skipped", err)
	}

	r = newRig(t)
	now := at
	a := r.accts["acc-1"]
	a.DisabledAt = &now
	r.accts["acc-1"] = a
	if err := r.w.Work(t.Context(), job(1, 1)); err != nil || len(r.mail.Sent)+len(r.push.Sent)+len(r.chats.Sent) != 0 {
		t.Fatalf("disabled account: Work = %v, sent %d/%d/%d", err, len(r.mail.Sent), len(r.push.Sent), len(r.chats.Sent))
	}
	delete(r.accts, "acc-1")
	var cancel *river.JobCancelError
	if err := r.w.Work(t.Context(), job(1, 1)); !errors.As(err, &cancel) {
		t.Fatalf("deleted account: Work = %v, want JobCancel", err)
	}
}
