package main

import (
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTracingE2E: with tracing on, one trace spans a signup request (named
// after its route and GraphQL operation), the store queries it makes, the
// email job it queued and that job's SMTP call; the request's log line
// carries the trace id beside the request id; a caller's traceparent is
// continued.
func TestTracingE2E(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	h := startHeraldTraced(t, "sqlite", nil, tp)

	email := "traced@example.com"
	status, body := h.graphql(t, `mutation($e: String!, $p: String!) { signup(email: $e, password: $p) { success } }`,
		map[string]any{"e": email, "p": testPassword})
	if status != http.StatusOK || jsonPath(body, "data", "signup", "success") != true {
		t.Fatalf("signup: %d %v", status, body)
	}
	h.SMTP.WaitForMessage(t, email, mailWait)

	var request sdktrace.ReadOnlySpan
	spans := func() tracetest.SpanStubs { return exporter.GetSpans() }
	for _, s := range spans().Snapshots() {
		for _, a := range s.Attributes() {
			if a.Key == "graphql.operation.name" && a.Value.AsString() == "signup" && s.Name() == "/graphql" {
				request = s
			}
		}
	}
	if request == nil {
		t.Fatalf("no span named /graphql for the signup; spans: %v", spanNames(spans()))
	}
	traceID := request.SpanContext().TraceID()
	inTrace := func(name string) []tracetest.SpanStub {
		var out []tracetest.SpanStub
		for _, s := range spans() {
			if s.SpanContext.TraceID() == traceID && strings.HasPrefix(s.Name, name) {
				out = append(out, s)
			}
		}
		return out
	}
	// The job's span ends after the message is on the fake server: wait
	// for it.
	eventually(t, func() bool { return len(inTrace("job code_email")) > 0 }, "the email job's span is not in the signup's trace; spans: %v", spanNames(spans()))
	if len(inTrace("smtp.send")) == 0 {
		t.Fatalf("no smtp.send span in the signup's trace")
	}
	if len(inTrace("db ")) == 0 {
		t.Errorf("no store query span in the signup's trace")
	}
	jobs := inTrace("job code_email")
	if smtp := inTrace("smtp.send")[0]; smtp.Parent.SpanID() != jobs[0].SpanContext.SpanID() {
		t.Errorf("smtp.send's parent is %s, want the job's span %s", smtp.Parent.SpanID(), jobs[0].SpanContext.SpanID())
	}
	found := false
	for _, line := range h.logLines(t) {
		if line["msg"] == "request" && line["operation"] == "signup" {
			found = line["trace_id"] == traceID.String() && line["request_id"] != nil && line["request_id"] != ""
		}
	}
	if !found {
		t.Errorf("the signup's request log line lacks trace_id %s beside its request_id", traceID)
	}

	// A caller's trace is continued.
	const parentTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	h.graphql(t, `{ version }`, nil, withHeader("traceparent", "00-"+parentTrace+"-00f067aa0ba902b7-01"))
	continued := false
	for _, s := range spans() {
		if s.Name == "/graphql" && s.SpanContext.TraceID().String() == parentTrace && s.Parent.IsRemote() {
			continued = true
		}
	}
	if !continued {
		t.Errorf("the request with traceparent %s did not continue that trace", parentTrace)
	}
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"@"+s.SpanContext.TraceID().String()[:8])
	}
	return out
}
