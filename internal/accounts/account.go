// Package accounts owns Herald's account lifecycle: signup, the trial
// subscription, referrals, one-time codes sent by email (verification and
// password reset) and the rules about who may do what with them.
package accounts

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/riverqueue/river"
)

// Account is a user of the VPN product.
type Account struct {
	ID              string
	Email           string
	PasswordHash    string
	EmailVerifiedAt *time.Time
	ReferralCode    string
	Scope           string // space-separated scopes, "admin" for operators
	CreatedAt       time.Time
	Subscription    Subscription
}

// Verified reports whether the account's email has been confirmed.
func (a Account) Verified() bool { return a.EmailVerifiedAt != nil }

// Scopes returns the account's scopes.
func (a Account) Scopes() []string { return strings.Fields(a.Scope) }

// HasScope reports whether the account holds scope s.
func (a Account) HasScope(s string) bool { return slices.Contains(a.Scopes(), s) }

// Subscription is an account's plan.
type Subscription struct {
	Plan      string
	ExpiresAt time.Time
}

// Status is "active" until ExpiresAt, "expired" from then on.
func (s Subscription) Status(now time.Time) string {
	if now.Before(s.ExpiresAt) {
		return "active"
	}
	return "expired"
}

// Plans.
const PlanTrial = "trial"

// ScopeAdmin is the scope of operators.
const ScopeAdmin = "admin"

// Purpose is what a one-time code is for.
type Purpose string

const (
	PurposeVerify Purpose = "verify"
	PurposeReset  Purpose = "reset"
)

// NewAccount is what the store needs to create an account.
type NewAccount struct {
	ID            string
	Email         string
	PasswordHash  string
	ReferralCode  string
	Trial         time.Duration
	Referral      string // the referrer's code, "" when none
	ReferralBonus time.Duration
	Verified      bool   // operators' accounts are created verified
	Scope         string // space-separated scopes
	// Job is inserted in the same transaction (the verification email).
	Job river.JobArgs
}

// SendStats describes the code emails of one account and purpose.
type SendStats struct {
	RequestedInWindow int       // user-requested sends since the window start
	OldestInWindow    time.Time // the oldest of those
	LastRequested     time.Time // the latest user-requested send (zero if none)
	LastSent          time.Time // the latest send of any kind (zero if none)
}

// CodeSent records a code email that went out.
type CodeSent struct {
	AccountID string
	Purpose   Purpose
	Hash      []byte
	ExpiresAt time.Time
	Attempts  int
	Requested bool // asked for by the user (counts against the resend limits)
}

// CodeEffect is what a right code does, inside the transaction that
// consumes it.
type CodeEffect struct {
	MarkVerified    bool
	NewPasswordHash string // set the password
	RevokeSessions  bool
}

// CodeAttempt is the outcome of checking a code.
type CodeAttempt struct {
	Found        bool // a code of that purpose exists
	Expired      bool
	Matched      bool
	AttemptsLeft int // after this attempt
}

// Store is the persistence the accounts service needs. sqlstore implements
// it on SQLite and PostgreSQL; errors are the storage package's.
type Store interface {
	// CreateAccount creates the account, its trial subscription, the
	// referral bonus when Referral names an account, and inserts Job, all
	// in one transaction. It reports whether the referral was applied.
	CreateAccount(ctx context.Context, a NewAccount) (Account, bool, error)
	AccountByEmail(ctx context.Context, email string) (Account, error)
	AccountByID(ctx context.Context, id string) (Account, error)

	// AcquireSendLease takes the per-account, per-purpose lease that lets
	// one code email be in flight at a time; false when another holds it.
	AcquireSendLease(ctx context.Context, accountID string, p Purpose, until time.Time) (bool, error)
	ReleaseSendLease(ctx context.Context, accountID string, p Purpose) error
	SendStats(ctx context.Context, accountID string, p Purpose, windowStart time.Time) (SendStats, error)
	// StagePendingCode keeps the code of an email being sent; it already
	// verifies, so a user quick off the mark is not refused. DropPendingCode
	// forgets it when the send failed.
	StagePendingCode(ctx context.Context, accountID string, p Purpose, hash []byte, expiresAt time.Time) error
	DropPendingCode(ctx context.Context, accountID string, p Purpose) error
	// RecordCodeSent replaces the live code (and any pending one), records
	// the send and releases the lease, in one transaction.
	RecordCodeSent(ctx context.Context, c CodeSent) error
	// AttemptCode checks the live code with matches under a row lock,
	// spends one attempt on a miss, and on a match deletes the code and
	// applies effect, all in one transaction.
	AttemptCode(ctx context.Context, accountID string, p Purpose, matches func(hash []byte) bool, effect CodeEffect) (CodeAttempt, error)

	UpdatePasswordHash(ctx context.Context, accountID, hash string) error
	// SetScope replaces the account's scopes; revoke also revokes every
	// session so a removed scope cannot outlive its tokens.
	SetScope(ctx context.Context, accountID, scope string, revokeSessions bool) error
	EnqueueJob(ctx context.Context, args river.JobArgs) error

	// Secret returns the named server secret, storing generate()'s value
	// the first time (the first writer wins across replicas).
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}
