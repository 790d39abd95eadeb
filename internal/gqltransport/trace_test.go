package gqltransport

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/herald-vpn/herald/internal/api"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// Each operation is a span under the request's, named and described as
// OpenTelemetry's semantic conventions for GraphQL servers say, seen by
// the SDK's in-memory exporter.
func TestOperationSpans(t *testing.T) {
	cases := []struct {
		name, query string
		span        string            // "": no operation span
		attrs       map[string]string // "": the attribute is absent
		rootFields  []string
		status      codes.Code
	}{
		{"named query", `query AppVersion { version }`, "query AppVersion",
			map[string]string{"graphql.operation.type": "query", "graphql.operation.name": "AppVersion", "error.type": ""}, []string{"version"}, codes.Unset},
		{"anonymous query", `{ version v: version __typename }`, "query",
			map[string]string{"graphql.operation.type": "query", "graphql.operation.name": ""}, []string{"__typename", "version"}, codes.Unset},
		{"named mutation refused while it runs", `mutation AppLogout { logout }`, "mutation AppLogout",
			map[string]string{"graphql.operation.type": "mutation", "graphql.operation.name": "AppLogout", "error.type": "AUTH_REQUIRED"}, []string{"logout"}, codes.Unset},
		{"anonymous mutation", `mutation { logout }`, "mutation",
			map[string]string{"graphql.operation.type": "mutation", "graphql.operation.name": ""}, []string{"logout"}, codes.Unset},
		{"the operation picked by name", `query A { version } mutation B { logout }`, "query A",
			map[string]string{"graphql.operation.name": "A"}, []string{"version"}, codes.Unset},
		{"a document that fails validation", `query Broken { nope }`, "query Broken",
			map[string]string{"graphql.operation.name": "Broken", "error.type": "GRAPHQL_VALIDATION_FAILED"}, nil, codes.Unset},
		// The test's resolver has no services: signup fails as the
		// server's fault.
		{"a named mutation failing as the server's fault", `mutation AppSignup { signup(email: "a@example.com", password: "Tour-pass-123") { success } }`, "mutation AppSignup",
			map[string]string{"graphql.operation.type": "mutation", "graphql.operation.name": "AppSignup", "error.type": "INTERNAL_ERROR"}, []string{"signup"}, codes.Error},
		{"a document that does not parse", `query Broken {`, "", nil, nil, codes.Unset},
	}
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer tp.Shutdown(context.Background())
	h := newTestHandler()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exporter.Reset()
			// The request's span, as internal/server starts it.
			ctx, request := tp.Tracer("test").Start(context.Background(), "/graphql", trace.WithSpanKind(trace.SpanKindServer))
			body := map[string]string{"query": c.query}
			if c.name == "the operation picked by name" {
				body["operationName"] = "A"
			}
			req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(jsonBody(t, body)))
			req.Header.Set("Content-Type", "application/json")
			req = req.WithContext(api.WithInfo(ctx, &api.RequestInfo{Log: api.Logger(context.Background())}))
			h.ServeHTTP(httptest.NewRecorder(), req)
			request.End()

			spans := exporter.GetSpans()
			var op *tracetest.SpanStub
			for i, s := range spans {
				if s.Name != "/graphql" {
					op = &spans[i]
				}
			}
			if c.span == "" {
				if op != nil {
					t.Fatalf("a span %q for a document without an operation", op.Name)
				}
				return
			}
			if op == nil || op.Name != c.span || len(spans) != 2 {
				t.Fatalf("spans %v, want the request's and %q", names(spans), c.span)
			}
			if op.Parent.SpanID() != request.SpanContext().SpanID() || op.SpanContext.TraceID() != request.SpanContext().TraceID() {
				t.Errorf("%q is not a child of the request's span", op.Name)
			}
			if op.SpanKind != trace.SpanKindServer {
				t.Errorf("kind %v, want server", op.SpanKind)
			}
			got := map[attribute.Key]attribute.Value{}
			for _, a := range op.Attributes {
				got[a.Key] = a.Value
			}
			for k, want := range c.attrs {
				v, ok := got[attribute.Key(k)]
				if want == "" && ok {
					t.Errorf("%s = %q, want none", k, v.String())
				}
				if want != "" && v.AsString() != want {
					t.Errorf("%s = %q, want %q", k, v.String(), want)
				}
			}
			if fields := got[AttrRootFields].AsStringSlice(); !slices.Equal(fields, c.rootFields) {
				t.Errorf("%s = %q, want %q", AttrRootFields, fields, c.rootFields)
			}
			if op.Status.Code != c.status {
				t.Errorf("status %v, want %v", op.Status.Code, c.status)
			}
		})
	}
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
