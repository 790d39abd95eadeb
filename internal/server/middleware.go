package server

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// withRequestInfo runs first: it fixes the request ID and client IP, gives
// the request its logger, recovers panics, and logs one line per request.
func withRequestInfo(d Deps, next http.Handler) http.Handler {
	var tracer trace.Tracer
	if d.TracerProvider != nil {
		tracer = tracing.Tracer(d.TracerProvider)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		ip := clientIP(r, d.TrustedProxies)
		ctx := r.Context()
		var traceAttrs []slog.Attr
		if tracer != nil {
			// The request's span continues the caller's trace (W3C
			// traceparent); observe names it after the route.
			var span trace.Span
			ctx, span = tracer.Start(tracing.Propagator.Extract(ctx, propagation.HeaderCarrier(r.Header)),
				"HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("http.request_id", id)))
			defer span.End()
			if sc := span.SpanContext(); sc.IsValid() {
				traceAttrs = []slog.Attr{slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String())}
			}
		}
		info := &api.RequestInfo{
			ID:             id,
			ClientIP:       ip,
			UserAgent:      r.UserAgent(),
			Log:            d.Logger,
			Trace:          traceAttrs,
			Credential:     credentialFrom(r.Header.Get("Authorization"), r.Header.Get("X-API-Key")),
			AcceptLanguage: r.Header.Get("Accept-Language"),
			CaptchaToken:   r.Header.Get("X-Captcha-Token"),
		}
		ctx = api.WithInfo(ctx, info)
		var ipText string
		if ip.IsValid() {
			ipText = ip.String()
		}
		ctx = securitylog.WithClient(ctx, ipText, info.UserAgent)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				info.Logger().ErrorContext(ctx, "panic serving request", "panic", fmt.Sprint(p))
				if !rec.wrote {
					api.WriteError(rec, r.WithContext(ctx), apperr.New(apperr.Internal))
				}
			}
			// Typed attributes, straight to the handler (Logger.LogAttrs
			// would also walk the stack for a caller PC the line never
			// shows): this line is written for every request.
			if h := d.Logger.Handler(); h.Enabled(ctx, slog.LevelInfo) {
				line := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				line.AddAttrs(slog.String("request_id", id))
				line.AddAttrs(info.Trace...)
				line.AddAttrs(slog.String("method", r.Method), slog.String("path", r.URL.Path), slog.Int("status", rec.status()),
					slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000), slog.String("client_ip", ip.String()))
				if info.Operation != "" {
					line.AddAttrs(slog.String("operation", info.Operation))
				}
				_ = h.Handle(ctx, line)
			}
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
	})
}

// observe records the route's metrics.
func observe(d Deps, route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec, ok := w.(*statusRecorder)
		if !ok {
			rec = &statusRecorder{ResponseWriter: w}
		}
		defer func() {
			info := api.Info(r.Context())
			d.Metrics.ObserveRequest(route, info.MetricOperation, rec.status(), time.Since(start))
			span := trace.SpanFromContext(r.Context())
			if !span.IsRecording() {
				return
			}
			span.SetName(route)
			// A GraphQL operation is a span of its own under this one,
			// with the graphql.* attributes (internal/gqltransport/trace.go).
			span.SetAttributes(attribute.String("http.route", route), attribute.Int("http.response.status_code", rec.status()))
			if rec.status() >= 500 {
				span.SetStatus(codes.Error, http.StatusText(rec.status()))
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// saneRequestID accepts a client's ID of at most 128 visible, unspaced
// ASCII characters from a conservative set, so it is safe in logs.
func saneRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.:/+=", c) >= 0) {
			return false
		}
	}
	return true
}

func newRequestID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// statusRecorder remembers the status written.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if !s.wrote {
		s.code, s.wrote = http.StatusOK, true
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) status() int {
	if !s.wrote {
		return http.StatusOK
	}
	return s.code
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Hijack hands the connection to a WebSocket (which the gorilla upgrader
// asks for directly, not through http.ResponseController); the request is
// logged as 101 Switching Protocols.
func (s *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil && !s.wrote {
		s.code, s.wrote = http.StatusSwitchingProtocols, true
	}
	return c, rw, err
}
