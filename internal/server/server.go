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
	Guard          api.Guard
	TrustedProxies []netip.Prefix
	Version        string
	Now            func() time.Time
}

// NewServer returns the whole HTTP handler.
func NewServer(d Deps) http.Handler {
	if d.Now == nil {
		d.Now = func() time.Time { return time.Now().UTC() }
	}
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
	return graph.NewHandler(&graph.Resolver{Accounts: d.Accounts, Guard: d.Guard, Version: d.Version}, graph.DefaultLimits())
}

// newREST builds the REST door's handlers.
func newREST(d Deps) *rest.Handlers {
	return &rest.Handlers{Accounts: d.Accounts, Now: d.Now}
}
