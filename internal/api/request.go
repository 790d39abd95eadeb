// Package api is the plumbing both API doors share: what is known about the
// request in flight, the REST envelope writer and the JSON body decoder.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"

	"github.com/herald-vpn/herald/internal/auth"
)

// RequestInfo travels with each request. The server's middleware creates
// it; the doors fill in what only they know (the GraphQL operation).
type RequestInfo struct {
	ID        string
	ClientIP  netip.Addr
	UserAgent string
	// Log is the server's logger; Logger(ctx) adds the request's
	// attributes to it when a line is written (most requests write only
	// their request line, which adds them itself).
	Log *slog.Logger
	// Trace is trace_id and span_id, for the log lines of a traced
	// request; nil otherwise.
	Trace     []slog.Attr
	Operation string // GraphQL root fields, for the log line
	// MetricOperation is the GraphQL operation as the metrics label it: one
	// of a bounded set (a root field's name, "multiple", "other"); "" on
	// REST, whose route is its own label.
	MetricOperation string
	// Credential is what the request's headers present, parsed at the
	// edge; it is checked only when an operation needs a caller.
	Credential auth.Credential
	// AcceptLanguage is the request's Accept-Language header, parsed
	// (AcceptedLanguages) only by the operations that need it.
	AcceptLanguage string
	// CaptchaToken is the X-Captcha-Token header, checked (captcha.Guard)
	// only by the operations a CAPTCHA guards.
	CaptchaToken string
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
	return &RequestInfo{Log: slog.New(slog.DiscardHandler)}
}

// Logger returns the request's logger (with its request ID).
func Logger(ctx context.Context) *slog.Logger { return Info(ctx).Logger() }

// Logger returns the request's logger: the server's, with request_id
// (and the trace's ids).
func (i *RequestInfo) Logger() *slog.Logger {
	if i.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(i.Log.Handler().WithAttrs(append([]slog.Attr{slog.String("request_id", i.ID)}, i.Trace...)))
}

// Admission admits a request under the rules of its operations: it
// authenticates the caller once (when a rule needs one), charges the rate
// limits, and writes the X-RateLimit headers on w. The returned context
// carries the authentication (auth.ResultOf) for the permission checks;
// the error is a refusal (BANNED, RATE_LIMITED).
type Admission interface {
	Admit(ctx context.Context, w http.ResponseWriter, rules []auth.Rule) (context.Context, error)
}
