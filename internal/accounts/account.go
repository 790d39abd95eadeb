// Package accounts owns Herald's account lifecycle: signup, the trial
// subscription, referrals, one-time codes sent by email (verification and
// password reset) and the rules about who may do what with them.
package accounts

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/riverqueue/river"
)

// Account is a user of the VPN product.
type Account struct {
	ID    string
	Email string
	// PasswordHash is read only where a password is checked: set by
	// AccountByEmail, empty from every other read (AccountPasswordHash
	// reads it by id).
	PasswordHash    string
	EmailVerifiedAt *time.Time
	ReferralCode    string
	Scope           string // space-separated scopes, "admin" for operators
	Locale          string // BCP 47 tag the emails are written for; "" for the default
	CreatedAt       time.Time
	Subscription    subscriptions.Subscription
	// DisabledAt is set while an operator has disabled the account: it
	// cannot log in and its devices get no pushes.
	DisabledAt     *time.Time
	DisabledReason string
	LastLoginAt    *time.Time
	// PasswordChangeRequired: a login found the password in a breach
	// corpus; a new password (change or reset) clears it.
	PasswordChangeRequired bool
	// Guest: an account made for an app install, without an email of its
	// own (a placeholder) or a password, until it upgrades.
	Guest bool
}

// Disabled reports whether an operator has disabled the account.
func (a Account) Disabled() bool { return a.DisabledAt != nil }

// Address is the account's email address, "" when it has none: a
// guest's placeholder, kept by a guest upgraded with a passkey until it
// adds an address, is no address anyone can read, so nothing shows it.
func (a Account) Address() string { return address(a.Email) }

// Verified reports whether the account's email has been confirmed.
func (a Account) Verified() bool { return a.EmailVerifiedAt != nil }

// Scopes returns the account's scopes.
func (a Account) Scopes() []string { return strings.Fields(a.Scope) }

// HasScope reports whether the account holds scope s.
func (a Account) HasScope(s string) bool { return slices.Contains(a.Scopes(), s) }

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
	Locale        string // canonical BCP 47 tag, or ""
	// GuestInstallID makes a guest account of that app install.
	GuestInstallID string
	// Job is inserted in the same transaction (the verification email).
	Job river.JobArgs
	// DeviceLimit ranks plans when the referrer holds several
	// entitlements (subscriptions.Service.DeviceLimit); nil ranks them
	// alike.
	DeviceLimit func(plan string) int
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
	// StartedAt is when the send began (the code was made): a job queued
	// after it asks for a code this send does not answer (zero: the
	// store's now).
	StartedAt time.Time
}

// ExpiredCodeRetention is how long an expired code is kept, and
// SendHistory how long a code email's send is remembered (longer than
// any limit of sends looks back).
const (
	ExpiredCodeRetention = 24 * time.Hour
	SendHistory          = 24 * time.Hour
)

// CodeEffect is what a right code does, inside the transaction that
// consumes it.
type CodeEffect struct {
	MarkVerified    bool
	NewPasswordHash string // set the password
	RevokeSessions  bool
	// An email change's: the address that becomes the account's (verified),
	// the one it replaces (told so), and the session that stays signed in
	// while every other one ends.
	NewEmail, OldEmail string
	KeepSession        string
	// Record writes the change's security log entry, inside the
	// transaction (nil: none).
	Record func(ctx context.Context) error
}

// Store is the persistence the accounts service needs. sqlstore implements
// it on SQLite and PostgreSQL; errors are the storage package's.
type Store interface {
	// GuestByInstall is the live guest of an app install:
	// storage.ErrNotFound for none.
	GuestByInstall(ctx context.Context, installID string) (Account, error)
	// UpgradeGuest makes a guest an account of email and password hash
	// (email "": the guest keeps its placeholder and only stops being
	// one): false when it is no guest; storage.ErrConflict when the email
	// is taken.
	UpgradeGuest(ctx context.Context, accountID, email, hash string, verified bool) (bool, error)
	// StaleGuests are guests made before `before` and unused since.
	StaleGuests(ctx context.Context, before time.Time, limit int) ([]string, error)
	// The unit of work signup runs in (Create): the methods below that
	// say so must be called inside InTx.
	storage.Transactor
	// Ledger is the entitlements (subscriptions.Ledger, inside InTx):
	// signup grants the trial, a referral the referrer's bonus. It holds
	// Emit, EnqueueJob and LockSubscription.
	subscriptions.Ledger
	// AccountIDByReferralCode is the id of the account, deleted or not,
	// whose referral code is code. ErrNotFound when none.
	AccountIDByReferralCode(ctx context.Context, code string) (string, error)
	// InsertAccount writes the new account with subscription sub, created
	// (and verified when n.Verified) at the transaction's time.
	// ErrConflict when its email or referral code is taken.
	InsertAccount(ctx context.Context, n NewAccount, sub subscriptions.Subscription) error
	// InsertReferralReward records that referred's signup gave referrer
	// bonus.
	InsertReferralReward(ctx context.Context, referredID, referrerID string, bonus time.Duration) error
	// AccountByEmail returns the account with its PasswordHash, for a
	// login; AccountByID without it, and AccountPasswordHash the hash
	// alone. ErrNotFound for an unknown (or deleted) account.
	AccountByEmail(ctx context.Context, email string) (Account, error)
	AccountByID(ctx context.Context, id string) (Account, error)
	AccountPasswordHash(ctx context.Context, id string) (string, error)
	// SessionSignedInAt is when the session was signed in (its creation;
	// a refresh keeps it). ErrNotFound when it is gone.
	SessionSignedInAt(ctx context.Context, sessionID string) (time.Time, error)
	// AccountProfile is AccountByID reduced to what an account's owner
	// sees (ID, Email, EmailVerifiedAt, ReferralCode, CreatedAt,
	// Subscription and Locale); every other field is zero.
	AccountProfile(ctx context.Context, id string) (Account, error)
	// SetLocale sets the account's locale (a canonical tag).
	// ErrNotFound when unknown or deleted.
	SetLocale(ctx context.Context, accountID, locale string) error

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
	// LockAccount holds the account's row until the transaction ends, so
	// that the code operations of one account serialize (inside InTx).
	LockAccount(ctx context.Context, accountID string) error
	// StoredCodes are the account's live and pending codes of purpose p
	// (nil: none).
	StoredCodes(ctx context.Context, accountID string, p Purpose) (live, pending *StoredCode, err error)
	// SetCodeAttempts sets the attempts left of the live code.
	SetCodeAttempts(ctx context.Context, accountID string, p Purpose, left int) error
	// DeleteCodes deletes the live and pending codes of purpose p.
	DeleteCodes(ctx context.Context, accountID string, p Purpose) error
	// MarkVerified marks the account's email verified now; false when it
	// was already.
	MarkVerified(ctx context.Context, accountID string) (bool, error)
	// RevokeAllSessions ends every session of the account.
	RevokeAllSessions(ctx context.Context, accountID string) error

	// UpdatePasswordHash sets a new password's hash and clears the mark
	// of SetPasswordChangeRequired.
	UpdatePasswordHash(ctx context.Context, accountID, hash string) error
	// RehashPassword stores the same password hashed anew (a login under
	// stronger hashing parameters): the mark stays, the password did not
	// change.
	RehashPassword(ctx context.Context, accountID, hash string) error
	// SetPasswordChangeRequired marks the account to change its password
	// (UpdatePasswordHash clears the mark).
	SetPasswordChangeRequired(ctx context.Context, accountID string) error
	// SetPendingEmail sets the address an email change waits to confirm
	// ("" clears it); PendingEmail reads it ("" when none). ErrNotFound
	// for an unknown or deleted account.
	SetPendingEmail(ctx context.Context, accountID, email string) error
	PendingEmail(ctx context.Context, accountID string) (string, error)
	// ChangeEmail makes email the account's address, verified now, and
	// clears the pending one. ErrConflict when another account has it.
	ChangeEmail(ctx context.Context, accountID, email string) error
	// RevokeOtherSessions ends every live session of the account but
	// keep ("" ends all) and reports how many it ended.
	RevokeOtherSessions(ctx context.Context, accountID, keep string) (int, error)
	// SetScope replaces the account's scopes; revoke also revokes every
	// session so a removed scope cannot outlive its tokens. allow, when
	// not nil, is called with the account's Standing before the change,
	// and its error aborts it (see SetDisabled).
	SetScope(ctx context.Context, accountID, scope string, revokeSessions bool, allow func(Standing) error) error

	// SearchAccounts returns up to limit records matching f, newest first,
	// older than the account afterID ("" for the newest). Deleted
	// accounts are never found, here or by any other lookup.
	SearchAccounts(ctx context.Context, f Filter, afterID string, limit int) ([]Record, error)
	// AccountRecord is one account with its counts; ErrNotFound when
	// unknown or deleted.
	AccountRecord(ctx context.Context, id string) (Record, error)
	// SetDisabled disables (with reason) or enables the account in one
	// transaction; disabling also revokes every session. It reports
	// whether anything changed (disabling a disabled account does not).
	// ErrNotFound when unknown or deleted. allow, when not nil, is called
	// in the transaction with the account's Standing, read under a lock
	// that every change taking an account out of the enabled admins
	// (SetDisabled, LockAccountForDeletion, SetScope with allow) holds until it
	// commits; its error aborts the change.
	SetDisabled(ctx context.Context, id string, disabled bool, reason string, allow func(Standing) error) (bool, error)
	// LockAccountForDeletion holds the live account's row until the
	// transaction ends (inside InTx). ErrNotFound when unknown or deleted
	// already. allow: as for SetDisabled.
	LockAccountForDeletion(ctx context.Context, id string, allow func(Standing) error) error
	// EraseAccount takes one step of deleting the account (inside InTx):
	// it deletes, unlinks or blanks the rows that step names.
	EraseAccount(ctx context.Context, id string, step Erasure) error

	// Secret returns the named server secret, storing generate()'s value
	// the first time (the first writer wins across replicas).
	Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error)
}
