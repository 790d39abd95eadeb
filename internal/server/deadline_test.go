package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A request under withDeadline sees its deadline, and its context ends
// there; a timeout of zero adds none.
func TestWithDeadline(t *testing.T) {
	var got context.Context
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Context()
		<-r.Context().Done()
	})
	withDeadline(50*time.Millisecond, h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !errors.Is(got.Err(), context.DeadlineExceeded) {
		t.Fatalf("the request's context ended with %v, want its deadline", got.Err())
	}
	plain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Context() })
	withDeadline(0, plain).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if _, ok := got.Deadline(); ok {
		t.Fatal("a zero timeout set a deadline")
	}
}

// BenchmarkWithDeadline is the request deadline's cost on the hot path
// (a timer made and stopped per request).
func BenchmarkWithDeadline(b *testing.B) {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, c := range []struct {
		name    string
		timeout time.Duration
	}{{"off", 0}, {"15s", 15 * time.Second}} {
		b.Run(c.name, func(b *testing.B) {
			h := withDeadline(c.timeout, noop)
			r := httptest.NewRequest("GET", "/", nil)
			ctx, cancel := context.WithCancel(context.Background()) // as net/http's per request
			defer cancel()
			r = r.WithContext(ctx)
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(nil, r)
			}
		})
	}
}
