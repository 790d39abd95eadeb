package server

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/rest"
	"github.com/herald-vpn/herald/internal/shed"
)

// A request under withBounds sees its deadline, and its context ends
// there; a timeout of zero adds none.
func TestWithDeadline(t *testing.T) {
	var got context.Context
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Context()
		<-r.Context().Done()
	})
	withBounds(50*time.Millisecond, nil, api.WriteError, h).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !errors.Is(got.Err(), context.DeadlineExceeded) {
		t.Fatalf("the request's context ended with %v, want its deadline", got.Err())
	}
	plain := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Context() })
	withBounds(0, nil, api.WriteError, plain).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if _, ok := got.Deadline(); ok {
		t.Fatal("a zero timeout set a deadline")
	}
}

// Past the bound on requests in flight and its queue, a request is
// refused at once with 503 SERVICE_UNAVAILABLE and Retry-After, in the
// envelope; the one in flight is untouched, and its place is free after.
func TestWithBoundsSheds(t *testing.T) {
	q := shed.New("API requests", shed.Bounds{Concurrency: 1, Queue: 0})
	inside, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(inside)
		<-release
	})
	h := withBounds(time.Minute, q, api.WriteError, slow)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	select {
	case <-inside:
	case <-time.After(10 * time.Second):
		t.Fatal("the first request did not start within 10 s")
	}
	w := httptest.NewRecorder()
	withBounds(time.Minute, q, api.WriteError, http.NotFoundHandler()).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), `"SERVICE_UNAVAILABLE"`) {
		t.Fatalf("a request past the bound: %d, Retry-After %q, %s; want 503 SERVICE_UNAVAILABLE with Retry-After", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	close(release)
	<-done
	if q.Running() != 0 || q.Refusals() != 1 {
		t.Fatalf("after: %d running, %d refused; want 0 and 1", q.Running(), q.Refusals())
	}
}

// Every route exempted from the request deadline as long-lived is a route
// (a renamed path would silently put its stream under the deadline).
func TestLongLivedRoutesAreRoutes(t *testing.T) {
	served := map[string]bool{}
	for _, rt := range restRoutes(&rest.Handlers{}) {
		served[rt.method+" "+rt.path] = true
	}
	for where := range longLived {
		if !served[where] {
			t.Errorf("longLived names %s, which is not a route", where)
		}
	}
}

// BenchmarkWithDeadline is the request deadline's cost on the hot path
// (a timer made and stopped per request).
func BenchmarkWithDeadline(b *testing.B) {
	noop := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, c := range []struct {
		name    string
		timeout time.Duration
		queue   *shed.Queue
	}{{"off", 0, nil}, {"15s", 15 * time.Second, nil}, {"15s+queue", 15 * time.Second, shed.New("API requests", shed.Bounds{Concurrency: 512, Queue: 2048, Wait: 2 * time.Second})}} {
		b.Run(c.name, func(b *testing.B) {
			h := withBounds(c.timeout, c.queue, api.WriteError, noop)
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
