// Package apperr is Herald's error catalogue: every application error code,
// its HTTP status and whether a client may retry it. Both transports (GraphQL
// and REST) render errors from here and nowhere else.
package apperr

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"
)

// Code is a stable application error code. Clients branch on it; messages
// may change between versions, codes do not.
type Code string

// Codes of the spec's section 7, both tables, plus the codes Herald adds.
const (
	// Authentication and authorization.
	AuthRequired            Code = "AUTH_REQUIRED"
	TokenExpired            Code = "TOKEN_EXPIRED"
	TokenInvalid            Code = "TOKEN_INVALID"
	InsufficientPermissions Code = "INSUFFICIENT_PERMISSIONS"
	InvalidCredentials      Code = "INVALID_CREDENTIALS"
	EmailNotVerified        Code = "EMAIL_NOT_VERIFIED"
	AccountDisabled         Code = "ACCOUNT_DISABLED"
	SessionNotFound         Code = "SESSION_NOT_FOUND"

	// Input.
	ValidationError  Code = "VALIDATION_ERROR"
	InvalidInput     Code = "INVALID_INPUT"
	InvalidEmail     Code = "INVALID_EMAIL"
	WeakPassword     Code = "WEAK_PASSWORD"
	PayloadTooLarge  Code = "PAYLOAD_TOO_LARGE"
	GraphQLParse     Code = "GRAPHQL_PARSE_FAILED"
	GraphQLInvalid   Code = "GRAPHQL_VALIDATION_FAILED"
	QueryTooComplex  Code = "QUERY_TOO_COMPLEX"
	NotFound         Code = "NOT_FOUND"
	MethodNotAllowed Code = "METHOD_NOT_ALLOWED"
	NotAcceptable    Code = "NOT_ACCEPTABLE"

	// Accounts and verification.
	EmailExists             Code = "EMAIL_EXISTS"
	EmailAlreadyExists      Code = "EMAIL_ALREADY_EXISTS"
	EmailNotFound           Code = "EMAIL_NOT_FOUND"
	AlreadyVerified         Code = "ALREADY_VERIFIED"
	InvalidVerificationCode Code = "INVALID_VERIFICATION_CODE"
	VerificationCodeExpired Code = "VERIFICATION_CODE_EXPIRED"
	EmailDeliveryFailed     Code = "EMAIL_DELIVERY_FAILED"
	InvalidReferral         Code = "INVALID_REFERRAL"
	UserNotFound            Code = "USER_NOT_FOUND"
	LastAdmin               Code = "LAST_ADMIN"

	// Devices, subscriptions and notifications.
	DeviceNotFound        Code = "DEVICE_NOT_FOUND"
	InvalidPushToken      Code = "INVALID_PUSH_TOKEN"
	DeviceLimitReached    Code = "DEVICE_LIMIT_REACHED"
	SubscriptionNotFound  Code = "SUBSCRIPTION_NOT_FOUND"
	SubscriptionExpired   Code = "SUBSCRIPTION_EXPIRED"
	JobNotFound           Code = "JOB_NOT_FOUND"
	InboxItemNotFound     Code = "INBOX_ITEM_NOT_FOUND"
	ServerNotFound        Code = "SERVER_NOT_FOUND"
	QuotaExceeded         Code = "QUOTA_EXCEEDED"
	VPNConnectionFailed   Code = "VPN_CONNECTION_FAILED"
	DNSResolutionFailed   Code = "DNS_RESOLUTION_FAILED"
	PaymentFailed         Code = "PAYMENT_FAILED"
	InsufficientBalance   Code = "INSUFFICIENT_BALANCE"
	MessengerNotConnected Code = "MESSENGER_NOT_CONNECTED"
	ChatNotFound          Code = "CHAT_NOT_FOUND"
	ChatBlocked           Code = "CHAT_BLOCKED"
	InvalidMessage        Code = "INVALID_MESSAGE"
	IdempotencyKeyReused  Code = "IDEMPOTENCY_KEY_REUSED"
	WebhookNotFound       Code = "WEBHOOK_NOT_FOUND"
	WebhookEventNotFound  Code = "WEBHOOK_EVENT_NOT_FOUND"
	// WebhookEventNotSubscribed: a redelivery to an endpoint the event
	// was never sent to.
	WebhookEventNotSubscribed Code = "WEBHOOK_EVENT_NOT_SUBSCRIBED"

	// Limits and the platform.
	RateLimited        Code = "RATE_LIMITED"
	Banned             Code = "BANNED"
	BanNotFound        Code = "BAN_NOT_FOUND"
	TooManyStreams     Code = "TOO_MANY_STREAMS"
	Internal           Code = "INTERNAL_ERROR"
	ServiceUnavailable Code = "SERVICE_UNAVAILABLE"
	UpstreamError      Code = "UPSTREAM_ERROR"

	// Store purchases (issue 24).
	BillingNotConfigured    Code = "BILLING_NOT_CONFIGURED"
	BillingSignatureInvalid Code = "BILLING_SIGNATURE_INVALID"
	BillingWrongApp         Code = "BILLING_WRONG_APP"
	PurchaseNotFound        Code = "PURCHASE_NOT_FOUND"
	PurchaseOwnedElsewhere  Code = "PURCHASE_OWNED_ELSEWHERE"
	ProductUnknown          Code = "PRODUCT_UNKNOWN"

	// Second factors (issue 25).
	MFARequired         Code = "MFA_REQUIRED"
	MFAChallengeInvalid Code = "MFA_CHALLENGE_INVALID"
	MFACodeInvalid      Code = "MFA_CODE_INVALID"
	MFACodeReused       Code = "MFA_CODE_REUSED"
	MFALocked           Code = "MFA_LOCKED"
	MFAStepUpRequired   Code = "MFA_STEP_UP_REQUIRED"
	AdminMFARequired    Code = "ADMIN_MFA_REQUIRED"
	MFAFactorNotFound   Code = "MFA_FACTOR_NOT_FOUND"
	MFAAlreadyEnrolled  Code = "MFA_ALREADY_ENROLLED"
	MFANotEnabled       Code = "MFA_NOT_ENABLED"

	// Passkeys (WebAuthn).
	PasskeysNotConfigured     Code = "PASSKEYS_NOT_CONFIGURED"
	PasskeyChallengeInvalid   Code = "PASSKEY_CHALLENGE_INVALID"
	PasskeyRegistrationFailed Code = "PASSKEY_REGISTRATION_FAILED"
	PasskeyAssertionFailed    Code = "PASSKEY_ASSERTION_FAILED"
	PasskeyCounterRegression  Code = "PASSKEY_COUNTER_REGRESSION"
	PasskeyNotFound           Code = "PASSKEY_NOT_FOUND"
	PasskeyAlreadyRegistered  Code = "PASSKEY_ALREADY_REGISTERED"

	// Sign in with Apple and Google.
	IdentityProviderNotConfigured Code = "IDENTITY_PROVIDER_NOT_CONFIGURED"
	IdentityTokenInvalid          Code = "IDENTITY_TOKEN_INVALID"
	IdentityEmailUnverified       Code = "IDENTITY_EMAIL_UNVERIFIED"
	IdentityInUse                 Code = "IDENTITY_IN_USE"
	IdentityNotFound              Code = "IDENTITY_NOT_FOUND"
	LastSignInMethod              Code = "LAST_SIGN_IN_METHOD"
	// RecentSignInRequired: an account without a password confirms its
	// deletion by a sign-in made moments before.
	RecentSignInRequired Code = "RECENT_SIGN_IN_REQUIRED"

	// Guest accounts.
	GuestNotAllowed Code = "GUEST_NOT_ALLOWED"
	NotAGuest       Code = "NOT_A_GUEST"

	// CAPTCHA (issue 25).
	CaptchaRequired Code = "CAPTCHA_REQUIRED"
	CaptchaFailed   Code = "CAPTCHA_FAILED"

	// Unsubscribe links of notification emails (issue 26).
	UnsubscribeLinkInvalid Code = "UNSUBSCRIBE_LINK_INVALID"
	UnsubscribeLinkUsed    Code = "UNSUBSCRIBE_LINK_USED"
)

// Entry is one row of the catalogue.
type Entry struct {
	Code    Code
	Status  int
	Message string // default human sentence
}

// catalogue maps every code to its HTTP status and default message. The
// statuses the spec leaves open are fixed here (see docs/errors.md).
var catalogue = map[Code]Entry{
	AuthRequired:            {AuthRequired, http.StatusUnauthorized, "Authentication is required."},
	TokenExpired:            {TokenExpired, http.StatusUnauthorized, "The token has expired."},
	TokenInvalid:            {TokenInvalid, http.StatusUnauthorized, "The token is malformed, revoked or signed by an unknown key."},
	InsufficientPermissions: {InsufficientPermissions, http.StatusForbidden, "You do not have permission to do this."},
	InvalidCredentials:      {InvalidCredentials, http.StatusUnauthorized, "The email or password is wrong."},
	EmailNotVerified:        {EmailNotVerified, http.StatusForbidden, "The email address has not been verified yet."},
	AccountDisabled:         {AccountDisabled, http.StatusForbidden, "This account has been disabled; contact support."},
	SessionNotFound:         {SessionNotFound, http.StatusNotFound, "No such session."},

	ValidationError:  {ValidationError, http.StatusBadRequest, "The request is invalid."},
	InvalidInput:     {InvalidInput, http.StatusBadRequest, "The input is invalid."},
	InvalidEmail:     {InvalidEmail, http.StatusUnprocessableEntity, "The email address is not valid."},
	WeakPassword:     {WeakPassword, http.StatusUnprocessableEntity, "The password is too weak."},
	PayloadTooLarge:  {PayloadTooLarge, http.StatusRequestEntityTooLarge, "The request body is too large."},
	GraphQLParse:     {GraphQLParse, http.StatusBadRequest, "The GraphQL document could not be parsed."},
	GraphQLInvalid:   {GraphQLInvalid, http.StatusUnprocessableEntity, "The GraphQL document is not valid against the schema."},
	QueryTooComplex:  {QueryTooComplex, http.StatusBadRequest, "The GraphQL document is too large, too deep or too complex."},
	NotFound:         {NotFound, http.StatusNotFound, "There is nothing at this path."},
	MethodNotAllowed: {MethodNotAllowed, http.StatusMethodNotAllowed, "This method is not allowed on this path."},
	NotAcceptable:    {NotAcceptable, http.StatusNotAcceptable, "None of the media types the request accepts can be answered."},

	EmailExists:             {EmailExists, http.StatusConflict, "An account with this email already exists."},
	EmailAlreadyExists:      {EmailAlreadyExists, http.StatusConflict, "An account with this email already exists."},
	EmailNotFound:           {EmailNotFound, http.StatusBadRequest, "No account has this email address."},
	AlreadyVerified:         {AlreadyVerified, http.StatusBadRequest, "This account is already verified."},
	InvalidVerificationCode: {InvalidVerificationCode, http.StatusBadRequest, "The code is not valid."},
	VerificationCodeExpired: {VerificationCodeExpired, http.StatusBadRequest, "The code has expired; ask for a new one."},
	EmailDeliveryFailed:     {EmailDeliveryFailed, http.StatusBadGateway, "The email could not be sent; try again later."},
	InvalidReferral:         {InvalidReferral, http.StatusOK, "The referral code was not found and was ignored."},
	UserNotFound:            {UserNotFound, http.StatusNotFound, "No such user."},
	LastAdmin:               {LastAdmin, http.StatusConflict, "This is the last enabled admin account; make another admin first."},

	DeviceNotFound:        {DeviceNotFound, http.StatusNotFound, "No such device."},
	InvalidPushToken:      {InvalidPushToken, http.StatusUnprocessableEntity, "The device's push token is invalid or expired."},
	DeviceLimitReached:    {DeviceLimitReached, http.StatusConflict, "The plan's device limit is reached."},
	SubscriptionNotFound:  {SubscriptionNotFound, http.StatusNotFound, "No active subscription."},
	SubscriptionExpired:   {SubscriptionExpired, http.StatusForbidden, "The subscription has expired."},
	JobNotFound:           {JobNotFound, http.StatusNotFound, "No such job."},
	InboxItemNotFound:     {InboxItemNotFound, http.StatusNotFound, "No such inbox item."},
	ServerNotFound:        {ServerNotFound, http.StatusNotFound, "No such server."},
	QuotaExceeded:         {QuotaExceeded, http.StatusTooManyRequests, "The plan's quota is used up."},
	VPNConnectionFailed:   {VPNConnectionFailed, http.StatusInternalServerError, "The tunnel could not be established."},
	DNSResolutionFailed:   {DNSResolutionFailed, http.StatusInternalServerError, "DNS resolution failed."},
	PaymentFailed:         {PaymentFailed, http.StatusBadRequest, "The payment could not be processed."},
	InsufficientBalance:   {InsufficientBalance, http.StatusBadRequest, "The balance is too low."},
	MessengerNotConnected: {MessengerNotConnected, http.StatusServiceUnavailable, "The messenger bot is not connected."},
	ChatNotFound:          {ChatNotFound, http.StatusNotFound, "The chat was not found."},
	ChatBlocked:           {ChatBlocked, http.StatusForbidden, "The user has blocked the bot."},
	InvalidMessage:        {InvalidMessage, http.StatusBadRequest, "The message is empty, too long or cannot be parsed."},
	IdempotencyKeyReused:  {IdempotencyKeyReused, http.StatusConflict, "This Idempotency-Key was used for a different request."},
	WebhookNotFound:       {WebhookNotFound, http.StatusNotFound, "No such webhook endpoint."},
	WebhookEventNotFound:  {WebhookEventNotFound, http.StatusNotFound, "No such webhook event."},
	WebhookEventNotSubscribed: {WebhookEventNotSubscribed, http.StatusConflict,
		"This endpoint did not subscribe to this event when it was written; it cannot be delivered to it."},

	RateLimited:        {RateLimited, http.StatusTooManyRequests, "Too many requests; slow down."},
	Banned:             {Banned, http.StatusForbidden, "This address is banned."},
	BanNotFound:        {BanNotFound, http.StatusNotFound, "This address is not banned."},
	TooManyStreams:     {TooManyStreams, http.StatusTooManyRequests, "Too many event streams are open; close one first."},
	Internal:           {Internal, http.StatusInternalServerError, "An unexpected error occurred."},
	ServiceUnavailable: {ServiceUnavailable, http.StatusServiceUnavailable, "The service is unavailable; try again later."},
	CaptchaRequired:    {CaptchaRequired, http.StatusBadRequest, "This request needs a CAPTCHA token."},
	CaptchaFailed:      {CaptchaFailed, http.StatusForbidden, "The CAPTCHA was not solved."},
	UpstreamError:      {UpstreamError, http.StatusBadGateway, "An upstream service failed; try again later."},

	BillingNotConfigured:    {BillingNotConfigured, http.StatusNotFound, "This store is not connected to this server."},
	BillingSignatureInvalid: {BillingSignatureInvalid, http.StatusUnauthorized, "The store's signature, certificate chain or token does not verify."},
	BillingWrongApp:         {BillingWrongApp, http.StatusForbidden, "This notification or purchase is meant for another app or environment."},
	PurchaseNotFound:        {PurchaseNotFound, http.StatusNotFound, "The store knows no such purchase."},
	PurchaseOwnedElsewhere:  {PurchaseOwnedElsewhere, http.StatusConflict, "This purchase belongs to another account."},
	ProductUnknown:          {ProductUnknown, http.StatusUnprocessableEntity, "This product is not mapped to a plan on this server."},

	MFARequired:         {MFARequired, http.StatusUnauthorized, "The password is right; complete the login with a second factor (details.challengeToken)."},
	MFAChallengeInvalid: {MFAChallengeInvalid, http.StatusUnauthorized, "The login challenge is unknown, used or expired; log in again."},
	MFACodeInvalid:      {MFACodeInvalid, http.StatusBadRequest, "The code is not valid."},
	MFACodeReused:       {MFACodeReused, http.StatusBadRequest, "This code was used already; wait for the next one."},
	MFALocked:           {MFALocked, http.StatusTooManyRequests, "Too many wrong codes; second-factor checks are locked for a while."},
	MFAStepUpRequired:   {MFAStepUpRequired, http.StatusForbidden, "This operation needs a session verified with a second factor (aal2); verify a code first."},
	AdminMFARequired:    {AdminMFARequired, http.StatusForbidden, "Admin operations need a second factor: enroll one and sign in with it."},
	MFAFactorNotFound:   {MFAFactorNotFound, http.StatusNotFound, "No such second factor."},
	MFAAlreadyEnrolled:  {MFAAlreadyEnrolled, http.StatusConflict, "An authenticator app is enrolled already; remove it first."},
	MFANotEnabled:       {MFANotEnabled, http.StatusConflict, "The account has no active second factor."},

	PasskeysNotConfigured:     {PasskeysNotConfigured, http.StatusNotFound, "Passkeys are not set up on this server (HERALD_WEBAUTHN_RP_ID)."},
	PasskeyChallengeInvalid:   {PasskeyChallengeInvalid, http.StatusBadRequest, "The passkey ceremony is unknown, used or expired; begin again."},
	PasskeyRegistrationFailed: {PasskeyRegistrationFailed, http.StatusBadRequest, "The passkey could not be registered: the authenticator's answer did not verify (details.reason)."},
	PasskeyAssertionFailed:    {PasskeyAssertionFailed, http.StatusUnauthorized, "The passkey's answer did not verify (details.reason)."},
	PasskeyCounterRegression:  {PasskeyCounterRegression, http.StatusUnauthorized, "The passkey's signature counter went backwards: the authenticator may have been cloned, so the sign-in is refused."},
	PasskeyNotFound:           {PasskeyNotFound, http.StatusNotFound, "No such passkey."},
	PasskeyAlreadyRegistered:  {PasskeyAlreadyRegistered, http.StatusConflict, "This passkey is registered already."},

	IdentityProviderNotConfigured: {IdentityProviderNotConfigured, http.StatusNotFound, "Sign-in with this provider is not set up on this server (HERALD_APPLE_CLIENT_IDS, HERALD_GOOGLE_CLIENT_IDS)."},
	IdentityTokenInvalid:          {IdentityTokenInvalid, http.StatusUnauthorized, "The provider's id_token did not verify (details.reason: signature, issuer, audience, expired, nonce)."},
	IdentityEmailUnverified:       {IdentityEmailUnverified, http.StatusConflict, "An account with this email exists, but the provider or the account has not verified the address: sign in with the password and link the provider from the account."},
	IdentityInUse:                 {IdentityInUse, http.StatusConflict, "This provider identity belongs to another account."},
	IdentityNotFound:              {IdentityNotFound, http.StatusNotFound, "No such identity on this account."},
	GuestNotAllowed:               {GuestNotAllowed, http.StatusForbidden, "A guest account cannot do this: upgrade it first (an email and password, a passkey, or Apple or Google)."},
	NotAGuest:                     {NotAGuest, http.StatusConflict, "This account is not a guest (it has upgraded already)."},
	LastSignInMethod:              {LastSignInMethod, http.StatusConflict, "This is the account's last way to sign in: add a password, a passkey or another identity first."},
	RecentSignInRequired:          {RecentSignInRequired, http.StatusForbidden, "This account has no password: sign in again (with the provider, a passkey or as the guest) and retry within minutes."},

	UnsubscribeLinkInvalid: {UnsubscribeLinkInvalid, http.StatusBadRequest, "The unsubscribe link is not valid (details.reason: format, signature, expired, category, account); turn the emails off in the app's notification settings."},
	UnsubscribeLinkUsed:    {UnsubscribeLinkUsed, http.StatusBadRequest, "This unsubscribe link was used already; each link works once."},
}

// Lookup returns the catalogue entry of code. An unknown code is a
// programming error and is reported as INTERNAL_ERROR.
func Lookup(code Code) Entry {
	if e, ok := catalogue[code]; ok {
		return e
	}
	return catalogue[Internal]
}

// All returns every entry, for documentation and tests.
func All() []Entry {
	out := make([]Entry, 0, len(catalogue))
	for _, e := range catalogue {
		out = append(out, e)
	}
	return out
}

// Retryable reports whether a client may retry a request that failed with
// this HTTP status (the spec's section 7).
func Retryable(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway, http.StatusServiceUnavailable:
		return true
	}
	return false
}

// Error is an application error: a code, a human message and optional
// details that both transports render (REST `details`, GraphQL `extensions`).
type Error struct {
	Code    Code
	Message string
	Details map[string]any
	// RetryAfter, when positive, becomes the Retry-After header.
	RetryAfterSeconds int
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Status is the HTTP status of the error's code.
func (e *Error) Status() int { return Lookup(e.Code).Status }

// New returns an error with the code's default message.
func New(code Code) *Error { return &Error{Code: code, Message: Lookup(code).Message} }

// Newf returns an error with a message of its own.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// With returns a copy of e with one more detail.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		c.Details[k] = v
	}
	c.Details[key] = value
	return &c
}

// WaitSeconds rounds a wait up to whole seconds, at least 1, as
// Retry-After and retryAfter carry it.
func WaitSeconds(d time.Duration) int {
	return max(int(math.Ceil(d.Seconds())), 1)
}

// WithRetryAfter returns a copy of e that tells the client to wait secs
// seconds: the retryAfter detail and the Retry-After header, kept in step.
func (e *Error) WithRetryAfter(secs int) *Error {
	c := e.With("retryAfter", secs)
	c.RetryAfterSeconds = secs
	return c
}

// Invalid is VALIDATION_ERROR for one field, with the spec's details.
func Invalid(field, constraint, received string) *Error {
	return Newf(ValidationError, "Field %q is invalid: expected %s.", field, constraint).
		With("field", field).With("constraint", constraint).With("received", received)
}

// As extracts the application error from err. Anything that is not one is
// an internal error: its text is never shown to a client.
func As(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	return New(Internal)
}

// Is reports whether err carries the given code.
func Is(err error, code Code) bool {
	var ae *Error
	return errors.As(err, &ae) && ae.Code == code
}
