package accounts

import (
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// The webhook events of accounts: one type per event, its JSON the
// event's data (fields in the order of their JSON names).

// UserCreated is user.created: a signup or an operator's new account.
type UserCreated struct {
	Email *string `json:"email"` // null for a guest: it has no address (the API's email)

	EmailVerified bool      `json:"emailVerified"`
	ExpiresAt     time.Time `json:"expiresAt"`
	Plan          string    `json:"plan"`
	ReferrerID    string    `json:"referrerId,omitempty"` // the account whose code was used; "" when none applied
	UserID        string    `json:"userId"`
}

// UserVerified is user.verified: the account's email was verified.
type UserVerified struct {
	EmailVerified bool   `json:"emailVerified"` // always true
	UserID        string `json:"userId"`
}

// UserPasswordReset is user.password_reset: a reset code set a new
// password.
type UserPasswordReset struct {
	SessionsRevoked bool   `json:"sessionsRevoked"`
	UserID          string `json:"userId"`
}

// UserPasswordChanged is user.password_changed: the signed-in owner
// changed the password; every other session ended.
type UserPasswordChanged struct {
	SessionsEnded int    `json:"sessionsEnded"`
	UserID        string `json:"userId"`
}

// UserEmailChanged is user.email_changed: the new address's code was
// typed; it is the account's email now, verified, and every other
// session ended.
type UserEmailChanged struct {
	Email         string  `json:"email"`
	PreviousEmail *string `json:"previousEmail"` // null when it had none (a guest upgraded with a passkey)
	SessionsEnded int     `json:"sessionsEnded"`
	UserID        string  `json:"userId"`
}

// UserDisabled is user.disabled: an administrator disabled the account.
type UserDisabled struct {
	Reason string `json:"reason"`
	UserID string `json:"userId"`
}

// UserDeleted is user.deleted: the account is gone (a tombstone is left).
type UserDeleted struct {
	UserID string `json:"userId"`
}

func (UserCreated) EventType() string         { return webhooks.UserCreated }
func (UserVerified) EventType() string        { return webhooks.UserVerified }
func (UserPasswordReset) EventType() string   { return webhooks.UserPasswordReset }
func (UserDisabled) EventType() string        { return webhooks.UserDisabled }
func (UserPasswordChanged) EventType() string { return webhooks.UserPasswordChanged }
func (UserEmailChanged) EventType() string    { return webhooks.UserEmailChanged }
func (UserDeleted) EventType() string         { return webhooks.UserDeleted }
