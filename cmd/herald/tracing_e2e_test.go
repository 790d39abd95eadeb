package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestTracingE2E: with tracing on, one trace spans a signup request (named
// after its route), its GraphQL operation (named after the document's
// operation, as OpenTelemetry's GraphQL conventions say), the store
// queries it makes, the email job it queued and that job's SMTP call; the
// request's log line carries the trace id beside the request id; a
// caller's traceparent is continued; an anonymous operation's span is
// named after its type.
func TestTracingE2E(t *testing.T) {
	t.Parallel()
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	h := startHeraldTraced(t, "sqlite", nil, tp)

	email := "traced@example.com"
	status, body := h.graphql(t, `mutation AppSignup($e: String!, $p: String!) { signup(email: $e, password: $p) { success } }`,
		map[string]any{"e": email, "p": testPassword})
	if status != http.StatusOK || jsonPath(body, "data", "signup", "success") != true {
		t.Fatalf("signup: %d %v", status, body)
	}
	h.SMTP.WaitForMessage(t, email, mailWait)

	spans := func() tracetest.SpanStubs { return exporter.GetSpans() }
	operation := operationSpan(t, spans(), "mutation AppSignup")
	attrs := spanAttributes(operation)
	if attrs["graphql.operation.name"] != "AppSignup" || attrs["graphql.operation.type"] != "mutation" || attrs["herald.graphql.root_fields"] != "[signup]" {
		t.Errorf("the operation's span has %v", attrs)
	}
	var request *tracetest.SpanStub
	for i, s := range spans() {
		if s.SpanContext.SpanID() == operation.Parent.SpanID() {
			request = &spans()[i]
		}
	}
	if request == nil || request.Name != "/graphql" {
		t.Fatalf("the operation's span is not a child of the request's span /graphql; spans: %v", spanNames(spans()))
	}
	traceID := request.SpanContext.TraceID()
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
	// That operation has no name: its span is named after its type.
	if attrs := spanAttributes(operationSpan(t, spans(), "query")); attrs["graphql.operation.type"] != "query" || attrs["graphql.operation.name"] != nil {
		t.Errorf("the anonymous query's span has %v", attrs)
	}

	// A subscription over WebSocket is an operation span too, under the
	// connection's request; it ends with the operation.
	w := dialWS(t, h, "graphql-transport-ws")
	w.init(map[string]any{"token": newAdminToken(t, h, "ops@example.com")})
	w.subscribe("1", jobUpdatedDoc, map[string]any{"id": "no-such-job"})
	expectWSError(t, w.next(), "1", "JOB_NOT_FOUND")
	eventually(t, func() bool {
		for _, s := range spans() {
			if s.Name == "subscription Job" {
				return true
			}
		}
		return false
	}, "no span named \"subscription Job\"; spans: %v", spanNames(spans()))
	sub := operationSpan(t, spans(), "subscription Job")
	if attrs := spanAttributes(sub); attrs["graphql.operation.type"] != "subscription" || attrs["graphql.operation.name"] != "Job" ||
		attrs["herald.graphql.root_fields"] != "[notificationJobUpdated]" || attrs["error.type"] != "JOB_NOT_FOUND" || !sub.Parent.IsValid() {
		t.Errorf("the subscription's span has %v (parent %v)", attrs, sub.Parent.SpanID())
	}
}

// operationSpan is the one span named name.
func operationSpan(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	var found []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			found = append(found, s)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d spans named %q; spans: %v", len(found), name, spanNames(spans))
	}
	return found[0]
}

// spanAttributes are a span's attributes, each as its value's string
// (a slice as "[a b]").
func spanAttributes(s tracetest.SpanStub) map[string]any {
	out := map[string]any{}
	for _, a := range s.Attributes {
		if a.Value.Type() == attribute.STRINGSLICE {
			out[string(a.Key)] = fmt.Sprint(a.Value.AsStringSlice())
			continue
		}
		out[string(a.Key)] = a.Value.String()
	}
	return out
}

func spanNames(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name+"@"+s.SpanContext.TraceID().String()[:8])
	}
	return out
}
