package sqlstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// The admin API's store operations, on every database.
func TestAdminConformance(t *testing.T) {
	cases := []storeCase{
		{"SearchFiltersAndPages", testSearchAccounts},
		{"RecordCounts", testAccountRecord},
		{"DisableRevokesAndRefusesSessions", testSetDisabled},
		{"DisabledAccountsDevicesGetNoPushes", testDisabledNoPush},
		{"DeleteLeavesTombstone", testDeleteAccount},
		{"SessionsRememberTheClient", testSessionClient},
		{"DisableRacesLogins", testDisableRacesLogins},
		{"PerRecordFieldsOfManyAccounts", testPerRecordFieldsOfMany},
	}
	runConformance(t, cases, mustOpenWithWorkers)
}

func recordIDs(rs []accounts.Record) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

func testSearchAccounts(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, a := range []struct{ id, email string }{
		{"u1", "ann@example.com"}, {"u2", "a_b@example.com"}, {"u3", "axb@example.com"}, {"u4", "bob@example.org"},
	} {
		if _, _, err := accounts.Create(ctx, db, newAccount(a.id, a.email, "CODE"+a.id)); err != nil {
			t.Fatal(err)
		}
	}
	verified := newAccount("u5", "carol@example.com", "CODEu5")
	verified.Verified = true
	accounts.Create(ctx, db, verified)
	// A guest (its placeholder address) and an address that really
	// begins "guest".
	guest := newAccount("u6", "guest-u6"+accounts.GuestDomain, "CODEu6")
	guest.GuestInstallID = "install-u6"
	if _, _, err := accounts.Create(ctx, db, guest); err != nil {
		t.Fatal(err)
	}
	if _, _, err := accounts.Create(ctx, db, newAccount("u7", "guesthouse@example.net", "CODEu7")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := subscriptions.Set(ctx, db, "u4", "premium", clk.Now().Add(-time.Hour), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SetDisabled(ctx, "u3", true, "fraud", nil); err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	cases := []struct {
		name string
		f    accounts.Filter
		want []string
	}{
		{"all, newest first", accounts.Filter{}, []string{"u7", "u6", "u5", "u4", "u3", "u2", "u1"}},
		{"email prefix", accounts.Filter{EmailPrefix: "a"}, []string{"u3", "u2", "u1"}},
		{"LIKE wildcards are literal", accounts.Filter{EmailPrefix: "a_"}, []string{"u2"}},
		{"id", accounts.Filter{EmailPrefix: "u4", ID: "u4"}, []string{"u4"}},
		{"plan", accounts.Filter{Plan: "premium"}, []string{"u4"}},
		{"expired", accounts.Filter{Active: ptr(false)}, []string{"u4"}},
		{"active", accounts.Filter{Active: ptr(true), EmailPrefix: "b"}, nil},
		{"verified", accounts.Filter{Verified: ptr(true)}, []string{"u5"}},
		{"disabled", accounts.Filter{Disabled: ptr(true)}, []string{"u3"}},
		{"not disabled", accounts.Filter{Disabled: ptr(false), EmailPrefix: "a"}, []string{"u2", "u1"}},
		{"a prefix never matches a placeholder", accounts.Filter{EmailPrefix: "guest"}, []string{"u7"}},
		{"nor a whole placeholder", accounts.Filter{EmailPrefix: "guest-u6" + accounts.GuestDomain}, nil},
		{"nor with an id", accounts.Filter{EmailPrefix: "guest-u6", ID: "guest-u6"}, nil},
		{"the id finds a guest", accounts.Filter{EmailPrefix: "u6", ID: "u6"}, []string{"u6"}},
		{"guests", accounts.Filter{Guest: ptr(true)}, []string{"u6"}},
		{"not guests", accounts.Filter{Guest: ptr(false), Plan: "premium"}, []string{"u4"}},
	}
	for _, c := range cases {
		c.f.Now = now
		got, err := db.SearchAccounts(ctx, c.f, "", 10)
		if err != nil || !slices.Equal(recordIDs(got), c.want) {
			t.Errorf("%s: %v, %v; want %v", c.name, recordIDs(got), err, c.want)
		}
	}
	page, err := db.SearchAccounts(ctx, accounts.Filter{Now: now}, "u3", 2)
	if err != nil || !slices.Equal(recordIDs(page), []string{"u2", "u1"}) {
		t.Fatalf("after u3: %v, %v", recordIDs(page), err)
	}
	// The prefix alone takes its own path (the page's ids from the email
	// index): it pages the same way.
	for _, c := range []struct {
		after string
		limit int
		want  []string
	}{{"", 2, []string{"u3", "u2"}}, {"u3", 1, []string{"u2"}}, {"u2", 10, []string{"u1"}}, {"u1", 10, nil}} {
		got, err := db.SearchAccounts(ctx, accounts.Filter{Now: now, EmailPrefix: "a"}, c.after, c.limit)
		if err != nil || !slices.Equal(recordIDs(got), c.want) {
			t.Errorf("prefix a after %q, %d: %v, %v; want %v", c.after, c.limit, recordIDs(got), err, c.want)
		}
	}
	if err := accounts.DeleteAccount(ctx, db, "u1", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.SearchAccounts(ctx, accounts.Filter{Now: now, EmailPrefix: "deleted", ID: "u1"}, "", 10); len(got) != 0 {
		t.Fatalf("a deleted account was found: %v", recordIDs(got))
	}
	if got, _ := db.SearchAccounts(ctx, accounts.Filter{Now: now, EmailPrefix: "a"}, "", 10); !slices.Equal(recordIDs(got), []string{"u3", "u2"}) {
		t.Fatalf("prefix a after deleting u1: %v, want [u3 u2]", recordIDs(got))
	}
}

func testAccountRecord(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustRegister(t, db, "d1", "a1", "t1")
	mustRegister(t, db, "d2", "a1", "t2")
	db.DeactivateDevice(ctx, "a1", "d2")
	for _, id := range []string{"s1", "s2", "s3"} {
		if err := db.CreateSession(ctx, sessions.Session{ID: id, AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	db.RevokeSession(ctx, "s1")
	r, err := db.AccountRecord(ctx, "a1")
	if err != nil || r.DeviceCount != 1 || r.SessionCount != 2 || r.LastLoginAt == nil || !r.LastLoginAt.Equal(clk.Now()) || r.Disabled() {
		t.Fatalf("record %+v, %v", r, err)
	}
	if _, err := db.AccountRecord(ctx, "nobody"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown: %v", err)
	}
}

func testSetDisabled(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	db.CreateSession(ctx, sessions.Session{ID: "s1", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte("s1"))
	var evicted []string
	db.OnRevocation(func(kind, id string) { evicted = append(evicted, kind+":"+id) })
	for i, want := range []bool{true, false} { // the second call changes nothing
		changed, err := db.SetDisabled(ctx, "a1", true, "chargeback", nil)
		if err != nil || changed != want {
			t.Fatalf("disable #%d: changed %v, %v", i, changed, err)
		}
	}
	a, _ := db.AccountByID(ctx, "a1")
	if !a.Disabled() || a.DisabledReason != "chargeback" || !a.DisabledAt.Equal(clk.Now()) {
		t.Fatalf("disabled account %+v", a)
	}
	if s, _ := db.SessionByID(ctx, "s1"); s.RevokedAt == nil {
		t.Fatal("disabling left a session live")
	}
	if !slices.Contains(evicted, "account:a1") {
		t.Fatalf("no revocation announced: %v", evicted)
	}
	err := db.CreateSession(ctx, sessions.Session{ID: "s2", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte("s2"))
	if !errors.Is(err, sessions.ErrAccountClosed) {
		t.Fatalf("session of a disabled account: %v", err)
	}
	if changed, err := db.SetDisabled(ctx, "a1", false, "", nil); err != nil || !changed {
		t.Fatalf("enable: %v, %v", changed, err)
	}
	if a, _ := db.AccountByID(ctx, "a1"); a.Disabled() || a.DisabledReason != "" {
		t.Fatalf("enabled account %+v", a)
	}
	if err := db.CreateSession(ctx, sessions.Session{ID: "s3", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte("s3")); err != nil {
		t.Fatalf("session after enabling: %v", err)
	}
	if _, err := db.SetDisabled(ctx, "nobody", true, "", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown account: %v", err)
	}
}

func testDisabledNoPush(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	mustRegister(t, db, "d1", "a1", "t1")
	mustRegister(t, db, "d2", "a2", "t2")
	mustRegister(t, db, "d3", "a1", "t3")
	db.SetDisabled(ctx, "a2", true, "", nil)
	if off, err := db.AccountDisabled(ctx, "a2"); err != nil || !off {
		t.Fatalf("a2 disabled: %v, %v", off, err)
	}
	if off, err := db.AccountDisabled(ctx, "a1"); err != nil || off {
		t.Fatalf("a1 disabled: %v, %v", off, err)
	}
	j, err := db.CreateBroadcast(ctx, notifications.NewBroadcast{ID: "job1", Subject: "s", Content: "c"}, notifications.BroadcastArgs{JobID: "job1"})
	if err != nil || j.TotalRecipients != 2 {
		t.Fatalf("broadcast %+v, %v", j, err)
	}
	until := clk.Now().Add(time.Minute)
	if _, err := db.AcquireBroadcast(ctx, "job1", "w1", until); err != nil {
		t.Fatal(err)
	}
	c, err := db.ClaimNextBatch(ctx, "job1", "w1", 10, until)
	if err != nil || !slices.Equal(claimIDs(c.Claims), []string{"d1", "d3"}) {
		t.Fatalf("claimed %v, %v", claimIDs(c.Claims), err)
	}
}

func testDeleteAccount(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustRegister(t, db, "d1", "a1", "t1")
	db.CreateSession(ctx, sessions.Session{ID: "s1", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour), UserAgent: "ua", IP: "192.0.2.1"}, []byte("s1"))
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "a1", Purpose: accounts.PurposeVerify, Hash: []byte("h"), ExpiresAt: clk.Now().Add(time.Hour), Attempts: 5})
	var evicted []string
	db.OnRevocation(func(kind, id string) { evicted = append(evicted, kind+":"+id) })
	if err := accounts.DeleteAccount(ctx, db, "a1", nil); err != nil {
		t.Fatal(err)
	}
	email, hash, deleted, err := db.AccountTombstone(ctx, "a1")
	if err != nil || !deleted || email == "a1@example.com" || hash != "" {
		t.Fatalf("tombstone: email %q hash %q deleted %v, %v", email, hash, deleted, err)
	}
	if _, err := db.AccountByID(ctx, "a1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted account by id: %v", err)
	}
	if _, err := db.AccountByEmail(ctx, "a1@example.com"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("deleted account by email: %v", err)
	}
	if _, err := db.SessionByID(ctx, "s1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("session of a deleted account: %v", err)
	}
	if res, _ := db.RotateRefresh(ctx, []byte("s1"), []byte("n"), time.Second, sessions.Client{}); res.Outcome != sessions.RefreshUnknown {
		t.Fatalf("refresh of a deleted account: %v", res.Outcome)
	}
	if _, err := db.DeviceByID(ctx, "d1"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("device of a deleted account: %v", err)
	}
	if !slices.Contains(evicted, "account:a1") {
		t.Fatalf("no revocation announced: %v", evicted)
	}
	if err := accounts.DeleteAccount(ctx, db, "a1", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, _, err := subscriptions.Set(ctx, db, "a1", "basic", clk.Now(), nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("subscription of a deleted account: %v", err)
	}
	if _, err := db.SetDisabled(ctx, "a1", true, "", nil); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("disabling a deleted account: %v", err)
	}
	// The email and the referral code are free again.
	if _, _, err := accounts.Create(ctx, db, newAccount("a2", "a1@example.com", "CODEa1")); err != nil {
		t.Fatalf("sign up again: %v", err)
	}
}

func testSessionClient(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	start := clk.Now()
	db.CreateSession(ctx, sessions.Session{ID: "s1", AccountID: "a1", CreatedAt: start, ExpiresAt: start.Add(time.Hour), UserAgent: "app/1", IP: "192.0.2.1"}, []byte("s1"))
	clk.Advance(time.Minute)
	db.CreateSession(ctx, sessions.Session{ID: "s2", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte("s2"))
	db.CreateSession(ctx, sessions.Session{ID: "s3", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Minute)}, []byte("s3"))
	clk.Advance(time.Minute)
	if res, err := db.RotateRefresh(ctx, []byte("s1"), []byte("s1b"), time.Second, sessions.Client{UserAgent: "app/2", IP: "2001:db8::1"}); err != nil || res.Outcome != sessions.RefreshRotated {
		t.Fatalf("rotate: %v, %v", res.Outcome, err)
	}
	live, err := db.LiveSessions(ctx, "a1")
	if err != nil || len(live) != 2 || live[0].ID != "s2" || live[1].ID != "s1" {
		t.Fatalf("live sessions %+v, %v", live, err)
	}
	if s := live[1]; s.UserAgent != "app/2" || s.IP != "2001:db8::1" || !s.LastUsedAt.Equal(clk.Now()) || !s.CreatedAt.Equal(start) {
		t.Fatalf("s1 as seen: %+v", s)
	}
	if n, err := db.RevokeAccountSessions(ctx, "a1"); err != nil || n != 2 {
		t.Fatalf("revoked %d, %v", n, err)
	}
	if live, _ := db.LiveSessions(ctx, "a1"); len(live) != 0 {
		t.Fatalf("live after revoking all: %+v", live)
	}
}

// The per-record fields of a page of accounts, read for many accounts at
// once: each account gets its own, over several IN lists (500 ids each).
func testPerRecordFieldsOfMany(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, id := range []string{"a1", "a2", "a3"} {
		mustAccount(t, db, id)
	}
	// a1 in the first list, a2 in the second, a3 in the third.
	var ids []string
	for i := range 1001 {
		switch i {
		case 0:
			ids = append(ids, "a1")
		case 500:
			ids = append(ids, "a2")
		case 1000:
			ids = append(ids, "a3")
		default:
			ids = append(ids, fmt.Sprintf("unknown-%d", i))
		}
	}
	now := clk.Now()
	session := func(id, account string, expires time.Duration) {
		t.Helper()
		if err := db.CreateSession(ctx, sessions.Session{ID: id, AccountID: account, CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(expires)}, []byte(id)); err != nil {
			t.Fatal(err)
		}
	}
	session("s1", "a1", time.Hour)
	clk.Advance(time.Second)
	session("s2", "a1", time.Hour)
	session("s3", "a1", time.Hour)
	session("s4", "a1", time.Minute)
	session("s5", "a2", time.Hour)
	if _, err := db.RevokeSession(ctx, "s3"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute) // s4 expires
	live, err := db.LiveSessionsOf(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for account, list := range live {
		for _, s := range list {
			if s.AccountID != account {
				t.Fatalf("session %s of %s listed under %s", s.ID, s.AccountID, account)
			}
			got[account] = append(got[account], s.ID)
		}
	}
	if want := map[string][]string{"a1": {"s2", "s1"}, "a2": {"s5"}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("live sessions by account %v, want %v (newest first)", got, want)
	}
	if !live["a1"][1].CreatedAt.Equal(now) {
		t.Fatalf("s1 as read: %+v", live["a1"][1])
	}

	for chat, user := range map[int64]string{10: "a1", 11: "a2"} {
		if _, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Subscribe, ChatID: chat, LinkUserID: user}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Block, ChatID: 11}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Subscribe, ChatID: 12}); err != nil {
		t.Fatal(err)
	}
	chats, err := db.LinkedTelegramChats(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	if len(chats) != 2 || chats["a1"].ChatID != "10" || chats["a1"].Status != messenger.Subscribed ||
		chats["a2"].ChatID != "11" || chats["a2"].Status != messenger.Blocked || chats["a2"].UserID != "a2" {
		t.Fatalf("linked chats by user %+v", chats)
	}
	if none, err := db.LinkedTelegramChats(ctx, nil); err != nil || len(none) != 0 {
		t.Fatalf("no users: %v, %v", none, err)
	}
}

// Logins racing a disable: each either is refused or has its session
// revoked by the disable, so none outlives it.
func testDisableRacesLogins(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Go(func() {
			id := fmt.Sprintf("s%02d", i)
			err := db.CreateSession(ctx, sessions.Session{ID: id, AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte(id))
			if err != nil && !errors.Is(err, sessions.ErrAccountClosed) {
				errs[i] = err
			}
		})
		if i == len(errs)/2 {
			wg.Go(func() {
				if _, err := db.SetDisabled(ctx, "a1", true, "race", nil); err != nil {
					t.Errorf("disable: %v", err)
				}
			})
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if live, err := db.LiveSessions(ctx, "a1"); err != nil || len(live) != 0 {
		t.Fatalf("sessions outlived the disable: %d, %v", len(live), err)
	}
}
