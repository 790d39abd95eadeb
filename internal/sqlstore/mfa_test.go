package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// The store of second factors, on every database: factors with sealed
// secrets, recovery codes used once, the lockout's count, challenges
// used once, a session's aal kept across a step-up, and deletion.
func TestMFAConformance(t *testing.T) {
	cases := []storeCase{
		{"FactorsLifecycle", testMFAFactors},
		{"RecoveryCodesSingleUse", testMFARecoveryCodes},
		{"FailuresAndChallenges", testMFAFailuresAndChallenges},
		{"SessionStepUpKeepsAAL", testMFASessionStepUp},
		{"AccountDeletionErasesFactors", testMFAErasedWithAccount},
	}
	runConformance(t, cases, mustOpen)
}

func testMFAFactors(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	f := mfa.Factor{ID: "f1", AccountID: "a1", Kind: mfa.KindTOTP, Name: "phone", Secret: []byte("12345678901234567890"), CreatedAt: clk.Now()}
	if err := db.InsertMFAFactor(ctx, f); err != nil {
		t.Fatal(err)
	}
	if active, err := db.HasActiveMFA(ctx, "a1"); err != nil || active {
		t.Fatalf("a pending factor is not active: %v %v", active, err)
	}
	now := clk.Now()
	err := db.InTx(ctx, func(ctx context.Context) error {
		got, err := db.LockMFAFactor(ctx, "a1", "f1")
		if err != nil {
			return err
		}
		if string(got.Secret) != "12345678901234567890" || got.Active() {
			t.Errorf("read back %+v", got)
		}
		got.ConfirmedAt, got.LastStep, got.LastUsedAt = &now, 42, &now
		return db.UpdateMFAFactor(ctx, got)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.InTx(ctx, func(ctx context.Context) error {
		_, err := db.LockMFAFactor(ctx, "other", "f1")
		return err
	}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("another account's factor: %v", err)
	}
	fs, err := db.MFAFactors(ctx, "a1")
	if err != nil || len(fs) != 1 || !fs[0].Active() || fs[0].LastStep != 42 {
		t.Fatalf("factors %+v %v", fs, err)
	}
	if active, err := db.HasActiveMFA(ctx, "a1"); err != nil || !active {
		t.Fatalf("a confirmed factor is active: %v %v", active, err)
	}
	if n, err := db.DeleteMFAFactors(ctx, "a1", nil, true); err != nil || n != 0 {
		t.Fatalf("pending only keeps the active factor: %d %v", n, err)
	}
	if n, err := db.DeleteMFAFactors(ctx, "a1", []string{"f1"}, false); err != nil || n != 1 {
		t.Fatalf("delete: %d %v", n, err)
	}
}

func testMFARecoveryCodes(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	if err := db.ReplaceRecoveryCodes(ctx, "a1", [][]byte{[]byte("h1"), []byte("h2")}); err != nil {
		t.Fatal(err)
	}
	if used, left, err := db.UseRecoveryCode(ctx, "a2", []byte("h1")); err != nil || used || left != 0 {
		t.Fatalf("another account's code: %v %d %v", used, left, err)
	}
	if used, left, err := db.UseRecoveryCode(ctx, "a1", []byte("h1")); err != nil || !used || left != 1 {
		t.Fatalf("first use: %v %d %v", used, left, err)
	}
	if used, left, err := db.UseRecoveryCode(ctx, "a1", []byte("h1")); err != nil || used || left != 1 {
		t.Fatalf("second use must be refused: %v %d %v", used, left, err)
	}
	if err := db.ReplaceRecoveryCodes(ctx, "a1", [][]byte{[]byte("h3")}); err != nil {
		t.Fatal(err)
	}
	if used, _, _ := db.UseRecoveryCode(ctx, "a1", []byte("h2")); used {
		t.Fatal("a replaced code must no longer work")
	}
	if left, err := db.RecoveryCodesLeft(ctx, "a1"); err != nil || left != 1 {
		t.Fatalf("left %d %v", left, err)
	}
}

func testMFAFailuresAndChallenges(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	until := clk.Now().Add(time.Minute)
	err := db.InTx(ctx, func(ctx context.Context) error {
		f, err := db.LockMFAFailures(ctx, "a1")
		if err != nil || f.Count != 0 || !f.LockedUntil.IsZero() {
			t.Errorf("fresh failures %+v %v", f, err)
		}
		return db.SaveMFAFailures(ctx, "a1", mfa.Failures{Count: 2, LockedUntil: until})
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.InTx(ctx, func(ctx context.Context) error {
		f, err := db.LockMFAFailures(ctx, "a1")
		if err != nil || f.Count != 2 || !f.LockedUntil.Equal(until) {
			t.Errorf("failures read back %+v %v", f, err)
		}
		return nil
	})
	c := mfa.Challenge{Hash: []byte("0123456789abcdef0123456789abcdef"), AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(mfa.ChallengeTTL)}
	if err := db.CreateMFAChallenge(ctx, c); err != nil {
		t.Fatal(err)
	}
	err = db.InTx(ctx, func(ctx context.Context) error {
		got, err := db.LockMFAChallenge(ctx, c.Hash)
		if err != nil || got.AccountID != "a1" || got.UsedAt != nil || !got.ExpiresAt.Equal(c.ExpiresAt) {
			t.Errorf("challenge %+v %v", got, err)
		}
		return db.UseMFAChallenge(ctx, c.Hash)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UseMFAChallenge(ctx, c.Hash); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("a challenge is used once: %v", err)
	}
	if err := db.InTx(ctx, func(ctx context.Context) error {
		_, err := db.LockMFAChallenge(ctx, []byte("unknown"))
		return err
	}); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown challenge: %v", err)
	}
}

func testMFASessionStepUp(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	s := sessions.Session{ID: "s1", AccountID: "a1", CreatedAt: clk.Now(), ExpiresAt: clk.Now().Add(time.Hour)}
	if err := db.CreateSession(ctx, s, []byte("r1")); err != nil {
		t.Fatal(err)
	}
	got, err := db.SessionByID(ctx, "s1")
	if err != nil || got.AAL != auth.AAL1 || len(got.AMR) != 1 || got.AMR[0] != auth.AMRPassword {
		t.Fatalf("a new session is aal1 pwd: %+v %v", got, err)
	}
	if err := db.StepUpSession(ctx, "s1", auth.AAL2, []string{auth.AMRPassword, auth.AMROTP}, []byte("r2")); err != nil {
		t.Fatal(err)
	}
	// The refresh token given at the step-up rotates into a session that
	// is still aal2; the one before it was rotated by the step-up.
	res, err := db.RotateRefresh(ctx, []byte("r2"), []byte("r3"), 0, sessions.Client{})
	if err != nil || res.Outcome != sessions.RefreshRotated || res.Session.AAL != auth.AAL2 || len(res.Session.AMR) != 2 {
		t.Fatalf("rotate after step-up: %+v %v", res, err)
	}
	clk.Advance(time.Second)
	if res, err := db.RotateRefresh(ctx, []byte("r1"), []byte("r4"), 0, sessions.Client{}); err != nil || res.Outcome != sessions.RefreshReused {
		t.Fatalf("the token before the step-up counts as rotated: %+v %v", res, err)
	}
	if err := db.StepUpSession(ctx, "s1", auth.AAL2, nil, []byte("r5")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a revoked session cannot step up: %v", err)
	}
}

func testMFAErasedWithAccount(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	now := clk.Now()
	if err := db.InsertMFAFactor(ctx, mfa.Factor{ID: "f1", AccountID: "a1", Kind: mfa.KindTOTP, Secret: []byte("s"), CreatedAt: now, ConfirmedAt: &now}); err != nil {
		t.Fatal(err)
	}
	if err := db.ReplaceRecoveryCodes(ctx, "a1", [][]byte{[]byte("h1")}); err != nil {
		t.Fatal(err)
	}
	if err := accounts.DeleteAccount(ctx, db, "a1", nil); err != nil {
		t.Fatal(err)
	}
	fs, err := db.MFAFactors(ctx, "a1")
	left, err2 := db.RecoveryCodesLeft(ctx, "a1")
	if err != nil || err2 != nil || len(fs) != 0 || left != 0 {
		t.Fatalf("after deletion: %d factors, %d codes (%v %v)", len(fs), left, err, err2)
	}
}
