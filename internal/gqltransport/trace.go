package gqltransport

import (
	"context"
	"net/http"
	"sort"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/tracing"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Each operation is a span under the request's, as OpenTelemetry's
// semantic conventions for GraphQL servers describe it: named
// "{type} {name}" ("mutation AppSignup"), or "{type}" for an anonymous
// operation, with graphql.operation.type and graphql.operation.name (the
// document's own name, so a trace is found by the name the app sends).
// The root fields asked for are AttrRootFields. graphql.document is not
// recorded: its literals can be passwords and codes.
//
// The span comes from the provider of the request's span (internal/server
// starts it when tracing is on); without one it is a no-op.

// AttrRootFields is the attribute of the root fields an operation asks
// for ("signup"; "me", "version"), once it validates.
const AttrRootFields = attribute.Key("herald.graphql.root_fields")

// startOperationSpan starts the span of op, once the document parsed and
// the operation it runs is known.
func startOperationSpan(ctx context.Context, op *ast.OperationDefinition) (context.Context, trace.Span) {
	typ := string(op.Operation)
	if typ == "" {
		typ = string(ast.Query)
	}
	name := typ
	attrs := []attribute.KeyValue{semconv.GraphQLOperationTypeKey.String(typ)}
	if op.Name != "" {
		name += " " + op.Name
		attrs = append(attrs, semconv.GraphQLOperationName(op.Name))
	}
	tracer := trace.SpanFromContext(ctx).TracerProvider().Tracer(tracing.Name)
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// noteRootFields records the distinct root fields of a validated operation.
func noteRootFields(span trace.Span, fields []*ast.Field) {
	if !span.IsRecording() {
		return
	}
	seen := map[string]bool{}
	var names []string
	for _, f := range fields {
		if !seen[f.Name] {
			seen[f.Name] = true
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	span.SetAttributes(AttrRootFields.StringSlice(names))
}

// noteFailure records an answer without data: error.type is its first
// error's code, and the status is Error when that code is the server's
// fault (5xx), as on the request's span; a client's mistake is not.
func noteFailure(span trace.Span, errs gqlerror.List) {
	if !span.IsRecording() || len(errs) == 0 {
		return
	}
	code := codeOf(errs[0])
	if code == "" {
		code = apperr.Internal
	}
	span.SetAttributes(semconv.ErrorTypeKey.String(string(code)))
	if apperr.Lookup(code).Status >= http.StatusInternalServerError {
		span.SetStatus(codes.Error, errs[0].Message)
	}
}
