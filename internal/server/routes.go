package server

import (
	"context"
	"encoding/json"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/console"
	"github.com/herald-vpn/herald/internal/gqltransport"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/rest"
	"github.com/herald-vpn/herald/internal/services"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/telegram"
)

// route is one REST route: what it answers, and the rule it is admitted
// under — its rate-limit tier and the scope it needs, declared once.
type route struct {
	method, path string
	rule         auth.Rule
	handler      http.HandlerFunc
}

// storeNotifications are the stores' notification endpoints.
var storeNotifications = []struct {
	path   string
	source subscriptions.Source
}{
	{"/api/v1/billing/apple/notifications", subscriptions.AppStore},
	{"/api/v1/billing/google/rtdn", subscriptions.GooglePlay},
	{"/api/v1/billing/stripe/webhook", subscriptions.Stripe},
}

// addRoutes is the whole HTTP surface in one place.
func addRoutes(mux *http.ServeMux, s services.Services, d Deps) {
	// The front door: where everything else is. Outside the rate limits.
	mux.HandleFunc("GET /{$}", index(d.Version, d.Console))

	// Operations: outside the envelope and the rate limits.
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", readyz(d.DB, d.Degraded))
	if d.MetricsPublic {
		mux.Handle("GET /metrics", MetricsHandler(d.Metrics))
	}
	mux.HandleFunc("GET /.well-known/jwks.json", jwks(s.Sessions.JWKS()))
	mux.HandleFunc("GET /.well-known/openid-configuration", discovery(s.Sessions.Issuer(), d.PublicURL, d.PublicURLFromHost, d.TrustedProxies))

	// The operator console: static files, outside the envelope and the
	// rate limits; it calls the API below like any client.
	if d.Console {
		mux.Handle("/console", console.Handler())
		mux.Handle("/console/", console.Handler())
	}

	// Telegram's webhook: authenticated by its secret header, outside the
	// API rate limits (a 429 would only make Telegram redeliver).
	mux.Handle("/webhooks/telegram", observe(d, "POST /webhooks/telegram", telegramWebhook(s.Messenger)))

	adm := admission{gate: d.Gate, authn: s.Authenticator}
	cp := newCORSPolicy(d.CORSOrigins)

	// GraphQL: each root field is admitted under the rule its schema
	// directives declare (@limit, @auth).
	// Its subscriptions: the same path, upgraded to a WebSocket
	// (graphql-transport-ws; credentials in connection_init).
	gql := newGraphQL(s, d, adm)
	ws := gql.NewWebSocket(gqltransport.WSConfig{Limits: d.WebSocketLimits, Authenticator: s.Authenticator, Stopping: d.Stopping})
	overHTTP := withBounds(d.RequestTimeout, d.Requests, gql.Refuse, cp.wrap([]string{http.MethodGet, http.MethodPost}, gql))
	mux.Handle("/graphql", observe(d, "/graphql", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gqltransport.IsUpgrade(r) {
			ws.ServeHTTP(w, r)
			return
		}
		overHTTP.ServeHTTP(w, r)
	})))

	// The stores' notifications: authenticated by their signatures or
	// tokens, outside the API rate limits (a 429 would only delay a
	// renewal while the store retries).
	h := newREST(s, d)
	for _, n := range storeNotifications {
		mux.Handle("POST "+n.path, observe(d, "POST "+n.path, withBounds(d.RequestTimeout, d.Requests, api.WriteError, h.StoreNotification(n.source))))
	}

	// REST under /api/v1, every answer in the envelope (but the OpenAPI
	// document itself).
	addREST(mux, d, adm, cp, restRoutes(h))
}

// webhooksManage is the rule of the webhook management routes.
var webhooksManage = auth.Scoped(auth.ScopeWebhooksManage)

// restRoutes is the REST door, one row per route. apidoc/openapi.yaml
// describes each of them (a test holds the two together).
func restRoutes(h *rest.Handlers) []route {
	sendNotifications := auth.Scoped(auth.ScopeNotificationsSend)
	return []route{
		{"POST", "/api/v1/auth/register", auth.ForAuthTier, h.Register()},
		{"POST", "/api/v1/auth/verify", auth.ForAuthTier, h.Verify()},
		{"POST", "/api/v1/auth/resend-verification", auth.ForAuthTier, h.ResendVerification()},
		{"POST", "/api/v1/auth/login", auth.ForAuthTier, h.Login()},
		{"POST", "/api/v1/auth/refresh", auth.ForAuthTier, h.Refresh()},
		{"POST", "/api/v1/auth/password-reset", auth.ForAuthTier, h.RequestPasswordReset()},
		{"POST", "/api/v1/auth/password-reset/confirm", auth.ForAuthTier, h.ResetPassword()},
		{"POST", "/api/v1/auth/logout", auth.Protected, h.Logout()},
		{"GET", "/api/v1/users/me", auth.Protected, h.Me()},
		{"POST", "/api/v1/users/me/delete", auth.Protected, h.DeleteMe()},
		{"POST", "/api/v1/users/me/email", auth.Protected, h.ChangeEmail()},
		{"POST", "/api/v1/users/me/email/confirm", auth.Protected, h.ConfirmEmailChange()},
		{"POST", "/api/v1/users/me/password", auth.Protected, h.ChangePassword()},
		{"GET", "/api/v1/auth/email-change/cancel", auth.ForAuthTier, h.CancelEmailChangePage()},
		{"POST", "/api/v1/auth/email-change/cancel", auth.ForAuthTier, h.CancelEmailChange()},
		{"GET", "/api/v1/auth/sessions/end", auth.ForAuthTier, h.EndSessionByLink()},
		{"PUT", "/api/v1/users/me/locale", auth.Protected, h.SetMyLocale()},
		{"GET", "/api/v1/users/me/sessions", auth.Protected, h.MySessions()},
		{"DELETE", "/api/v1/users/me/sessions/{id}", auth.Protected, h.RevokeMySession()},
		{"POST", "/api/v1/users/me/messenger-link", auth.Protected, h.CreateMessengerLink()},
		{"DELETE", "/api/v1/users/me/messenger-link", auth.Protected, h.DeleteMessengerLink()},
		{"GET", "/api/v1/admin/users", auth.Scoped(auth.ScopeAccountsRead), h.ListUsers()},
		{"GET", "/api/v1/admin/users/{id}", auth.Scoped(auth.ScopeAccountsRead), h.GetUser()},
		{"DELETE", "/api/v1/admin/users/{id}", auth.Scoped(auth.ScopeAccountsWrite), h.DeleteUser()},
		{"PUT", "/api/v1/admin/users/{id}/subscription", auth.Scoped(auth.ScopeAccountsWrite), h.SetSubscription()},
		{"GET", "/api/v1/admin/users/{id}/subscription", auth.Scoped(auth.ScopeAccountsRead), h.UserSubscription()},
		{"POST", "/api/v1/admin/users/{id}/subscription/reconcile", auth.Scoped(auth.ScopeAccountsWrite), h.ReconcileUser()},
		{"PUT", "/api/v1/admin/users/{id}/locale", auth.Scoped(auth.ScopeAccountsWrite), h.SetUserLocale()},
		{"POST", "/api/v1/admin/users/{id}/disable", auth.Scoped(auth.ScopeAccountsWrite), h.DisableUser()},
		{"POST", "/api/v1/admin/users/{id}/enable", auth.Scoped(auth.ScopeAccountsWrite), h.EnableUser()},
		{"DELETE", "/api/v1/admin/users/{id}/sessions", auth.Scoped(auth.ScopeAccountsWrite), h.RevokeUserSessions()},
		{"GET", "/api/v1/admin/overview", auth.Admin, h.AdminOverview()},
		{"GET", "/api/v1/admin/bans", auth.Admin, h.ListBans()},
		{"POST", "/api/v1/admin/bans", auth.Admin, h.AddBan()},
		{"DELETE", "/api/v1/admin/bans/{ip}", auth.Admin, h.LiftBan()},
		{"GET", "/api/v1/subscription", auth.Protected, h.MySubscription()},
		{"POST", "/api/v1/billing/apple/transactions", auth.Protected, h.AppleTransaction()},
		{"POST", "/api/v1/billing/google/purchases", auth.Protected, h.GooglePurchase()},
		{"POST", "/api/v1/billing/stripe/checkout", auth.Protected, h.StripeCheckout()},
		{"POST", "/api/v1/billing/stripe/portal", auth.Protected, h.StripePortal()},
		{"GET", "/api/v1/devices", auth.Protected, h.ListDevices()},
		{"POST", "/api/v1/devices", auth.Protected, h.RegisterDevice()},
		{"PUT", "/api/v1/devices/{id}/push-token", auth.Protected, h.UpdatePushToken()},
		{"DELETE", "/api/v1/devices/{id}", auth.Protected, h.RemoveDevice()},
		{"POST", "/api/v1/notifications/users/{id}", sendNotifications, h.SendToUser()},
		{"POST", "/api/v1/notifications/devices/{id}", sendNotifications, h.SendToDevice()},
		{"POST", "/api/v1/notifications/broadcasts", sendNotifications, h.Broadcast()},
		{"GET", "/api/v1/notifications/broadcasts", sendNotifications, h.ListBroadcasts()},
		{"GET", "/api/v1/notifications/categories", sendNotifications, h.NotificationCategories()},
		{"GET", "/api/v1/notifications/broadcasts/{id}", sendNotifications, h.GetBroadcast()},
		{"DELETE", "/api/v1/notifications/broadcasts/{id}", sendNotifications, h.CancelBroadcast()},
		{"POST", "/api/v1/messenger/messages", auth.Scoped(auth.ScopeMessengerSend), h.SendMessengerMessage()},
		{"POST", "/api/v1/messenger/broadcasts", auth.Scoped(auth.ScopeMessengerSend), h.SendMessengerBroadcast()},
		{"GET", "/api/v1/messenger/broadcasts/{id}", auth.Scoped(auth.ScopeMessengerSend), h.GetMessengerBroadcast()},
		{"DELETE", "/api/v1/messenger/broadcasts/{id}", auth.Scoped(auth.ScopeMessengerSend), h.CancelMessengerBroadcast()},
		{"GET", "/api/v1/messenger/subscribers", auth.Scoped(auth.ScopeMessengerSend), h.MessengerSubscribers()},
		{"POST", "/api/v1/messenger/preview", auth.Scoped(auth.ScopeMessengerSend), h.MessengerPreview()},
		{"POST", "/api/v1/api-keys", auth.Admin, h.CreateAPIKey()},
		{"GET", "/api/v1/api-keys", auth.Admin, h.ListAPIKeys()},
		{"DELETE", "/api/v1/api-keys/{id}", auth.Admin, h.RevokeAPIKey()},
		{"GET", "/api/v1/notifications/broadcasts/{id}/events", auth.Scoped(auth.ScopeNotificationsSend), h.BroadcastEvents()},
		{"POST", "/api/v1/webhooks", webhooksManage, h.CreateWebhook()},
		{"GET", "/api/v1/webhooks", webhooksManage, h.ListWebhooks()},
		{"GET", "/api/v1/webhooks/{id}", webhooksManage, h.GetWebhook()},
		{"DELETE", "/api/v1/webhooks/{id}", webhooksManage, h.DeleteWebhook()},
		{"POST", "/api/v1/webhooks/{id}/rotate-secret", webhooksManage, h.RotateWebhookSecret()},
		{"POST", "/api/v1/webhooks/{id}/enable", webhooksManage, h.SetWebhookEnabled(true)},
		{"POST", "/api/v1/webhooks/{id}/disable", webhooksManage, h.SetWebhookEnabled(false)},
		{"GET", "/api/v1/webhooks/{id}/deliveries", webhooksManage, h.WebhookDeliveries()},
		{"POST", "/api/v1/webhooks/{id}/events/{eventId}/redeliver", webhooksManage, h.RedeliverWebhookEvent()},
		{"POST", "/api/v1/webhooks/{id}/ping", webhooksManage, h.PingWebhook()},
		// Second factors (issue 25).
		{"POST", "/api/v1/auth/login/mfa", auth.ForAuthTier, h.CompleteMFALogin()},
		{"POST", "/api/v1/auth/mfa/verify", auth.Protected, h.VerifyMFA()},
		{"GET", "/api/v1/users/me/mfa", auth.Protected, h.MyMFA()},
		{"POST", "/api/v1/users/me/mfa/totp", auth.Protected, h.EnrollTOTP()},
		{"POST", "/api/v1/users/me/mfa/totp/{id}/confirm", auth.Protected, h.ConfirmTOTP()},
		{"DELETE", "/api/v1/users/me/mfa/factors/{id}", auth.Protected, h.RemoveMFAFactor()},
		{"POST", "/api/v1/users/me/mfa/recovery-codes", auth.Protected, h.RegenerateRecoveryCodes()},
		{"GET", "/api/v1/admin/users/{id}/mfa", auth.Scoped(auth.ScopeAccountsRead), h.UserMFA()},
		{"DELETE", "/api/v1/admin/users/{id}/mfa", auth.Scoped(auth.ScopeAccountsWrite), h.ResetUserMFA()},
		{"GET", "/api/v1/admin/users/{id}/passkeys", auth.Scoped(auth.ScopeAccountsRead), h.UserPasskeys()},
		{"DELETE", "/api/v1/admin/users/{id}/passkeys/{passkeyId}", auth.Scoped(auth.ScopeAccountsWrite), h.RemoveUserPasskey()},
		// Passkeys (issue 25).
		{"POST", "/api/v1/users/me/passkeys/register/begin", auth.Protected, h.BeginPasskeyRegistration()},
		{"POST", "/api/v1/users/me/passkeys/register/finish", auth.Protected, h.FinishPasskeyRegistration()},
		{"GET", "/api/v1/users/me/passkeys", auth.Protected, h.MyPasskeys()},
		{"PATCH", "/api/v1/users/me/passkeys/{id}", auth.Protected, h.RenamePasskey()},
		{"DELETE", "/api/v1/users/me/passkeys/{id}", auth.Protected, h.RemovePasskey()},
		{"GET", "/api/v1/auth/methods", auth.Public, h.AuthMethods()},
		{"POST", "/api/v1/auth/passkey/begin", auth.ForAuthTier, h.BeginPasskeyLogin()},
		{"POST", "/api/v1/auth/passkey/finish", auth.ForAuthTier, h.FinishPasskeyLogin()},
		{"POST", "/api/v1/auth/login/mfa/passkey/begin", auth.ForAuthTier, h.BeginPasskeyMFA()},
		{"POST", "/api/v1/auth/login/mfa/passkey/finish", auth.ForAuthTier, h.FinishPasskeyMFA()},
		{"POST", "/api/v1/auth/mfa/passkey/begin", auth.Protected, h.BeginPasskeyStepUp()},
		{"POST", "/api/v1/auth/mfa/passkey/verify", auth.Protected, h.VerifyPasskey()},
		// The security log (issue 25).
		{"GET", "/api/v1/users/me/security-log", auth.Protected, h.MySecurityLog()},
		{"GET", "/api/v1/admin/users/{id}/security-log", auth.Scoped(auth.ScopeAccountsRead), h.UserSecurityLog()},
		{"GET", "/api/v1/admin/security-log", auth.Admin, h.OperatorSecurityLog()},
		{"GET", "/api/v1/users/me/notification-preferences", auth.Protected, h.MyPreferences()},
		// The in-app inbox (issue 26): the caller's own.
		{"GET", "/api/v1/users/me/inbox", auth.Protected, h.MyInbox()},
		{"GET", "/api/v1/users/me/inbox/counts", auth.Protected, h.MyInboxCounts()},
		{"GET", "/api/v1/users/me/inbox/events", auth.Protected, h.MyInboxEvents()},
		{"POST", "/api/v1/users/me/inbox/{id}/seen", auth.Protected, h.MarkInboxItem(inbox.Seen)},
		{"POST", "/api/v1/users/me/inbox/{id}/read", auth.Protected, h.MarkInboxItem(inbox.Read)},
		{"POST", "/api/v1/users/me/inbox/{id}/archive", auth.Protected, h.MarkInboxItem(inbox.Archived)},
		{"POST", "/api/v1/users/me/inbox/seen", auth.Protected, h.MarkInboxAll(inbox.Seen)},
		{"POST", "/api/v1/users/me/inbox/read", auth.Protected, h.MarkInboxAll(inbox.Read)},
		{"POST", "/api/v1/users/me/inbox/archive", auth.Protected, h.MarkInboxAll(inbox.Archived)},
		// A user's inbox as an operator reads it; the one change an
		// operator makes is archiving (without marking seen): marking seen
		// or read is the user's to do.
		{"GET", "/api/v1/admin/users/{id}/inbox", auth.Scoped(auth.ScopeAccountsRead), h.UserInbox()},
		{"GET", "/api/v1/admin/users/{id}/inbox/counts", auth.Scoped(auth.ScopeAccountsRead), h.UserInboxCounts()},
		{"POST", "/api/v1/admin/users/{id}/inbox/{itemId}/archive", auth.Scoped(auth.ScopeAccountsWrite), h.WithdrawInboxItem()},
		{"POST", "/api/v1/admin/users/{id}/inbox/archive", auth.Scoped(auth.ScopeAccountsWrite), h.WithdrawInbox()},
		{"PATCH", "/api/v1/users/me/notification-preferences", auth.Protected, h.UpdateMyPreferences()},
		{"GET", "/api/v1/admin/users/{id}/notification-preferences", auth.Scoped(auth.ScopeAccountsRead), h.UserPreferences()},
		{"PATCH", "/api/v1/admin/users/{id}/notification-preferences", auth.Scoped(auth.ScopeAccountsWrite), h.UpdateUserPreferences()},
		// A notification email's unsubscribe link: public (the token, an
		// HMAC, is the credential; guessing one is hopeless). The page a
		// person opens is charged to the auth tier like the other links
		// of emails; the one-click POST, which mailbox providers send from
		// their own shared addresses (RFC 8058), to the global tier only,
		// so that many users of one provider unsubscribing at once are not
		// refused by the auth tier's small per-address budget.
		{"GET", "/api/v1/notifications/unsubscribe", auth.ForAuthTier, h.UnsubscribePage()},
		{"POST", "/api/v1/notifications/unsubscribe", auth.Public, h.Unsubscribe()},
		// Guest accounts (issue 25).
		{"POST", "/api/v1/auth/guest", auth.ForAuthTier, h.SignInAsGuest()},
		{"POST", "/api/v1/users/me/upgrade", auth.Protected, h.UpgradeGuest()},
		// Sign in with Apple and Google (issue 25).
		{"POST", "/api/v1/auth/oauth/{provider}", auth.ForAuthTier, h.SignInWithProvider()},
		{"GET", "/api/v1/users/me/identities", auth.Protected, h.MyIdentities()},
		{"POST", "/api/v1/users/me/identities", auth.Protected, h.LinkIdentity()},
		{"DELETE", "/api/v1/users/me/identities/{id}", auth.Protected, h.UnlinkIdentity()},
		{"GET", "/api/v1/admin/users/{id}/identities", auth.Scoped(auth.ScopeAccountsRead), h.UserIdentities()},
		// The OpenAPI document of these routes: global tier only, as every
		// request under /api/.
		{"GET", "/api/v1/openapi.json", auth.Public, h.OpenAPI()},
		{"GET", "/api/v1/push/vapid-public-key", auth.Public, h.VAPIDPublicKey()},
	}
}

// longLived are the REST routes that stream for minutes (Server-Sent
// Events): outside the request deadline, bounded by their own
// (StreamLimits.MaxDuration), each of their queries by the store's.
var longLived = map[string]bool{
	"GET /api/v1/notifications/broadcasts/{id}/events": true,
	"GET /api/v1/users/me/inbox/events":                true,
}

// withBounds runs an API request within its deadline
// (HERALD_REQUEST_TIMEOUT) and the bound on requests in flight (queue;
// nil: none). The deadline bounds a request as a whole: its context ends
// timeout after it began, and what it then waits on (the database above
// all) gives up, so that it answers 503 SERVICE_UNAVAILABLE with
// Retry-After (api.Classify) instead of hanging on a connection gone
// silent. Admission is inside it: authenticating may read the database
// too. A request beyond the bound on requests in flight waits for a
// place, within the queue's bounds and its own deadline, and is otherwise
// refused by refuse, with 503 SERVICE_UNAVAILABLE and Retry-After: beyond
// capacity the server answers "later" instead of holding requests without
// bound.
func withBounds(timeout time.Duration, queue *shed.Queue, refuse func(http.ResponseWriter, *http.Request, error), next http.Handler) http.Handler {
	if timeout <= 0 && queue == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if timeout > 0 {
			ctx, cancel := context.WithTimeout(r.Context(), timeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		if queue != nil {
			if err := queue.Acquire(r.Context()); err != nil {
				refuse(w, r, err)
				return
			}
			defer queue.Release()
		}
		next.ServeHTTP(w, r)
	})
}

// addREST registers the REST routes so that a wrong method on a known path
// gets 405 and an unknown path 404, both in the envelope and both charged
// to the global tier. With CORS on, a preflight for a path allows the
// methods the table declares for it, and one for an unknown path under
// /api/ any method (the request then gets its 404, readable by the page).
func addREST(mux *http.ServeMux, d Deps, adm api.Admission, cp *corsPolicy, routes []route) {
	bounded := func(h http.Handler) http.Handler { return withBounds(d.RequestTimeout, d.Requests, api.WriteError, h) }
	methods := map[string][]string{}
	for _, rt := range routes {
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	for _, ms := range methods {
		sort.Strings(ms)
	}
	for _, rt := range routes {
		h := admitted(adm, rt.rule, rt.handler)
		if !longLived[rt.method+" "+rt.path] {
			h = bounded(h)
		}
		mux.Handle(rt.method+" "+rt.path, observe(d, rt.method+" "+rt.path, cp.wrap(methods[rt.path], h)))
	}
	for path, ms := range methods {
		allow := strings.Join(ms, ", ")
		// OPTIONS (a preflight among them) comes here: no route declares it.
		mux.Handle(path, observe(d, path, cp.wrap(ms, bounded(admitted(adm, auth.Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			api.WriteError(w, r, apperr.Newf(apperr.MethodNotAllowed, "%s is not allowed here; use %s.", r.Method, allow))
		}))))))
	}
	mux.Handle("/api/", observe(d, "/api/", cp.wrap(corsAnyMethod, bounded(admitted(adm, auth.Public, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, r, apperr.Newf(apperr.NotFound, "There is no %s %s.", r.Method, r.URL.Path))
	}))))))
}

// telegramWebhook serves POST /webhooks/telegram. A request whose
// X-Telegram-Bot-Api-Secret-Token is not the secret gets 401 and changes
// nothing; a body over 1 MiB gets 413, one that is not an update 400. A
// processed update (or a replay of one) gets 200; a database failure 500
// or 503, which makes Telegram deliver it again.
func telegramWebhook(bot *messenger.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			api.WriteError(w, r, apperr.New(apperr.MethodNotAllowed))
			return
		}
		got, present := r.Header[http.CanonicalHeaderKey(telegram.SecretTokenHeader)]
		secret := ""
		if present && len(got) > 0 {
			secret = got[0]
		}
		if err := bot.CheckWebhookSecret(secret, present && len(got) > 0); err != nil {
			api.WriteError(w, r, err)
			return
		}
		body, err := api.ReadBody(w, r)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		var u telegram.Update
		if err := json.Unmarshal(body, &u); err != nil {
			api.WriteError(w, r, apperr.Invalid("body", "a Telegram Update object", "malformed JSON"))
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), messenger.WebhookTimeout)
		defer cancel()
		if err := bot.HandleUpdate(ctx, u); err != nil {
			api.WriteError(w, r.WithContext(ctx), err)
			return
		}
		api.WriteData(w, http.StatusOK, map[string]bool{"ok": true})
	})
}
