package sessions_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// A logout on one replica (or one process: the CLI on SQLite) is refused on
// another that had its session cached: the announcement (PostgreSQL) or
// the moved revocation epoch (SQLite) evicts it.
func TestLogoutReachesOtherReplicas(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		a := newFixture(t, url)
		// The other replica: its own connections to the same database,
		// its own cache, the same keys (kept in the database).
		db2, _ := jobstest.Open(t, url, jobs.Config{})
		db2.Now = a.clk.Now
		b, err := sessions.NewService(ctx, db2, a.accts, sessions.Config{AccessTTL: accessTTL, RefreshTTL: 720 * time.Hour, Issuer: "herald", Now: a.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		watchCtx, stop := context.WithCancel(ctx)
		watched := make(chan error, 1)
		go func() { watched <- b.WatchRevocations(watchCtx) }()
		t.Cleanup(func() { stop(); testsupport.Receive(t, watched, 10*time.Second, "the revocation watcher to stop") })

		a.verifiedUser(t, a.accts, "replicas@example.com")
		tok := a.login(t, "replicas@example.com")
		if _, err := b.VerifyAccessToken(ctx, tok.AccessToken); err != nil {
			t.Fatalf("the other replica refused a live token: %v", err)
		}
		p := a.identity(t, tok.AccessToken)
		// (A logout before the watcher listens is not missed: the watcher
		// forgets everything once it listens, or reads the epoch first.)
		if err := a.sess.Logout(ctx, p); err != nil {
			t.Fatal(err)
		}
		if _, err := a.sess.VerifyAccessToken(ctx, tok.AccessToken); !apperr.Is(err, apperr.TokenInvalid) {
			t.Fatalf("the replica that logged out still accepts the token: %v", err)
		}
		testsupport.Eventually(t, 10*time.Second, func() bool {
			_, err := b.VerifyAccessToken(ctx, tok.AccessToken)
			return apperr.Is(err, apperr.TokenInvalid)
		}, "the other replica to refuse a logged-out token")
	})
}

// readCounter is the real store, counting the per-request session reads.
type readCounter struct {
	*sqlstore.DB
	reads atomic.Int64
}

func (c *readCounter) SessionByID(ctx context.Context, id string) (sessions.Session, error) {
	c.reads.Add(1)
	return c.DB.SessionByID(ctx, id)
}

// An access token is refused once its session has expired, though the
// token itself has not: TOKEN_EXPIRED with the session's end, whether the
// session is read from the database or answered from the cache of live
// sessions (which must not keep it alive).
func TestExpiredSessionRefusesItsTokens(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		f := newFixture(t, url)
		// Sessions shorter than the cache's answers (5 min) and than the
		// access tokens (an hour).
		const sessionTTL = 3 * time.Minute
		store := &readCounter{DB: f.db}
		svc, err := sessions.NewService(ctx, store, f.accts, sessions.Config{AccessTTL: accessTTL, RefreshTTL: sessionTTL, Issuer: "herald", Now: f.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		watchCtx, stop := context.WithCancel(ctx)
		watched := make(chan error, 1)
		go func() { watched <- svc.WatchRevocations(watchCtx) }()
		t.Cleanup(func() { stop(); testsupport.Receive(t, watched, 10*time.Second, "the revocation watcher to stop") })
		f.verifiedUser(t, f.accts, "short@example.com")
		login := func() (string, time.Time) {
			t.Helper()
			tok, err := svc.Login(ctx, "short@example.com", pw, sessions.Client{})
			if err != nil {
				t.Fatal(err)
			}
			return tok.AccessToken, f.clk.Now().Add(sessionTTL)
		}

		cached, cachedEnd := login()
		uncached, uncachedEnd := login()
		// The first token's session is answered from the cache once the
		// watcher listens: a check that reads nothing.
		testsupport.Eventually(t, 10*time.Second, func() bool {
			before := store.reads.Load()
			p, err := svc.VerifyAccessToken(ctx, cached)
			if err != nil {
				t.Fatalf("a live session's token: %v", err)
			}
			if !p.ExpiresAt.Equal(cachedEnd) {
				t.Fatalf("principal expires at %v, want the session's end %v (before the token's)", p.ExpiresAt, cachedEnd)
			}
			return store.reads.Load() == before
		}, "the session to be answered from the cache")

		f.clk.Advance(sessionTTL)
		for _, c := range []struct {
			name, token string
			end         time.Time
		}{{"cached session", cached, cachedEnd}, {"session read from the database", uncached, uncachedEnd}} {
			for range 2 {
				_, err := svc.VerifyAccessToken(ctx, c.token)
				e := wantCode(t, c.name, err, apperr.TokenExpired)
				if e.Details["expiredAt"] != c.end.UTC().Format(time.RFC3339) || e.Details["tokenType"] != "access" {
					t.Fatalf("%s: details %v, want expiredAt %s, tokenType access", c.name, e.Details, c.end.UTC().Format(time.RFC3339))
				}
			}
		}
	})
}
