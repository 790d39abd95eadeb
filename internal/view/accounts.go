package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// User is an account as its owner sees it (REST /users/me, GraphQL me).
type User struct {
	ID string `json:"id"`
	// Email is nil while the account has no address of its own: a guest,
	// or a guest upgraded with a passkey until it adds one (its stored
	// placeholder is never shown).
	Email         *string          `json:"email"`
	EmailVerified bool             `json:"emailVerified"`
	CreatedAt     time.Time        `json:"createdAt"`
	ReferralCode  string           `json:"referralCode"`
	Subscription  UserSubscription `json:"subscription"`
	// Locale is the language of the account's emails (a BCP 47 tag); nil
	// when none was given (English).
	Locale *string `json:"locale"`
	// PasswordChangeRequired: a login found the password in a breach
	// corpus; apps should ask for a new one (a change or reset clears it).
	PasswordChangeRequired bool `json:"passwordChangeRequired"`
	// Guest: an account made for an app install (POST /api/v1/auth/guest)
	// with no email and no password, until it upgrades.
	Guest bool `json:"guest"`
}

// UserSubscription is the account's plan (OpenAPI Subscription): what
// its entitlements add up to.
type UserSubscription struct {
	Plan string `json:"plan"`
	// Status is active until ExpiresAt, expired from then on.
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Source is where the plan comes from (app_store, google_play, stripe,
	// admin, trial, referral); "" when the account has no entitlement.
	Source string `json:"source"`
	// AutoRenew: the plan renews by itself at ExpiresAt.
	AutoRenew bool `json:"autoRenew"`
	// GraceEndsAt is set while a store retries a failed payment and the
	// account keeps access: then access ends unless the payment recovers.
	GraceEndsAt *time.Time `json:"graceEndsAt"`
}

// NewUserSubscription renders an account's subscription as of now.
func NewUserSubscription(sub subscriptions.Subscription, now time.Time) UserSubscription {
	return UserSubscription{
		Plan:        sub.Plan,
		Status:      sub.Status(now),
		ExpiresAt:   seconds(sub.ExpiresAt),
		Source:      string(sub.Source),
		AutoRenew:   sub.AutoRenew && sub.Active(now),
		GraceEndsAt: optionalSeconds(sub.GraceEndsAt),
	}
}

// NewUser renders an account; the subscription's status is as of now.
func NewUser(a accounts.Account, now time.Time) User {
	return User{
		ID:            a.ID,
		Email:         nonEmpty(a.Address()),
		EmailVerified: a.Verified(),
		CreatedAt:     seconds(a.CreatedAt),
		ReferralCode:  a.ReferralCode,
		Subscription:  NewUserSubscription(a.Subscription, now),
		Locale:        nonEmpty(a.Locale),

		PasswordChangeRequired: a.PasswordChangeRequired,
		Guest:                  a.Guest,
	}
}

// UserRecord is an account as the admin API shows it: the user and more.
// GraphQL adds sessions and messengerChat, read for a whole page at once.
type UserRecord struct {
	User
	// EmailVerifiedAt is when the account confirmed its email; nil until then.
	EmailVerifiedAt *time.Time `json:"emailVerifiedAt"`
	Disabled        bool       `json:"disabled"`
	DisabledAt      *time.Time `json:"disabledAt"`
	DisabledReason  *string    `json:"disabledReason"`
	LastLoginAt     *time.Time `json:"lastLoginAt"`
	DeviceCount     int        `json:"deviceCount"`
	SessionCount    int        `json:"sessionCount"`
}

// NewUserRecord renders an account for the admin API.
func NewUserRecord(r accounts.Record, now time.Time) UserRecord {
	return UserRecord{
		User:            NewUser(r.Account, now),
		EmailVerifiedAt: optionalSeconds(r.EmailVerifiedAt),
		Disabled:        r.Disabled(),
		DisabledAt:      optionalSeconds(r.DisabledAt),
		DisabledReason:  nonEmpty(r.DisabledReason),
		LastLoginAt:     optionalSeconds(r.LastLoginAt),
		DeviceCount:     r.DeviceCount,
		SessionCount:    r.SessionCount,
	}
}

// UserDetail is one account as GET /api/v1/admin/users/{id} shows it: the
// record, its live sessions and its linked Telegram chat (GraphQL reads
// the last two as fields of UserRecord).
type UserDetail struct {
	UserRecord
	// Sessions are live, newest first; current is always false.
	Sessions []Session `json:"sessions"`
	// MessengerChat is the linked chat, whatever its status; nil when none.
	MessengerChat *MessengerSubscriber `json:"messengerChat"`
}

// Session is one login of an account, as the server saw its client.
type Session struct {
	ID         string    `json:"id"`
	CreatedAt  time.Time `json:"createdAt"`
	LastUsedAt time.Time `json:"lastUsedAt"`
	UserAgent  string    `json:"userAgent"`
	IP         string    `json:"ip"`
	// Current: this is the session of the request's own token.
	Current bool `json:"current"`
}

// NewSession renders s; current is the caller's session ID ("" when the
// caller has none, as for an admin looking at another account).
func NewSession(s sessions.Session, current string) Session {
	return Session{
		ID:         s.ID,
		CreatedAt:  seconds(s.CreatedAt),
		LastUsedAt: seconds(s.LastUsedAt),
		UserAgent:  s.UserAgent,
		IP:         s.IP,
		Current:    s.ID == current,
	}
}

// Tokens are what a login or a refresh answers (GraphQL AuthPayload, whose
// accessToken REST calls token).
type Tokens struct {
	ExpiresIn    int    `json:"expiresIn"`
	RefreshToken string `json:"refreshToken"`
	AccessToken  string `json:"token"`
	TokenType    string `json:"tokenType"`
}

// NewTokens renders a session's tokens.
func NewTokens(t sessions.Tokens) Tokens {
	return Tokens{AccessToken: t.AccessToken, RefreshToken: t.RefreshToken, TokenType: t.TokenType, ExpiresIn: t.ExpiresIn}
}

// Registration is what a REST signup answers.
type Registration struct {
	Message         string `json:"message"`
	ReferralApplied bool   `json:"referralApplied"`
	User            User   `json:"user"`
}

// Verified answers an email verification.
type Verified struct {
	Message  string `json:"message"`
	Verified bool   `json:"verified"`
}

// CodeSent answers a request for a new verification code.
type CodeSent struct {
	Message string `json:"message"`
	Sent    bool   `json:"sent"`
}

// ResetRequested answers a request for a password reset code.
type ResetRequested struct {
	Message string `json:"message"`
}

// PasswordReset answers a password reset.
type PasswordReset struct {
	Message       string `json:"message"`
	PasswordReset bool   `json:"passwordReset"`
}

// LoggedOut answers a logout.
type LoggedOut struct {
	LoggedOut bool `json:"loggedOut"`
}

// UserDeleted answers the deletion of an account.
type UserDeleted struct {
	Deleted bool   `json:"deleted"`
	UserID  string `json:"userId"`
}

// SessionsRevoked answers the revocation of an account's sessions: how
// many were live.
type SessionsRevoked struct {
	Revoked int    `json:"revoked"`
	UserID  string `json:"userId"`
}

// SessionRevoked answers the end of one of the caller's sessions.
type SessionRevoked struct {
	Revoked   bool   `json:"revoked"`
	SessionID string `json:"sessionId"`
}

// EmailChangeRequest answers a request to change the account's email:
// the address the code went to.
type EmailChangeRequest struct {
	PendingEmail string `json:"pendingEmail"`
	Message      string `json:"message"`
}

// NewEmailChangeRequest is the answer for a code sent to pending.
func NewEmailChangeRequest(pending string) EmailChangeRequest {
	return EmailChangeRequest{PendingEmail: pending, Message: "We sent a code to " + pending + ". The change happens when it is typed in."}
}

// EmailChangeCancel answers the old address's cancel link: whether a
// pending change was dropped (false: none was left to cancel).
type EmailChangeCancel struct {
	Cancelled bool `json:"cancelled"`
}

// SessionEnd answers a new-device alert's end-session link: whether the
// session ended now (false: it had ended already).
type SessionEnd struct {
	Ended bool `json:"ended"`
}

// PasswordChange answers a password change: how many other sessions
// ended.
type PasswordChange struct {
	SessionsEnded int `json:"sessionsEnded"`
}
