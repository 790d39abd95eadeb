package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

// withRequestInfo runs first: it fixes the request ID and client IP, gives
// the request its logger, recovers panics, and logs one line per request.
func withRequestInfo(d Deps, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-ID")
		if !saneRequestID(id) {
			id = newRequestID()
		}
		w.Header().Set("X-Request-ID", id)
		ip := clientIP(r, d.TrustedProxies)
		info := &api.RequestInfo{
			ID:            id,
			ClientIP:      ip,
			Logger:        d.Logger.With("request_id", id),
			Authorization: r.Header.Get("Authorization"),
		}
		ctx := api.WithInfo(r.Context(), info)
		rec := &statusRecorder{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				info.Logger.ErrorContext(ctx, "panic serving request", "panic", fmt.Sprint(p))
				if !rec.wrote {
					api.WriteError(rec, r.WithContext(ctx), apperr.New(apperr.Internal))
				}
			}
			attrs := []any{"method", r.Method, "path", r.URL.Path, "status", rec.status(),
				"duration_ms", float64(time.Since(start).Microseconds()) / 1000, "client_ip", ip.String()}
			if info.Operation != "" {
				attrs = append(attrs, "operation", info.Operation)
			}
			info.Logger.InfoContext(ctx, "request", attrs...)
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
			d.Metrics.ObserveRequest(route, api.Info(r.Context()).Operation, rec.status(), time.Since(start))
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
