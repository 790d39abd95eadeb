// Package tracing is Herald's OpenTelemetry tracing: a tracer provider
// configured by the standard OTEL_* variables (off unless they ask for it),
// and the spans around the outside systems Herald calls (push providers,
// SMTP, HTTP APIs such as Telegram's) and around background jobs, whose
// trace continues the request that queued them.
//
// Nothing here is global: the provider is passed to whoever starts spans.
// The HTTP server's spans are started in internal/server, the store's in
// internal/sqlstore.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Name is the instrumentation scope of every Herald tracer.
const Name = "github.com/herald-vpn/herald"

// Propagator carries trace context in W3C traceparent/tracestate, on
// incoming requests and in job metadata.
var Propagator = propagation.TraceContext{}

// Enabled reports whether the OTEL_* variables turn tracing on: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is otlp; and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says no.
// Another exporter name is an error.
func Enabled(getenv func(string) string) (bool, error) {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, nil
	case "":
		return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER: %q is not supported (otlp or none)", exp)
	}
}

// protocol is the OTLP transport the variables choose (http/protobuf by
// default, as the specification says).
func protocol(getenv func(string) string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: %q is not supported (http/protobuf or grpc)", p)
}

// FromEnv returns the tracer provider the OTEL_* variables configure, and
// its shutdown (which flushes the spans not yet exported). With tracing
// off the provider is nil (see Tracer) and shutdown does nothing. The exporter reads
// its endpoint, headers, timeout and TLS settings from the standard
// OTEL_EXPORTER_OTLP_* variables, and the SDK its sampler
// (OTEL_TRACES_SAMPLER) and resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES).
func FromEnv(ctx context.Context, getenv func(string) string, version string) (trace.TracerProvider, func(context.Context) error, error) {
	noShutdown := func(context.Context) error { return nil }
	on, err := Enabled(getenv)
	if err != nil || !on {
		return nil, noShutdown, err
	}
	proto, err := protocol(getenv)
	if err != nil {
		return nil, noShutdown, err
	}
	var exp sdktrace.SpanExporter
	if proto == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, noShutdown, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the defaults.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "herald"), attribute.String("service.version", version)),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, noShutdown, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Tracer is Herald's tracer from tp (a no-op one when tp is nil).
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer(Name)
}

// End ends span, recording err (if any) as its error status.
func End(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
