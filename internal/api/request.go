// Package api is the plumbing both API doors share: what is known about the
// request in flight, the REST envelope writer and the JSON body decoder.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
)

// RequestInfo travels with each request. The server's middleware creates
// it; the doors fill in what only they know (the GraphQL operation).
type RequestInfo struct {
	ID        string
	ClientIP  netip.Addr
	Logger    *slog.Logger // carries request_id
	Operation string       // GraphQL root fields, or the REST route
	// Authorization is the raw Authorization header; sessions parses it
	// only for operations that need it.
	Authorization string
}

type infoKey struct{}

// WithInfo returns ctx carrying info.
func WithInfo(ctx context.Context, info *RequestInfo) context.Context {
	return context.WithValue(ctx, infoKey{}, info)
}

// Info returns the request's info; a blank one outside a request.
func Info(ctx context.Context) *RequestInfo {
	if info, ok := ctx.Value(infoKey{}).(*RequestInfo); ok {
		return info
	}
	return &RequestInfo{Logger: slog.New(slog.DiscardHandler)}
}

// Logger returns the request's logger (with its request ID).
func Logger(ctx context.Context) *slog.Logger { return Info(ctx).Logger }

// Cost is what a request asks of the rate limits: units per tier class.
// Global is charged for every request; Protected and Admin are counted per
// authenticated user.
type Cost struct {
	Global, Auth, Protected, Admin int
}

// Admission admits a request under the rate limits and bans, setting the
// X-RateLimit headers on w. The returned context carries the caller's
// identity when the cost needed it.
type Admission interface {
	Admit(ctx context.Context, w http.ResponseWriter, c Cost) (context.Context, error)
}
