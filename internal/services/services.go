// Package services is the one bag of domain services that both API doors
// open onto: the app builds it once (cmd/herald's openApp), the REST
// handlers (rest.Handlers) and the GraphQL resolver (graph.Resolver) embed
// it. Adding a service is a field here and the line that builds it.
//
// Only the doors and the app import this package; the domain packages it
// names never do.
package services

import (
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/captcha"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/identities"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/mfa"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/overview"
	"github.com/herald-vpn/herald/internal/passkeys"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Services are the domain services a request reaches.
type Services struct {
	Accounts  *accounts.Service
	APIKeys   *apikeys.Service
	Sessions  *sessions.Service
	Messenger *messenger.Service
	// MessengerBroadcasts are the bot's broadcast jobs.
	MessengerBroadcasts *messenger.Broadcaster
	Devices             *devices.Service
	Notifications       *notifications.Service
	Idempotency         *idempotency.Service
	Plans               *subscriptions.Service
	Billing             *billing.Service
	Webhooks            *webhooks.Service
	// Overview is the operator console's service at a glance; only a
	// server builds it (it reports the server's rate limiter).
	Overview *overview.Service
	// Bans are the operators' bans of client addresses.
	Bans *limits.Bans
	// Authenticator checks a credential: the server's admission once per
	// request, live streams again at each heartbeat.
	Authenticator *auth.Authenticator

	// MFA is second factors: enrollment, login challenges, step-up.
	MFA *mfa.Service
	// Passkeys are WebAuthn credentials: registration, passwordless
	// sign-in and the second step of a login.
	Passkeys *passkeys.Service
	// Identities signs in with Apple and Google and keeps the identities
	// accounts hold.
	Identities *identities.Service
	// SecurityLog is every account's log of security events.
	SecurityLog *securitylog.Log
	// Preferences are how each user wants to be reached: notification
	// categories and channels on or off.
	Preferences *preferences.Service
	// Inbox is every user's in-app inbox: its items, counts, marks and
	// live events.
	Inbox *inbox.Service
	// Captcha verifies the X-Captcha-Token of the requests that need one
	// (Require(ctx, captcha.ActionGuest) for a door's own guard); nil
	// when no provider is configured, and a nil guard demands nothing.
	Captcha *captcha.Guard
	// VAPIDPublicKey is the Web Push application server key (base64url
	// of the uncompressed P-256 point) that browsers subscribe with; ""
	// when Web Push is not configured.
	VAPIDPublicKey string
}
