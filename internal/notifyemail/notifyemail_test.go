package notifyemail_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/notifyemail"
	"github.com/herald-vpn/herald/internal/ownernotice"
	"github.com/herald-vpn/herald/internal/ownernotice/ownernoticetest"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// settings are stored preferences per account.
type settings map[string][]preferences.Setting

func (s settings) NotificationSettings(_ context.Context, id string) ([]preferences.Setting, error) {
	return s[id], nil
}

func job(id int64, args notifications.EmailArgs) *river.Job[notifications.EmailArgs] {
	return &river.Job[notifications.EmailArgs]{JobRow: &rivertype.JobRow{ID: id, Attempt: 1, Kind: args.Kind()}, Args: args}
}

// The job reads the account and its preferences when it runs: a verified
// address gets the email in its locale, with the unsubscribe link unless
// the category is critical; an address not verified, a guest, an
// opt-out made after the send, and a disabled account get nothing; a
// deleted account cancels the job; a mail server's 4xx is retried
// without sending twice.
func TestWork(t *testing.T) {
	verified := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	accts := ownernoticetest.Accounts{
		"kim":      {ID: "kim", Email: "kim@example.com", EmailVerifiedAt: &verified, Locale: "de-AT"},
		"new":      {ID: "new", Email: "new@example.com"},
		"guest":    {ID: "guest", Email: "guest-1@guests.invalid", EmailVerifiedAt: &verified, Guest: true},
		"optedout": {ID: "optedout", Email: "out@example.com", EmailVerifiedAt: &verified},
		"disabled": {ID: "disabled", Email: "off@example.com", EmailVerifiedAt: &verified, DisabledAt: &verified},
	}
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	m := &ownernoticetest.Mail{}
	var links []string
	w, err := notifyemail.New(notifyemail.Deps{
		Deps:     ownernotice.Deps{Accounts: accts, Templates: tpl, Mail: m, Idempotency: ownernoticetest.Idempotency()},
		Settings: settings{"optedout": {{Category: "product", Channel: preferences.ChannelEmail, Enabled: false}}},
		UnsubscribeURL: func(accountID, category string) string {
			l := "https://api.acme.test/api/v1/notifications/unsubscribe?token=" + accountID + "-" + category
			links = append(links, l)
			return l
		},
	}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	work := func(id int64, account, category string) error {
		return w.Work(ctx, job(id, notifications.EmailArgs{AccountID: account, Subject: "Winter sale", Content: "Half price", Category: category}))
	}

	if err := work(1, "kim", "product"); err != nil || len(m.Sent) != 1 {
		t.Fatalf("a product email to kim: %v, %d sent", err, len(m.Sent))
	}
	got := m.Sent[0]
	if got.To != "kim@example.com" || got.Subject != "Winter sale" || got.Locale != "de" || !strings.Contains(got.Text, "Half price") ||
		got.ListUnsubscribe != links[0] || !strings.Contains(got.Text, links[0]) {
		t.Fatalf("kim's email: to %s, subject %q, locale %s, ListUnsubscribe %q\n%s", got.To, got.Subject, got.Locale, got.ListUnsubscribe, got.Text)
	}
	if err := work(2, "kim", "billing"); err != nil || len(m.Sent) != 2 || m.Sent[1].ListUnsubscribe != "" || len(links) != 1 {
		t.Fatalf("a billing email: %v, %d sent, links %v", err, len(m.Sent), links)
	}
	for _, account := range []string{"new", "guest", "optedout", "disabled"} {
		if err := work(3, account, "product"); err != nil || len(m.Sent) != 2 {
			t.Fatalf("%s: %v, %d sent; want nothing sent and no error", account, err, len(m.Sent))
		}
	}
	// The opted-out account still gets what it cannot turn off.
	if err := work(4, "optedout", "security"); err != nil || len(m.Sent) != 3 {
		t.Fatalf("a security email to an account that opted out of product: %v, %d sent", err, len(m.Sent))
	}
	var cancel *river.JobCancelError
	if err := work(5, "gone", "product"); !errors.As(err, &cancel) {
		t.Fatalf("a deleted account: %v, want the job cancelled", err)
	}

	// A 4xx fails the attempt; the retry sends once, and a retry after
	// the send sends nothing again.
	m.Errs = []error{&mail.SendError{Code: 451}}
	if err := work(6, "kim", "service"); err == nil || len(m.Sent) != 3 {
		t.Fatalf("a 451: %v, %d sent; want an error and nothing sent", err, len(m.Sent))
	}
	if err := work(6, "kim", "service"); err != nil || len(m.Sent) != 4 {
		t.Fatalf("the retry: %v, %d sent", err, len(m.Sent))
	}
	if err := work(6, "kim", "service"); err != nil || len(m.Sent) != 4 {
		t.Fatalf("a retry after the send: %v, %d sent; want no second email", err, len(m.Sent))
	}
}

// broadcasts are broadcast jobs' statuses by id.
type broadcasts map[string]string

func (b broadcasts) BroadcastJob(_ context.Context, id string) (notifications.Job, error) {
	st, ok := b[id]
	if !ok {
		return notifications.Job{}, storage.ErrNotFound
	}
	return notifications.Job{ID: id, Status: st}, nil
}

// A broadcast's email finds, when it runs, whether its broadcast was
// cancelled meanwhile (an email held for the end of its owner's quiet
// hours): then it is not sent. A running, completed or pruned broadcast's
// email goes; so does a send to one user's (no broadcast).
func TestWorkSkipsACancelledBroadcastsEmail(t *testing.T) {
	verified := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN"})
	if err != nil {
		t.Fatal(err)
	}
	m := &ownernoticetest.Mail{}
	w, err := notifyemail.New(notifyemail.Deps{
		Deps:       ownernotice.Deps{Accounts: ownernoticetest.Accounts{"kim": {ID: "kim", Email: "kim@example.com", EmailVerifiedAt: &verified}}, Templates: tpl, Mail: m, Idempotency: ownernoticetest.Idempotency()},
		Settings:   settings{},
		Broadcasts: broadcasts{"cancelled": notifications.StatusCancelled, "running": notifications.StatusRunning, "done": notifications.StatusCompleted},
	}, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		broadcast string
		sent      bool
	}{{"cancelled", false}, {"running", true}, {"done", true}, {"pruned", true}, {"", true}} {
		before := len(m.Sent)
		err := w.Work(t.Context(), job(int64(100+i), notifications.EmailArgs{AccountID: "kim", Subject: "News", Content: "c", Category: "product", BroadcastID: tc.broadcast}))
		if sent := len(m.Sent) > before; err != nil || sent != tc.sent {
			t.Errorf("broadcast %q: sent %v (%v), want %v", tc.broadcast, sent, err, tc.sent)
		}
	}
}
