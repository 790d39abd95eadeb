package tracing

import (
	"context"
	"encoding/json"
	"net/http"
	"path"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Provider gives every send through the push provider named name (fcm,
// apns, dev) a client span.
func Provider(tp trace.TracerProvider, name string, p push.Provider) push.Provider {
	return tracedProvider{next: p, name: name, tracer: Tracer(tp)}
}

type tracedProvider struct {
	next   push.Provider
	name   string
	tracer trace.Tracer
}

func (t tracedProvider) Send(ctx context.Context, target push.Target, n push.Notification) error {
	ctx, span := t.tracer.Start(ctx, "push.send "+t.name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("push.provider", t.name), attribute.String("push.platform", target.Platform)))
	err := t.next.Send(ctx, target, n)
	kind, _ := push.Classify(err)
	span.SetAttributes(attribute.String("push.outcome", kind.String()))
	End(span, err)
	return err
}

// Mailer gives every email sent a client span (without the recipient or
// the body: they are personal or secret).
func Mailer(tp trace.TracerProvider, s mail.Sender) mail.Sender {
	return tracedMailer{next: s, tracer: Tracer(tp)}
}

type tracedMailer struct {
	next   mail.Sender
	tracer trace.Tracer
}

func (t tracedMailer) Send(ctx context.Context, m mail.Message) error {
	ctx, span := t.tracer.Start(ctx, "smtp.send", trace.WithSpanKind(trace.SpanKindClient))
	err := t.next.Send(ctx, m)
	End(span, err)
	return err
}

// Transport gives every request through rt a client span named after the
// system and the URL's last path element ("telegram sendMessage"). The URL
// itself is not recorded: Telegram's holds the bot token.
func Transport(tp trace.TracerProvider, system string, rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return tracedTransport{next: rt, system: system, tracer: Tracer(tp)}
}

type tracedTransport struct {
	next   http.RoundTripper
	system string
	tracer trace.Tracer
}

func (t tracedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, span := t.tracer.Start(r.Context(), t.system+" "+path.Base(r.URL.Path), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("http.request.method", r.Method), attribute.String("server.address", r.URL.Host)))
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if resp != nil {
		span.SetAttributes(attribute.Int("http.response.status_code", resp.StatusCode))
	}
	End(span, err)
	return resp, err
}

// JobMiddleware carries the trace of whoever inserts a job into the job's
// metadata (W3C traceparent), and runs each attempt in a span that is a
// child of it: a signup's email job is part of the signup's trace.
func JobMiddleware(tp trace.TracerProvider) rivertype.Middleware {
	return &jobMiddleware{tracer: Tracer(tp)}
}

type jobMiddleware struct {
	river.MiddlewareDefaults
	tracer trace.Tracer
}

// metadataKey holds the carried trace context in a job's metadata.
const metadataKey = "trace"

func (m *jobMiddleware) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	carrier := propagation.MapCarrier{}
	Propagator.Inject(ctx, carrier)
	if len(carrier) > 0 {
		for _, p := range params {
			meta := map[string]any{}
			if len(p.Metadata) > 0 {
				if err := json.Unmarshal(p.Metadata, &meta); err != nil {
					continue // metadata of a shape not ours: leave it be
				}
			}
			meta[metadataKey] = map[string]string(carrier)
			if b, err := json.Marshal(meta); err == nil {
				p.Metadata = b
			}
		}
	}
	return doInner(ctx)
}

func (m *jobMiddleware) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	var meta struct {
		Trace map[string]string `json:"trace"`
	}
	if len(job.Metadata) > 0 && json.Unmarshal(job.Metadata, &meta) == nil && len(meta.Trace) > 0 {
		ctx = Propagator.Extract(ctx, propagation.MapCarrier(meta.Trace))
	}
	ctx, span := m.tracer.Start(ctx, "job "+job.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("job.kind", job.Kind), attribute.String("job.queue", job.Queue),
			attribute.Int64("job.id", job.ID), attribute.Int("job.attempt", job.Attempt)))
	err := doInner(ctx)
	End(span, err)
	return err
}
