package server

import (
	"net/http"
	"slices"
	"strings"

	"github.com/rs/cors"
)

// CORS, for browser code on other origins (HERALD_CORS_ORIGINS). Herald
// authenticates with bearer tokens in Authorization, never with cookies,
// so credentials are never allowed (no Access-Control-Allow-Credentials),
// which is what makes "*" a safe allow-list.
var (
	// corsAllowedHeaders are the request headers browser code may send.
	corsAllowedHeaders = []string{"Accept", "Authorization", "Content-Type", "Idempotency-Key", "X-API-Key", "X-Captcha-Token", "X-Request-ID"}
	// corsExposedHeaders are the response headers browser code may read
	// (besides the CORS-safelisted ones such as Content-Type).
	corsExposedHeaders = []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After", "X-Request-ID"}
	// corsAnyMethod is what a preflight may ask for on a path no route
	// declares: the actual request then gets its 404 with CORS headers,
	// so browser code can read why.
	corsAnyMethod = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}
)

// corsMaxAge is how long, in seconds, a browser may reuse a preflight's
// answer.
const corsMaxAge = 600

// corsPolicy applies HERALD_CORS_ORIGINS to the routes wrapped with it. A
// nil policy (no origins configured) wraps nothing: no CORS headers, and
// OPTIONS is answered as any other unsupported method.
type corsPolicy struct {
	options cors.Options
	// actual decorates actual (non-preflight) requests. It allows every
	// method, so that an error for a method the path lacks (405) is as
	// readable as any other.
	actual *cors.Cors
}

// newCORSPolicy returns the policy for origins (validated by config:
// exact origins, or a lone "*"), or nil when there are none.
func newCORSPolicy(origins []string) *corsPolicy {
	if len(origins) == 0 {
		return nil
	}
	allowed := slices.Clone(origins)
	anyOrigin := slices.Contains(allowed, "*")
	opts := cors.Options{
		// The allowed origin itself is echoed in Access-Control-Allow-
		// Origin, also under "*"; rs/cors adds Vary: Origin to every
		// answer of a wrapped route.
		AllowOriginFunc:  func(origin string) bool { return anyOrigin || slices.Contains(allowed, origin) },
		AllowedHeaders:   corsAllowedHeaders,
		ExposedHeaders:   corsExposedHeaders,
		MaxAge:           corsMaxAge,
		AllowCredentials: false,
		// The preflight is finished by preflightDone, which lists the
		// route's methods.
		OptionsPassthrough: true,
	}
	actual := opts
	actual.AllowedMethods = corsAnyMethod
	return &corsPolicy{options: opts, actual: cors.New(actual)}
}

// wrap puts CORS in front of a route whose methods are methods. A preflight
// (OPTIONS with Access-Control-Request-Method) is answered here, 204,
// without reaching next: it is not authenticated, not charged to any rate
// limit, and not refused by a block or ban. An allowed origin asking for
// one of methods, with allowed headers, gets the Access-Control-Allow-*
// headers and Access-Control-Max-Age; anything else gets none, so the
// browser does not send the request. Every other request goes on to next,
// with Access-Control-Allow-Origin and Access-Control-Expose-Headers set
// first when its origin is allowed, so errors written by next (401, 429)
// are readable too.
func (p *corsPolicy) wrap(methods []string, next http.Handler) http.Handler {
	if p == nil {
		return next
	}
	opts := p.options
	opts.AllowedMethods = methods
	preflight := cors.New(opts).Handler(preflightDone(strings.Join(methods, ", ")))
	actual := p.actual.Handler(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			preflight.ServeHTTP(w, r)
			return
		}
		actual.ServeHTTP(w, r)
	})
}

// preflightDone ends a preflight that rs/cors has judged: when it allowed
// it, Access-Control-Allow-Methods lists all of the route's methods (rs/cors
// names only the one asked for), so one cached preflight covers them all.
func preflightDone(methods string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if w.Header().Get("Access-Control-Allow-Origin") != "" {
			w.Header().Set("Access-Control-Allow-Methods", methods)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
