// Package server assembles Herald's HTTP surface: the middleware every
// request passes through, the health endpoints and, in routes.go, every
// route of both API doors.
package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/herald-vpn/herald/internal/metrics"
	"github.com/herald-vpn/herald/internal/rest"
	"github.com/herald-vpn/herald/internal/sessions"
)

// Pinger reports whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps is everything the HTTP surface needs.
type Deps struct {
	Logger         *slog.Logger
	DB             Pinger
	Metrics        *metrics.Metrics
	Accounts       *accounts.Service
	Sessions       *sessions.Service
	TrustedProxies []netip.Prefix
	Version        string
}

// NewServer returns the whole HTTP handler.
func NewServer(d Deps) http.Handler {
	mux := http.NewServeMux()
	addRoutes(mux, d)
	return withRequestInfo(d, mux)
}

func healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

func readyz(db Pinger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if err := db.Ping(ctx); err != nil {
			api.Logger(r.Context()).WarnContext(r.Context(), "readiness check failed", "err", err)
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"status":"unavailable","database":"unreachable"}` + "\n"))
			return
		}
		w.Write([]byte(`{"status":"ready","database":"ok"}` + "\n"))
	}
}

// newGraphQL builds the GraphQL door.
func newGraphQL(d Deps) http.Handler {
	return graph.NewHandler(&graph.Resolver{Accounts: d.Accounts, Sessions: d.Sessions, Guard: d.Sessions, Version: d.Version}, graph.DefaultLimits())
}

// newREST builds the REST door's handlers.
func newREST(d Deps) *rest.Handlers {
	return &rest.Handlers{Accounts: d.Accounts, Sessions: d.Sessions, Guard: d.Sessions}
}

// jwks publishes the public keys that verify access tokens.
func jwks(s *sessions.Service) http.HandlerFunc {
	body := s.JWKS()
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/jwk-set+json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		w.Write(body)
	}
}
