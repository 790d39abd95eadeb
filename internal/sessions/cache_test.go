package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/sessions"
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
		db2, _ := sqlstoretest.Open(t, url, jobs.Config{})
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
		if err := a.sess.Logout(ctx, p.SessionID); err != nil {
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
