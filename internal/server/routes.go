package server

import (
	"net/http"
	"sort"
	"strings"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/limits"
)

// addRoutes is the whole HTTP surface in one place.
func addRoutes(mux *http.ServeMux, d Deps) {
	// Operations: outside the envelope and the rate limits.
	mux.HandleFunc("GET /healthz", healthz)
	mux.HandleFunc("GET /readyz", readyz(d.DB, d.Degraded))
	mux.Handle("GET /metrics", d.Metrics.Handler())
	mux.HandleFunc("GET /.well-known/jwks.json", jwks(d.Sessions))

	// Telegram's webhook: authenticated by its secret header, outside the
	// API rate limits (a 429 would only make Telegram redeliver).
	mux.Handle("POST /webhooks/telegram", d.Messenger.WebhookHandler())

	adm := admission{gate: d.Gate, guard: d.Sessions}

	// GraphQL: the handler charges each root field to the tier its schema
	// directives name (@limit, @auth).
	mux.Handle("/graphql", observe(d, "/graphql", newGraphQL(d, adm)))

	// REST under /api/v1, every answer in the envelope; the second column
	// is the rate-limit tier charged besides global.
	h := newREST(d)
	v1 := restRoutes{mux: mux, d: d, adm: adm, methods: map[string][]string{}}
	v1.handle("POST", "/api/v1/auth/register", limits.TierAuth, h.Register)
	v1.handle("POST", "/api/v1/auth/verify", limits.TierAuth, h.Verify)
	v1.handle("POST", "/api/v1/auth/resend-verification", limits.TierAuth, h.ResendVerification)
	v1.handle("POST", "/api/v1/auth/login", limits.TierAuth, h.Login)
	v1.handle("POST", "/api/v1/auth/refresh", limits.TierAuth, h.Refresh)
	v1.handle("POST", "/api/v1/auth/password-reset", limits.TierAuth, h.RequestPasswordReset)
	v1.handle("POST", "/api/v1/auth/password-reset/confirm", limits.TierAuth, h.ResetPassword)
	v1.handle("POST", "/api/v1/auth/logout", limits.TierProtected, h.Authed("", h.Logout))
	v1.handle("GET", "/api/v1/users/me", limits.TierProtected, h.Authed("", h.Me))
	v1.handle("GET", "/api/v1/devices", limits.TierProtected, h.Authed("", h.ListDevices))
	v1.handle("POST", "/api/v1/devices", limits.TierProtected, h.Authed("", h.RegisterDevice))
	v1.handle("PUT", "/api/v1/devices/{id}/push-token", limits.TierProtected, h.Authed("", h.UpdatePushToken))
	v1.handle("DELETE", "/api/v1/devices/{id}", limits.TierProtected, h.Authed("", h.RemoveDevice))
	v1.finish()
}

// restRoutes registers REST routes so that a wrong method on a known path
// gets 405 and an unknown path 404, both in the envelope.
type restRoutes struct {
	mux     *http.ServeMux
	d       Deps
	adm     api.Admission
	methods map[string][]string
}

func (rr restRoutes) handle(method, path, tier string, h http.HandlerFunc) {
	rr.methods[path] = append(rr.methods[path], method)
	rr.mux.Handle(method+" "+path, observe(rr.d, method+" "+path, admit(rr.adm, tier, h)))
}

func (rr restRoutes) finish() {
	for path, methods := range rr.methods {
		sort.Strings(methods)
		allow := strings.Join(methods, ", ")
		rr.mux.Handle(path, observe(rr.d, path, admit(rr.adm, limits.TierGlobal, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", allow)
			api.WriteError(w, r, apperr.Newf(apperr.MethodNotAllowed, "%s is not allowed here; use %s.", r.Method, allow))
		}))))
	}
	rr.mux.Handle("/api/", observe(rr.d, "/api/", admit(rr.adm, limits.TierGlobal, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.WriteError(w, r, apperr.Newf(apperr.NotFound, "There is no %s %s.", r.Method, r.URL.Path))
	}))))
}
