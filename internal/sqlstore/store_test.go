package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// mustOpen opens and migrates a fresh database with a fixed clock.
func mustOpen(t *testing.T, url string) (*sqlstore.DB, *testsupport.Clock) {
	return mustOpenJobs(t, url, jobs.Config{})
}

// mustOpenJobs is mustOpen with a job configuration (the workers River
// must know before it accepts a job kind).
func mustOpenJobs(t *testing.T, url string, cfg jobs.Config) (*sqlstore.DB, *testsupport.Clock) {
	t.Helper()
	db, _ := jobstest.Open(t, url, cfg)
	clk := testsupport.NewClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	db.UseTestClock(clk.Now)
	return db, clk
}

// storeCase is one conformance test, run on every database.
type storeCase struct {
	name string
	fn   func(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock)
}

// runConformance runs each case in parallel on a fresh database of every
// dialect under test.
func runConformance(t *testing.T, cases []storeCase, open func(*testing.T, string) (*sqlstore.DB, *testsupport.Clock)) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			sqlstoretest.Require(t, d)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					db, clk := open(t, sqlstoretest.NewURL(t, d))
					c.fn(t, db, clk)
				})
			}
		})
	}
}

func newAccount(id, email, code string) accounts.NewAccount {
	return accounts.NewAccount{ID: id, Email: email, PasswordHash: "$argon2id$x", ReferralCode: code, Trial: 7 * 24 * time.Hour, ReferralBonus: 24 * time.Hour}
}

func TestConformance(t *testing.T) {
	cases := []storeCase{
		{"MigrateTwiceIsANoOp", testMigrateTwice},
		{"CreateAndFind", testCreateAndFind},
		{"AccountKeepsItsLocale", testAccountLocale},
		{"DuplicateEmailIsConflict", testDuplicateEmail},
		{"ConcurrentSignupsOneWins", testConcurrentCreate},
		{"ReferralAppliedOnce", testReferral},
		{"UnknownReferralIgnored", testUnknownReferral},
		{"SendLeaseIsExclusive", testSendLease},
		{"SendStatsAndCodes", testSendStatsAndCodes},
		{"AttemptCodeSpendsAttempts", testAttemptCode},
		{"AttemptCodeExpired", testAttemptExpired},
		{"PendingCodeVerifiesAndIsDropped", testPendingCode},
		{"PendingCodeRacesRecording", testPendingCodeRacesRecording},
		{"SecretFirstWriterWins", testSecret},
		{"RefreshRotationGraceAndReuse", testRefreshRotation},
		{"RevokeSessions", testRevokeSessions},
		{"Bans", testBans},
		{"PruneSessionsCodesLeases", testPrune},
		{"RehashKeepsPasswordChangeRequired", testRehashKeepsMark},
		{"BillingRevocationsAndHistoryRevision", testBillingRevocations},
	}
	runConformance(t, cases, mustOpen)
}

// testBillingRevocations: a store transaction's refund is marked once
// per source (the second mark says it was already), and the history's
// revision of an entitlement is "" until kept, then the latest kept.
func testBillingRevocations(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	if _, _, err := accounts.Create(ctx, db, newAccount("id-r", "r@example.com", "RRRRRRRR")); err != nil {
		t.Fatal(err)
	}
	ents, err := db.AccountEntitlements(ctx, "id-r")
	if err != nil || len(ents) != 1 {
		t.Fatalf("the signup's entitlement: %v %v", ents, err)
	}
	id := ents[0].ID
	for _, tc := range []struct {
		source subscriptions.Source
		tx     string
		fresh  bool
	}{
		{subscriptions.AppStore, "2000000000000001", true},
		{subscriptions.AppStore, "2000000000000001", false},
		{subscriptions.AppStore, "2000000000000002", true},
		{subscriptions.GooglePlay, "2000000000000001", true},
	} {
		fresh, err := db.MarkRevocation(ctx, tc.source, tc.tx, id)
		if err != nil || fresh != tc.fresh {
			t.Fatalf("mark %s %s: fresh %v, %v; want %v", tc.source, tc.tx, fresh, err, tc.fresh)
		}
	}
	if rev, err := db.HistoryRevision(ctx, id); err != nil || rev != "" {
		t.Fatalf("revision never kept: %q, %v", rev, err)
	}
	for _, want := range []string{"rev-1", "rev-2"} {
		if err := db.SaveHistoryRevision(ctx, id, want); err != nil {
			t.Fatal(err)
		}
		if rev, err := db.HistoryRevision(ctx, id); err != nil || rev != want {
			t.Fatalf("revision %q, %v; want %q", rev, err, want)
		}
	}
}

func testCreateAndFind(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	a, applied, err := accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	if err != nil || applied {
		t.Fatalf("create: %v applied=%v", err, applied)
	}
	if a.Email != "a@example.com" || a.Verified() || a.Subscription.Plan != "trial" || !a.Subscription.ExpiresAt.Equal(clk.Now().Add(7*24*time.Hour)) {
		t.Fatalf("unexpected account %+v", a)
	}
	b, err := db.AccountByEmail(ctx, "a@example.com")
	if err != nil || b.ID != "id-1" || !b.CreatedAt.Equal(clk.Now()) || b.PasswordHash != "$argon2id$x" {
		t.Fatalf("by email (with the hash): %+v %v", b, err)
	}
	// Reads by id leave the hash out; AccountPasswordHash reads it alone.
	c, err := db.AccountByID(ctx, "id-1")
	if err != nil || c.ID != "id-1" || c.Email != "a@example.com" || c.PasswordHash != "" {
		t.Fatalf("by id (without the hash): %+v %v", c, err)
	}
	// The profile is the by-id read reduced to what users/me shows.
	p, err := db.AccountProfile(ctx, "id-1")
	want := accounts.Account{ID: c.ID, Email: c.Email, EmailVerifiedAt: c.EmailVerifiedAt, ReferralCode: c.ReferralCode, CreatedAt: c.CreatedAt, Subscription: c.Subscription, Locale: c.Locale}
	if err != nil || !reflect.DeepEqual(p, want) {
		t.Fatalf("profile %+v %v, want %+v", p, err, want)
	}
	if _, err := db.AccountProfile(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("profile of a missing account: %v", err)
	}
	if h, err := db.AccountPasswordHash(ctx, "id-1"); err != nil || h != "$argon2id$x" {
		t.Fatalf("password hash: %q %v", h, err)
	}
	if _, err := db.AccountByID(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("missing account: %v", err)
	}
	if _, err := db.AccountPasswordHash(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("hash of a missing account: %v", err)
	}
}

func testAccountLocale(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	n := newAccount("id-de", "de@example.com", "DEDEDEDE")
	n.Locale = "de-AT"
	if _, _, err := accounts.Create(ctx, db, n); err != nil {
		t.Fatal(err)
	}
	if _, _, err := accounts.Create(ctx, db, newAccount("id-none", "none@example.com", "NONENONE")); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]string{"id-de": "de-AT", "id-none": ""} {
		a, err := db.AccountByID(ctx, id)
		if err != nil || a.Locale != want {
			t.Errorf("account %s: locale %q, %v; want %q", id, a.Locale, err, want)
		}
	}
	if a, err := db.AccountByEmail(ctx, "de@example.com"); err != nil || a.Locale != "de-AT" {
		t.Errorf("by email: locale %q, %v", a.Locale, err)
	}
	// Its owner sees it (users/me), and it changes.
	if p, err := db.AccountProfile(ctx, "id-de"); err != nil || p.Locale != "de-AT" {
		t.Errorf("profile: locale %q, %v", p.Locale, err)
	}
	if err := db.SetLocale(ctx, "id-none", "pt-BR"); err != nil {
		t.Fatal(err)
	}
	for _, read := range []func(context.Context, string) (accounts.Account, error){db.AccountByID, db.AccountProfile} {
		if a, err := read(ctx, "id-none"); err != nil || a.Locale != "pt-BR" {
			t.Errorf("after SetLocale: locale %q, %v", a.Locale, err)
		}
	}
	if a, _ := db.AccountByID(ctx, "id-de"); a.Locale != "de-AT" {
		t.Errorf("SetLocale of one account changed another's: %q", a.Locale)
	}
	if err := accounts.DeleteAccount(ctx, db, "id-de", nil); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"id-de", "nobody"} {
		if err := db.SetLocale(ctx, id, "en"); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("SetLocale of %s: %v, want ErrNotFound", id, err)
		}
	}
}

func testDuplicateEmail(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	if _, _, err := accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA")); err != nil {
		t.Fatal(err)
	}
	_, _, err := accounts.Create(ctx, db, newAccount("id-2", "a@example.com", "BBBBBBBB"))
	if !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if _, err := db.AccountByID(ctx, "id-2"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("a failed create left a row behind")
	}
}

func testConcurrentCreate(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = accounts.Create(ctx, db, newAccount("id-"+string(rune('a'+i)), "race@example.com", "CODE000"+string(rune('A'+i))))
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, storage.ErrConflict):
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d creates succeeded, want 1", ok)
	}
}

func testReferral(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("ref", "ref@example.com", "REFCODE2"))
	n := newAccount("new", "new@example.com", "NEWCODE2")
	n.Referral = "REFCODE2"
	a, applied, err := accounts.Create(ctx, db, n)
	if err != nil || !applied {
		t.Fatalf("applied=%v err=%v", applied, err)
	}
	want := clk.Now().Add(8 * 24 * time.Hour)
	if !a.Subscription.ExpiresAt.Equal(want) {
		t.Fatalf("new account expires %v, want %v", a.Subscription.ExpiresAt, want)
	}
	r, _ := db.AccountByID(ctx, "ref")
	if !r.Subscription.ExpiresAt.Equal(want) {
		t.Fatalf("referrer expires %v, want %v", r.Subscription.ExpiresAt, want)
	}
}

func testUnknownReferral(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	n := newAccount("new", "new@example.com", "NEWCODE2")
	n.Referral = "NOSUCHCD"
	a, applied, err := accounts.Create(context.Background(), db, n)
	if err != nil || applied || !a.Subscription.ExpiresAt.Equal(clk.Now().Add(7*24*time.Hour)) {
		t.Fatalf("applied=%v err=%v expires=%v", applied, err, a.Subscription.ExpiresAt)
	}
}

func testSendLease(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := db.AcquireSendLease(ctx, "id-1", accounts.PurposeVerify, clk.Now().Add(time.Minute))
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("%d leases granted, want 1", won)
	}
	if ok, _ := db.AcquireSendLease(ctx, "id-1", accounts.PurposeReset, clk.Now().Add(time.Minute)); !ok {
		t.Fatal("a lease of another purpose was refused")
	}
	clk.Advance(2 * time.Minute) // the holder crashed; its lease lapses
	if ok, _ := db.AcquireSendLease(ctx, "id-1", accounts.PurposeVerify, clk.Now().Add(time.Minute)); !ok {
		t.Fatal("an expired lease was not taken over")
	}
	db.ReleaseSendLease(ctx, "id-1", accounts.PurposeVerify)
	if ok, _ := db.AcquireSendLease(ctx, "id-1", accounts.PurposeVerify, clk.Now().Add(time.Minute)); !ok {
		t.Fatal("a released lease was refused")
	}
}

func testSendStatsAndCodes(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	start := clk.Now()
	send := func(requested bool) {
		if err := db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte{1}, ExpiresAt: clk.Now().Add(time.Minute), Attempts: 5, Requested: requested}); err != nil {
			t.Fatal(err)
		}
	}
	send(false)
	clk.Advance(10 * time.Minute)
	send(true)
	clk.Advance(10 * time.Minute)
	send(true)
	st, err := db.SendStats(ctx, "id-1", accounts.PurposeVerify, start.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if st.RequestedInWindow != 2 || !st.OldestInWindow.Equal(start.Add(10*time.Minute)) || !st.LastRequested.Equal(clk.Now()) || !st.LastSent.Equal(clk.Now()) {
		t.Fatalf("stats %+v", st)
	}
	st, _ = db.SendStats(ctx, "id-1", accounts.PurposeVerify, start.Add(15*time.Minute))
	if st.RequestedInWindow != 1 {
		t.Fatalf("window stats %+v", st)
	}
	st, _ = db.SendStats(ctx, "id-1", accounts.PurposeReset, start)
	if st != (accounts.SendStats{}) {
		t.Fatalf("other purpose stats %+v", st)
	}
}

// attempt types a code whose hash is typed through the domain's state
// machine, as the accounts service does.
func attempt(t *testing.T, db *sqlstore.DB, p accounts.Purpose, typed string, effect accounts.CodeEffect) accounts.CodeCheck {
	t.Helper()
	matches := func(h []byte) bool { return bytes.Equal(h, []byte(typed)) }
	res, err := accounts.AttemptCode(context.Background(), db, "id-1", p, matches, effect)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func testAttemptCode(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	verify := accounts.CodeEffect{MarkVerified: true}
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	if res := attempt(t, db, accounts.PurposeVerify, "right", verify); res.Outcome != accounts.CodeMissing {
		t.Fatalf("no code yet: %+v", res)
	}
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte("old"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 3})
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte("right"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 3})
	for want := 2; want >= 0; want-- {
		if res := attempt(t, db, accounts.PurposeVerify, "old", verify); res.Outcome != accounts.CodeWrong || res.AttemptsLeft != want {
			t.Fatalf("wrong attempt: %+v, want %d left", res, want)
		}
	}
	if res := attempt(t, db, accounts.PurposeVerify, "right", verify); res.Outcome != accounts.CodeExhausted {
		t.Fatalf("a code with no attempts left: %+v", res)
	}
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte("right"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 3})
	if res := attempt(t, db, accounts.PurposeVerify, "right", verify); res.Outcome != accounts.CodeMatched {
		t.Fatalf("right code refused: %+v", res)
	}
	a, _ := db.AccountByID(ctx, "id-1")
	if !a.Verified() || !a.EmailVerifiedAt.Equal(clk.Now()) {
		t.Fatalf("not verified: %+v", a)
	}
	if res := attempt(t, db, accounts.PurposeVerify, "right", verify); res.Outcome != accounts.CodeMissing {
		t.Fatalf("a used code is still there: %+v", res)
	}
}

func testAttemptExpired(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte("right"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 5})
	clk.Advance(time.Minute)
	if res := attempt(t, db, accounts.PurposeVerify, "right", accounts.CodeEffect{MarkVerified: true}); res.Outcome != accounts.CodeExpired {
		t.Fatalf("%+v", res)
	}
	if a, _ := db.AccountByID(ctx, "id-1"); a.Verified() {
		t.Fatal("verified by an expired code")
	}
}

func testSecret(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	first, err := db.Secret(ctx, "k", func() ([]byte, error) { return []byte("one"), nil })
	if err != nil || string(first) != "one" {
		t.Fatalf("%q %v", first, err)
	}
	second, _ := db.Secret(ctx, "k", func() ([]byte, error) { return []byte("two"), nil })
	if string(second) != "one" {
		t.Fatalf("secret changed to %q", second)
	}
}

func testMigrateTwice(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	applied, err := db.Migrate(context.Background())
	if err != nil || len(applied) != 0 {
		t.Fatalf("second migrate applied %v, err %v", applied, err)
	}
}

func testRefreshRotation(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	s := sessions.Session{ID: "s-1", AccountID: "id-1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}
	if err := db.CreateSession(ctx, s, []byte("t1")); err != nil {
		t.Fatal(err)
	}
	grace := 5 * time.Second
	steps := []struct {
		advance  time.Duration
		old, new string
		want     sessions.RotateOutcome
	}{
		{0, "nope", "x", sessions.RefreshUnknown},
		{time.Second, "t1", "t2", sessions.RefreshRotated},
		{time.Second, "t1", "t2b", sessions.RefreshGrace}, // a second tab, within grace
		{time.Second, "t2", "t3", sessions.RefreshRotated},
		{time.Second, "t2b", "t3b", sessions.RefreshRotated}, // the sibling lives on its own
		{10 * time.Second, "t1", "t9", sessions.RefreshReused},
		{0, "t3", "t4", sessions.RefreshRevoked},
	}
	for i, st := range steps {
		clk.Advance(st.advance)
		res, err := db.RotateRefresh(ctx, []byte(st.old), []byte(st.new), grace, sessions.Client{})
		if err != nil || res.Outcome != st.want {
			t.Fatalf("step %d: outcome %v err %v, want %v", i, res.Outcome, err, st.want)
		}
	}
	got, _ := db.SessionByID(ctx, "s-1")
	if got.RevokedAt == nil {
		t.Fatal("reuse did not revoke the session")
	}
}

func testRevokeSessions(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	for _, id := range []string{"s-1", "s-2"} {
		db.CreateSession(ctx, sessions.Session{ID: id, AccountID: "id-1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}, []byte(id))
	}
	db.RevokeSession(ctx, "s-1")
	s1, _ := db.SessionByID(ctx, "s-1")
	s2, _ := db.SessionByID(ctx, "s-2")
	if s1.RevokedAt == nil || s2.RevokedAt != nil {
		t.Fatalf("after one logout: %+v %+v", s1, s2)
	}
	clk.Advance(2 * time.Hour)
	if res, _ := db.RotateRefresh(ctx, []byte("s-2"), []byte("n"), time.Second, sessions.Client{}); res.Outcome != sessions.RefreshExpired {
		t.Fatalf("expired refresh: %v", res.Outcome)
	}
	if err := db.SetScope(ctx, "id-1", "", true, nil); err != nil {
		t.Fatal(err)
	}
	s2, _ = db.SessionByID(ctx, "s-2")
	if s2.RevokedAt == nil {
		t.Fatal("revoking the scope left a session alive")
	}
}

func testBans(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	for _, ip := range []string{"203.0.113.9", "2001:db8::/64", "203.0.113.9"} {
		if err := db.AddBan(ctx, limits.Ban{IP: ip, Reason: "test", CreatedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	bans, err := db.ListBans(ctx)
	if err != nil || len(bans) != 2 {
		t.Fatalf("%v %v", bans, err)
	}
	if err := db.LiftBan(ctx, "203.0.113.9"); err != nil {
		t.Fatal(err)
	}
	if err := db.LiftBan(ctx, "203.0.113.9"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("lifting twice: %v", err)
	}
	bans, _ = db.ListBans(ctx)
	if len(bans) != 1 || bans[0].IP != "2001:db8::/64" {
		t.Fatalf("%v", bans)
	}
}

func testPrune(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	start := clk.Now()
	db.CreateSession(ctx, sessions.Session{ID: "old", AccountID: "id-1", CreatedAt: start, ExpiresAt: start.Add(time.Hour)}, []byte("old"))
	db.CreateSession(ctx, sessions.Session{ID: "live", AccountID: "id-1", CreatedAt: start, ExpiresAt: start.Add(30 * 24 * time.Hour)}, []byte("live"))
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte{1}, ExpiresAt: start.Add(time.Minute), Attempts: 5})
	db.AcquireSendLease(ctx, "id-1", accounts.PurposeReset, start.Add(time.Minute))
	clk.Set(start.Add(72 * time.Hour))
	p, err := db.Prune(ctx, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	if p.Sessions != 1 || p.Codes != 1 || p.Leases != 1 {
		t.Fatalf("pruned %+v", p)
	}
	if _, err := db.SessionByID(ctx, "old"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatal("an ended session survived")
	}
	if _, err := db.SessionByID(ctx, "live"); err != nil {
		t.Fatal("a live session was pruned")
	}
	if res, _ := db.RotateRefresh(ctx, []byte("live"), []byte("next"), time.Second, sessions.Client{}); res.Outcome != sessions.RefreshRotated {
		t.Fatalf("the live session's refresh token: %v", res.Outcome)
	}
	if p, _ := db.Prune(ctx, clk.Now()); p != (sqlstore.Pruned{}) {
		t.Fatalf("a second pass pruned %+v", p)
	}
}

func testPendingCode(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	verify := accounts.CodeEffect{MarkVerified: true}

	// A failed send: the pending code is dropped, the live one still works.
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeVerify, Hash: []byte("live"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 5})
	db.StagePendingCode(ctx, "id-1", accounts.PurposeVerify, []byte("lost"), clk.Now().Add(time.Minute))
	db.DropPendingCode(ctx, "id-1", accounts.PurposeVerify)
	if res := attempt(t, db, accounts.PurposeVerify, "lost", verify); res.Outcome != accounts.CodeWrong || res.AttemptsLeft != 4 {
		t.Fatalf("a dropped pending code: %+v", res)
	}

	// A pending code verifies before its send is recorded, and replaces
	// the live one.
	db.StagePendingCode(ctx, "id-1", accounts.PurposeVerify, []byte("new"), clk.Now().Add(time.Minute))
	if res := attempt(t, db, accounts.PurposeVerify, "new", verify); res.Outcome != accounts.CodeMatched {
		t.Fatalf("a pending code was refused: %+v", res)
	}
	if a, _ := db.AccountByID(ctx, "id-1"); !a.Verified() {
		t.Fatal("not verified by the pending code")
	}
	if res := attempt(t, db, accounts.PurposeVerify, "live", verify); res.Outcome != accounts.CodeMissing {
		t.Fatalf("codes survived a match: %+v", res)
	}

	// Recording the send makes the pending code the live one; an expired
	// pending code never matches.
	db.StagePendingCode(ctx, "id-1", accounts.PurposeReset, []byte("r1"), clk.Now().Add(time.Minute))
	db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeReset, Hash: []byte("r1"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 5})
	db.StagePendingCode(ctx, "id-1", accounts.PurposeReset, []byte("r2"), clk.Now().Add(time.Second))
	clk.Advance(2 * time.Second)
	if res := attempt(t, db, accounts.PurposeReset, "r2", accounts.CodeEffect{}); res.Outcome != accounts.CodeWrong || res.AttemptsLeft != 4 {
		t.Fatalf("an expired pending code: %+v", res)
	}
	if res := attempt(t, db, accounts.PurposeReset, "r1", accounts.CodeEffect{}); res.Outcome != accounts.CodeMatched {
		t.Fatalf("the recorded code: %+v", res)
	}
}

// testPendingCodeRacesRecording types a code whose email is being sent
// while its send is being recorded: under READ COMMITTED an unlocked
// attempt could read the old live code, then find the pending row already
// deleted by the recording, and answer "no code". Every attempt must match.
func testPendingCodeRacesRecording(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA"))
	for i := range 40 {
		code := fmt.Sprintf("code-%d", i)
		if err := db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeReset, Hash: []byte("older"), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 5}); err != nil {
			t.Fatal(err)
		}
		if err := db.StagePendingCode(ctx, "id-1", accounts.PurposeReset, []byte(code), clk.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		start := make(chan struct{})
		recorded := make(chan error, 1)
		go func() {
			<-start
			recorded <- db.RecordCodeSent(ctx, accounts.CodeSent{AccountID: "id-1", Purpose: accounts.PurposeReset, Hash: []byte(code), ExpiresAt: clk.Now().Add(time.Minute), Attempts: 5})
		}()
		close(start)
		res := attempt(t, db, accounts.PurposeReset, code, accounts.CodeEffect{})
		select {
		case err := <-recorded:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("recording the send did not finish")
		}
		if res.Outcome != accounts.CodeMatched {
			t.Fatalf("round %d: a code being recorded was refused: %+v", i, res)
		}
	}
}

// TestMigrateConcurrently: replicas that start together on a fresh
// PostgreSQL database all migrate it without error (River's migrations
// included). SQLite is one process's database; it has no replicas.
func TestMigrateConcurrently(t *testing.T) {
	url := sqlstoretest.NewURL(t, "postgres")
	ctx := context.Background()
	const replicas = 4
	dbs := make([]*sqlstore.DB, replicas)
	for i := range dbs {
		db, err := sqlstore.Open(ctx, url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		dbs[i] = db
	}
	errs := make(chan error, replicas)
	start := make(chan struct{})
	for _, db := range dbs {
		go func() {
			<-start
			_, err := db.Migrate(ctx)
			errs <- err
		}()
	}
	close(start)
	for range replicas {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("concurrent migrate: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a migration did not finish within a minute")
		}
	}
}

// A login's rehash stores the same password anew and keeps the mark a
// breached password set; only a new password clears it.
func testRehashKeepsMark(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	if _, _, err := accounts.Create(ctx, db, newAccount("id-1", "a@example.com", "AAAAAAAA")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		save     func(context.Context, string, string) error
		hash     string
		wantMark bool
	}{
		{"rehash", db.RehashPassword, "$argon2id$rehashed", true},
		{"new password", db.UpdatePasswordHash, "$argon2id$new", false},
	} {
		if err := db.SetPasswordChangeRequired(ctx, "id-1"); err != nil {
			t.Fatal(err)
		}
		if err := c.save(ctx, "id-1", c.hash); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		a, err := db.AccountByEmail(ctx, "a@example.com")
		if err != nil || a.PasswordHash != c.hash || a.PasswordChangeRequired != c.wantMark {
			t.Fatalf("after a %s: hash %q passwordChangeRequired %v (%v), want %q %v", c.name, a.PasswordHash, a.PasswordChangeRequired, err, c.hash, c.wantMark)
		}
	}
}
