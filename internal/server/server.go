// Package server assembles Herald's HTTP surface: the middleware every
// request passes through, the health endpoints and, in routes.go, every
// route of both API doors.
package server

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/metrics"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/rest"
	"github.com/herald-vpn/herald/internal/sessions"
)

// Pinger reports whether the database answers.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Deps is everything the HTTP surface needs.
type Deps struct {
	Logger        *slog.Logger
	DB            Pinger
	Metrics       *metrics.Metrics
	Accounts      *accounts.Service
	Sessions      *sessions.Service
	Messenger     *messenger.Service
	Devices       *devices.Service
	Notifications *notifications.Service
	Gate          *limits.Gate
	// Degraded reports subsystems running in a fallback mode (for
	// /readyz), such as the rate limiter counting in memory because Redis
	// is unreachable.
	Degraded       func() map[string]string
	TrustedProxies []netip.Prefix
	Version        string
	GraphQLLimits  graph.Limits
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
func newGraphQL(d Deps, adm api.Admission) http.Handler {
	return graph.NewHandler(&graph.Resolver{Accounts: d.Accounts, Sessions: d.Sessions, Messenger: d.Messenger, Devices: d.Devices, Notifications: d.Notifications, Version: d.Version}, d.GraphQLLimits, adm)
}

// newREST builds the REST door's handlers.
func newREST(d Deps) *rest.Handlers {
	return &rest.Handlers{Accounts: d.Accounts, Sessions: d.Sessions, Devices: d.Devices}
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
