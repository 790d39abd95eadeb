// Package server assembles Herald's HTTP surface: the middleware every
// request passes through, the health endpoints and, in routes.go, every
// route of both API doors.
package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"net/netip"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/console"
	"github.com/herald-vpn/herald/internal/gqltransport"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/metrics"
	"github.com/herald-vpn/herald/internal/rest"
	"github.com/herald-vpn/herald/internal/services"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
)

// Pinger reports whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps are the HTTP surface's settings and its plumbing: what the server
// needs besides the services the doors open onto.
type Deps struct {
	Logger  *slog.Logger
	DB      Pinger
	Metrics *metrics.Metrics
	// Gate is the rate limiter every request is admitted by.
	Gate *limits.Gate
	// Degraded reports subsystems running in a fallback mode (for
	// /readyz), such as the rate limiter counting in memory because Redis
	// is unreachable.
	Degraded       func() map[string]string
	TrustedProxies []netip.Prefix
	// CORSOrigins are the origins whose browser code may call /graphql
	// and /api/v1 (HERALD_CORS_ORIGINS: exact origins, or "*" for any);
	// empty: no CORS headers.
	CORSOrigins   []string
	Version       string
	GraphQLLimits gqltransport.Limits
	// WebSocketLimits bound GraphQL subscriptions over WebSocket.
	WebSocketLimits gqltransport.WSLimits
	// EventStreams bound the REST event streams (Server-Sent Events).
	EventStreams rest.StreamLimits
	// Stopping is closed when the server begins to shut down: live streams
	// (SSE, WebSocket) end then, so the shutdown does not wait for them.
	Stopping <-chan struct{}
	// MetricsPublic serves /metrics here, to anyone who reaches the API
	// (HERALD_METRICS_PUBLIC); else it is only on a listener of its own
	// (HERALD_METRICS_ADDR, see MetricsHandler), if any.
	MetricsPublic bool
	// Console serves the operator console at /console (HERALD_CONSOLE).
	Console bool
	// PublicURL is the base of the absolute URLs the server publishes
	// (HERALD_PUBLIC_URL, or an http(s) issuer); "" when not configured.
	PublicURL string
	// PublicURLFromHost, when PublicURL is "", takes the base from each
	// request's Host (development only: a production answer never trusts
	// the Host a client sent).
	PublicURLFromHost bool
	// TracerProvider starts each request's span (nil: no tracing).
	TracerProvider trace.TracerProvider
	// RequestTimeout bounds each API request as a whole
	// (HERALD_REQUEST_TIMEOUT); the long-lived streams are exempt (see
	// withBounds). Zero: no bound.
	RequestTimeout time.Duration
	// Requests bounds the API requests in flight, the long-lived streams
	// aside (HERALD_MAX_REQUESTS, HERALD_REQUEST_QUEUE,
	// HERALD_REQUEST_QUEUE_WAIT); nil: no bound.
	Requests *shed.Queue
}

// MetricsHandler serves the Prometheus metrics, for a listener of their
// own. That private listener also serves Go's profiles under
// /debug/pprof/ (never the public one: a profile costs CPU and shows
// internals).
func MetricsHandler(m *metrics.Metrics) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{Registry: m.Registry()}))
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	return mux
}

// NewServer returns the whole HTTP handler over the services s.
func NewServer(s services.Services, d Deps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(mux, s, d)
	return withRequestInfo(d, mux)
}

// index answers GET / with the envelope of what this server offers and
// where it is documented.
func index(version string, consoleOn bool) http.HandlerFunc {
	body := map[string]string{
		"name":    "Herald",
		"version": version,
		"docs":    "https://github.com/herald-vpn/herald#readme",
		"graphql": "/graphql",
		"rest":    "/api/v1",
		"openapi": "/api/v1/openapi.json",
		"jwks":    "/.well-known/jwks.json",
		"health":  "/healthz",
	}
	if consoleOn {
		body["console"] = console.Path
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		api.WriteData(w, http.StatusOK, body)
	}
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// readyz is ready while the database answers; degraded subsystems (the
// rate limiter without Redis) are reported but do not make it unready.
func readyz(db Pinger, degraded func() map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		body := map[string]any{"status": "ready", "database": "ok"}
		status := http.StatusOK
		if err := db.Ping(ctx); err != nil {
			api.Logger(r.Context()).WarnContext(r.Context(), "readiness check failed", "err", err)
			body["status"], body["database"] = "unavailable", "unreachable"
			status = http.StatusServiceUnavailable
		}
		if degraded != nil {
			if d := degraded(); len(d) > 0 {
				body["degraded"] = d
			}
		}
		out, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(append(out, '\n'))
	}
}

// newGraphQL builds the GraphQL door.
func newGraphQL(s services.Services, d Deps, adm api.Admission) *gqltransport.Handler {
	return gqltransport.NewHandler(graph.NewSchema(&graph.Resolver{Services: s, Version: d.Version}), d.GraphQLLimits, adm)
}

// newREST builds the REST door's handlers.
func newREST(s services.Services, d Deps) *rest.Handlers {
	return &rest.Handlers{Services: s, Stopping: d.Stopping, Streams: d.EventStreams}
}

// discovery publishes the subset of OpenID Provider metadata that standard
// JWT libraries read to find the keys: the issuer, the key set's address
// and the signing algorithm. The address is under the configured public
// URL (cacheable by anyone). Without one, the development profile takes it
// from the request (so the answer is private to that Host), and production
// answers 404: a metadata document must name jwks_uri as an absolute URL,
// which it cannot know, and an OpenID client takes a 404 for "no discovery
// here" rather than failing later on a document without its keys.
func discovery(issuer, publicURL string, fromRequest bool, trusted []netip.Prefix) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		base, cache := publicURL, "public, max-age=300"
		switch {
		case base != "":
		case fromRequest:
			base, cache = requestBase(r, trusted), "private, max-age=300"
			w.Header().Set("Vary", "Host, X-Forwarded-Host, X-Forwarded-Proto")
		default:
			api.WriteError(w, r, apperr.Newf(apperr.NotFound, "This server publishes no OpenID discovery document: its public address is not configured. Its keys are at /.well-known/jwks.json."))
			return
		}
		body, _ := json.Marshal(map[string]any{
			"issuer":                                issuer,
			"jwks_uri":                              base + "/.well-known/jwks.json",
			"id_token_signing_alg_values_supported": []string{"EdDSA"},
			"token_endpoint_auth_methods_supported": []string{"none"},
			"subject_types_supported":               []string{"public"},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", cache)
		w.Write(append(body, '\n'))
	}
}

// requestBase is the scheme and host a client used to reach the server,
// believing X-Forwarded-Proto and X-Forwarded-Host only from trusted
// proxies.
func requestBase(r *http.Request, trusted []netip.Prefix) string {
	scheme, host := "http", r.Host
	if r.TLS != nil {
		scheme = "https"
	}
	if isTrusted(remoteAddr(r.RemoteAddr), trusted) {
		first := func(v string) string { f, _, _ := strings.Cut(v, ","); return strings.TrimSpace(f) }
		if p := first(r.Header.Get("X-Forwarded-Proto")); p == "https" || p == "http" {
			scheme = p
		}
		if h := first(r.Header.Get("X-Forwarded-Host")); h != "" {
			host = h
		}
	}
	return scheme + "://" + host
}

// jwks publishes the public keys that verify access tokens.
func jwks(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Write(body)
	}
}
