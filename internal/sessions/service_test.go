package sessions_test

// The service is tested over the real SQL store (SQLite, and PostgreSQL when
// HERALD_TEST_POSTGRES_URL is set), the real accounts service and the fake
// SMTP server; only the clock is ours, so grace windows and expiry need no
// sleeping.

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"github.com/herald-vpn/herald/internal/password"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
	"github.com/riverqueue/river"
)

const (
	accessTTL = time.Hour
	grace     = 10 * time.Second
	pw        = "Secret123"
)

type fixture struct {
	db    *sqlstore.DB
	clk   *testsupport.Clock // the shared clock of the store, accounts and sessions
	smtp  *mailtest.Server
	accts *accounts.Service
	sess  *sessions.Service
}

// cheap is the argon2id cost of the tests.
var cheap = password.Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}

func newFixture(t *testing.T, url string) *fixture {
	t.Helper()
	ctx := context.Background()
	// Jobs are not started (the signup email never goes; tests ask for a
	// code synchronously), but their kind must be registered to be queued.
	workers := river.NewWorkers()
	db, _ := jobstest.Open(t, url, jobs.Config{Workers: workers})
	clk := testsupport.NewClock(time.Now().UTC().Truncate(time.Second))
	db.Now = clk.Now
	f := &fixture{db: db, clk: clk, smtp: mailtest.NewServer(t)}
	// The current cost is a little above "cheap" so a cheap hash counts as
	// weaker and is upgraded at login.
	current := cheap
	current.MemoryKiB, current.Iterations = 2048, 2
	f.accts = f.newAccounts(t, current)
	river.AddWorker(workers, &accounts.CodeEmailWorker{Service: f.accts})
	var err error
	f.sess, err = sessions.NewService(ctx, db, f.accts, sessions.Config{
		AccessTTL: accessTTL, RefreshTTL: 720 * time.Hour, Grace: grace, Issuer: "herald", Now: clk.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// newAccounts returns an accounts service over the fixture's store whose
// hasher uses p.
func (f *fixture) newAccounts(t *testing.T, p password.Params) *accounts.Service {
	t.Helper()
	sender, err := mail.NewSMTP(f.smtp.URL(), "Herald <no-reply@example.com>")
	if err != nil {
		t.Fatal(err)
	}
	cfg := accounts.DefaultConfig()
	cfg.Now = f.clk.Now
	a, err := accounts.NewService(context.Background(), f.db, password.NewHasher(p, 4), sender, cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// signup creates an unverified account through svc.
func signup(t *testing.T, svc *accounts.Service, email string) accounts.Account {
	t.Helper()
	res, err := svc.Signup(context.Background(), email, pw, "", accounts.Language{})
	if err != nil {
		t.Fatalf("signup %s: %v", email, err)
	}
	return res.Account
}

// verifiedUser signs up through svc and verifies with the emailed code.
func (f *fixture) verifiedUser(t *testing.T, svc *accounts.Service, email string) accounts.Account {
	t.Helper()
	ctx := context.Background()
	acct := signup(t, svc, email)
	if err := svc.ResendVerification(ctx, email); err != nil {
		t.Fatalf("resend: %v", err)
	}
	code, ok := mailtest.ExtractCode(f.smtp.WaitForMessage(t, email, 10*time.Second).Text)
	if !ok {
		t.Fatal("no code in the email")
	}
	if err := svc.VerifyEmail(ctx, email, code); err != nil {
		t.Fatalf("verify: %v", err)
	}
	return acct
}

func (f *fixture) login(t *testing.T, email string) sessions.Tokens {
	t.Helper()
	tok, err := f.sess.Login(context.Background(), email, pw, sessions.Client{})
	if err != nil {
		t.Fatalf("login %s: %v", email, err)
	}
	return tok
}

func (f *fixture) identity(t *testing.T, access string) auth.Principal {
	t.Helper()
	id, err := f.sess.VerifyAccessToken(context.Background(), access)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return id
}

func wantCode(t *testing.T, what string, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	if !apperr.Is(err, code) {
		t.Fatalf("%s: got %v, want %s", what, err, code)
	}
	return apperr.As(err)
}

func TestService(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		f := newFixture(t, url)
		// Subtests share the store and a clock that only moves forward;
		// each uses accounts of its own.
		t.Run("Login", f.testLogin)
		t.Run("RehashOnLogin", f.testRehash)
		t.Run("RefreshRotation", f.testRefreshRotation)
		t.Run("ReuseAfterGraceRevokes", f.testReuseAfterGrace)
		t.Run("ConcurrentRefreshWithinGrace", f.testConcurrentRefresh)
		t.Run("Logout", f.testLogout)
		t.Run("EndByLinkOnce", f.testEndByLinkOnce)
		t.Run("Require", f.testRequire)
		t.Run("AccessTokenExpires", f.testExpiry)
	})
}

func (f *fixture) testLogin(t *testing.T) {
	ctx := context.Background()
	user := f.verifiedUser(t, f.accts, "login@example.com")
	signup(t, f.accts, "unverified@example.com")

	cases := []struct {
		name, email, password string
		want                  apperr.Code // "" for success
	}{
		{"ok", "login@example.com", pw, ""},
		{"email is case-insensitive", " LOGIN@Example.com ", pw, ""},
		{"wrong password", "login@example.com", "Secret124", apperr.InvalidCredentials},
		{"unknown email", "nobody@example.com", pw, apperr.InvalidCredentials},
		{"malformed email", "not-an-email", pw, apperr.InvalidCredentials},
		{"empty password", "login@example.com", "", apperr.InvalidCredentials},
		{"unverified, right password", "unverified@example.com", pw, apperr.EmailNotVerified},
		{"unverified, wrong password", "unverified@example.com", "Wrong1234", apperr.InvalidCredentials},
	}
	var messages []string
	for _, c := range cases {
		tok, err := f.sess.Login(ctx, c.email, c.password, sessions.Client{})
		if c.want != "" {
			e := wantCode(t, c.name, err, c.want)
			if c.want == apperr.InvalidCredentials {
				messages = append(messages, e.Message)
			}
			if e.Status() != map[apperr.Code]int{apperr.InvalidCredentials: 401, apperr.EmailNotVerified: 403}[c.want] {
				t.Errorf("%s: status %d", c.name, e.Status())
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if tok.TokenType != "Bearer" || tok.ExpiresIn != int(accessTTL/time.Second) || tok.RefreshToken == "" {
			t.Fatalf("%s: tokens %+v", c.name, tok)
		}
		if id := f.identity(t, tok.AccessToken); id.AccountID != user.ID || id.Has(auth.ScopeAdmin) || id.SessionID == "" {
			t.Fatalf("%s: identity %+v, want account %s without admin", c.name, id, user.ID)
		}
	}
	// Unknown email and wrong password cannot be told apart.
	for _, m := range messages[1:] {
		if m != messages[0] {
			t.Fatalf("INVALID_CREDENTIALS messages differ: %q", messages)
		}
	}
}

func (f *fixture) testRehash(t *testing.T) {
	ctx := context.Background()
	acct := f.verifiedUser(t, f.newAccounts(t, cheap), "rehash@example.com")
	before, err := f.db.AccountPasswordHash(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(before, "$m=1024,t=1,p=1$") {
		t.Fatalf("stored hash %q, want the cheap parameters", before)
	}
	f.login(t, "rehash@example.com")
	after, err := f.db.AccountPasswordHash(ctx, acct.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(after, "$m=2048,t=2,p=1$") {
		t.Fatalf("hash after login %q, want the current parameters", after)
	}
	f.login(t, "rehash@example.com") // the new hash verifies
}

func (f *fixture) testRefreshRotation(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "rotate@example.com")
	first := f.login(t, "rotate@example.com")
	sid := f.identity(t, first.AccessToken).SessionID

	second, err := f.sess.Refresh(ctx, first.RefreshToken, sessions.Client{})
	if err != nil {
		t.Fatal(err)
	}
	if second.RefreshToken == first.RefreshToken || second.TokenType != "Bearer" || second.ExpiresIn != int(accessTTL/time.Second) {
		t.Fatalf("refresh gave %+v", second)
	}
	if id := f.identity(t, second.AccessToken); id.SessionID != sid {
		t.Fatalf("refreshed token in session %s, want %s", id.SessionID, sid)
	}
	if _, err := f.sess.Refresh(ctx, second.RefreshToken, sessions.Client{}); err != nil {
		t.Fatalf("the new refresh token: %v", err)
	}
	for _, bad := range []string{"", "   ", "no-such-token", first.RefreshToken + "x"} {
		_, err := f.sess.Refresh(ctx, bad, sessions.Client{})
		wantCode(t, "refresh "+bad, err, apperr.TokenInvalid)
	}
}

func (f *fixture) testReuseAfterGrace(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "reuse@example.com")
	victim := f.login(t, "reuse@example.com")
	other := f.login(t, "reuse@example.com") // another device: must survive
	next, err := f.sess.Refresh(ctx, victim.RefreshToken, sessions.Client{})
	if err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(grace + time.Second)

	_, err = f.sess.Refresh(ctx, victim.RefreshToken, sessions.Client{})
	wantCode(t, "rotated token after grace", err, apperr.TokenInvalid)
	// The session is over: its newest refresh token and its access tokens.
	_, err = f.sess.Refresh(ctx, next.RefreshToken, sessions.Client{})
	wantCode(t, "newest refresh token of the revoked session", err, apperr.TokenInvalid)
	for _, access := range []string{victim.AccessToken, next.AccessToken} {
		_, err = f.sess.VerifyAccessToken(ctx, access)
		wantCode(t, "access token of the revoked session", err, apperr.TokenInvalid)
	}
	// Only that session.
	f.identity(t, other.AccessToken)
	if _, err := f.sess.Refresh(ctx, other.RefreshToken, sessions.Client{}); err != nil {
		t.Fatalf("other session: %v", err)
	}
}

func (f *fixture) testConcurrentRefresh(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "tabs@example.com")
	tok := f.login(t, "tabs@example.com")
	const tabs = 2
	var (
		wg      sync.WaitGroup
		start   = make(chan struct{})
		results [tabs]sessions.Tokens
		errs    [tabs]error
	)
	for i := range tabs {
		wg.Go(func() {
			<-start
			results[i], errs[i] = f.sess.Refresh(ctx, tok.RefreshToken, sessions.Client{})
		})
	}
	close(start)
	wg.Wait()
	for i := range tabs {
		if errs[i] != nil {
			t.Fatalf("tab %d: %v", i, errs[i])
		}
	}
	if results[0].RefreshToken == results[1].RefreshToken {
		t.Fatal("both tabs got the same refresh token")
	}
	// Each tab carries on with its own token.
	for i := range tabs {
		f.identity(t, results[i].AccessToken)
		if _, err := f.sess.Refresh(ctx, results[i].RefreshToken, sessions.Client{}); err != nil {
			t.Fatalf("tab %d refreshing again: %v", i, err)
		}
	}
}

func (f *fixture) testLogout(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "logout@example.com")
	tok := f.login(t, "logout@example.com")
	other := f.login(t, "logout@example.com")
	if err := f.sess.Logout(ctx, f.identity(t, tok.AccessToken)); err != nil {
		t.Fatal(err)
	}
	_, err := f.sess.VerifyAccessToken(ctx, tok.AccessToken)
	wantCode(t, "access token after logout", err, apperr.TokenInvalid)
	_, err = f.sess.Refresh(ctx, tok.RefreshToken, sessions.Client{})
	wantCode(t, "refresh token after logout", err, apperr.TokenInvalid)
	f.identity(t, other.AccessToken) // another session of the account lives on
}

// The link of a new-device alert followed twice at once (a double click,
// a mail scanner and its user) ends the session once: one follow says it
// ended it, the other that it had ended.
func (f *fixture) testEndByLinkOnce(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "endlink@example.com")
	p := f.identity(t, f.login(t, "endlink@example.com").AccessToken)
	tok := f.sess.EndLinkToken(p.AccountID, p.SessionID)
	results := make(chan error, 2)
	var ended atomic.Int32
	for range 2 {
		go func() {
			ok, err := f.sess.EndByLink(ctx, tok)
			if ok {
				ended.Add(1)
			}
			results <- err
		}()
	}
	for range 2 {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if n := ended.Load(); n != 1 {
		t.Fatalf("%d of two follows of one link said they ended the session, want 1", n)
	}
	if ok, err := f.sess.EndByLink(ctx, tok); ok || err != nil {
		t.Fatalf("the link once more: ended %v, %v; want false", ok, err)
	}
}

func (f *fixture) testRequire(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "require@example.com")
	user := f.login(t, "require@example.com").AccessToken
	if _, _, err := f.accts.GrantAdmin(ctx, "operator@example.com", pw); err != nil {
		t.Fatal(err)
	}
	admin := f.login(t, "operator@example.com").AccessToken
	if !f.identity(t, admin).Has(auth.ScopeAdmin) {
		t.Fatal("admin token without the admin scope")
	}
	loggedOut := f.login(t, "require@example.com")
	if err := f.sess.Logout(ctx, f.identity(t, loggedOut.AccessToken)); err != nil {
		t.Fatal(err)
	}

	// Through the one authenticator and the rules, as both doors use them
	// (the server parses the header; see internal/server).
	authn := auth.NewAuthenticator(f.sess, nil)
	bearer := func(tok string) auth.Credential { return auth.Credential{Present: true, Bearer: tok} }
	cases := []struct {
		name string
		cred auth.Credential
		rule auth.Rule
		want apperr.Code // "" when admitted
	}{
		{"no credential", auth.Credential{}, auth.Protected, apperr.AuthRequired},
		{"no credential, admin scope", auth.Credential{}, auth.Admin, apperr.AuthRequired},
		{"not a bearer", auth.Credential{Present: true}, auth.Protected, apperr.TokenInvalid},
		{"garbage", bearer("not.a.jwt"), auth.Protected, apperr.TokenInvalid},
		{"logged out", bearer(loggedOut.AccessToken), auth.Protected, apperr.TokenInvalid},
		{"user", bearer(user), auth.Protected, ""},
		{"user on admin scope", bearer(user), auth.Admin, apperr.InsufficientPermissions},
		{"admin on admin scope", bearer(admin), auth.Admin, ""},
		{"admin on user scope", bearer(admin), auth.Protected, ""},
		{"a public rule needs nothing", auth.Credential{}, auth.ForAuthTier, ""},
	}
	for _, c := range cases {
		p, err := authn.Authenticate(ctx, c.cred)
		err = c.rule.Permit(auth.Result{Principal: p, Err: err})
		if c.want != "" {
			e := wantCode(t, c.name, err, c.want)
			if want := map[apperr.Code]int{apperr.AuthRequired: 401, apperr.TokenInvalid: 401, apperr.InsufficientPermissions: 403}[c.want]; e.Status() != want {
				t.Errorf("%s: status %d, want %d", c.name, e.Status(), want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if c.rule.NeedsCaller() && (p.Kind != auth.User || p.AccountID == "") {
			t.Fatalf("%s: principal %+v", c.name, p)
		}
	}

	// The last admin keeps its scope; with another admin, revoking the
	// scope ends the admin's sessions.
	wantCode(t, "revoking the last admin", f.accts.RevokeAdmin(ctx, "operator@example.com"), apperr.LastAdmin)
	if _, _, err := f.accts.GrantAdmin(ctx, "operator2@example.com", pw); err != nil {
		t.Fatal(err)
	}
	if err := f.accts.RevokeAdmin(ctx, "operator@example.com"); err != nil {
		t.Fatal(err)
	}
	_, err := f.sess.VerifyAccessToken(ctx, admin)
	wantCode(t, "admin token after revoke", err, apperr.TokenInvalid)
	if id := f.identity(t, f.login(t, "operator@example.com").AccessToken); id.Has(auth.ScopeAdmin) {
		t.Fatal("admin scope still granted after revoke")
	}
}

func (f *fixture) testExpiry(t *testing.T) {
	ctx := context.Background()
	f.verifiedUser(t, f.accts, "expiry@example.com")
	tok := f.login(t, "expiry@example.com")
	exp := f.identity(t, tok.AccessToken).ExpiresAt
	f.clk.Advance(accessTTL + time.Second)
	_, err := f.sess.VerifyAccessToken(ctx, tok.AccessToken)
	e := wantCode(t, "expired access token", err, apperr.TokenExpired)
	if e.Details["expiredAt"] != exp.UTC().Format(time.RFC3339) || e.Details["tokenType"] != "access" {
		t.Fatalf("details %v, want expiredAt %s and tokenType access", e.Details, exp.UTC().Format(time.RFC3339))
	}
	// The refresh token outlives it and gives a working access token.
	next, err := f.sess.Refresh(ctx, tok.RefreshToken, sessions.Client{})
	if err != nil {
		t.Fatal(err)
	}
	f.identity(t, next.AccessToken)
}
