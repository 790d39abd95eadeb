// Package metrics holds Herald's Prometheus collectors on a registry of its
// own (no global state), exposed at GET /metrics.
package metrics

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Metrics is the set of collectors.
type Metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	jobs     *prometheus.CounterVec
	emails   *prometheus.CounterVec
	// pushes and pushLatency cover every call to a push provider;
	// broadcastDeliveries every delivery outcome a broadcast records.
	pushes              *prometheus.CounterVec
	pushLatency         *prometheus.HistogramVec
	broadcastDeliveries *prometheus.CounterVec
	webhooks            *prometheus.CounterVec
}

// New registers every collector on a fresh registry.
func New() *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_http_requests_total", Help: "API requests by route, GraphQL operation and status.",
		}, []string{"route", "operation", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_http_request_duration_seconds", Help: "API request latency by route and GraphQL operation.",
			Buckets: prometheus.DefBuckets,
		}, []string{"route", "operation"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_jobs_total", Help: "Background job attempts by kind and outcome (completed, failed, cancelled, snoozed).",
		}, []string{"kind", "outcome"}),
		emails: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_emails_total", Help: "Emails by result: sent (accepted by the SMTP server), failed, or logged (the development mailer, HERALD_SMTP_URL unset).",
		}, []string{"result"}),
		pushes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_push_sends_total", Help: "Push provider calls by provider (fcm, apns, dev) and outcome (sent, dead_token, retryable, fatal, other).",
		}, []string{"provider", "outcome"}),
		pushLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "herald_push_provider_duration_seconds", Help: "Latency of one push provider call, by provider.",
			Buckets: prometheus.DefBuckets,
		}, []string{"provider"}),
		broadcastDeliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_broadcast_deliveries_total", Help: "Broadcast delivery outcomes recorded, by outcome (sent, invalid, failed, retry).",
		}, []string{"outcome"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "herald_webhook_deliveries_total", Help: "Webhook delivery attempts by outcome (success, retry, failed, disabled).",
		}, []string{"outcome"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.jobs, m.emails, m.pushes, m.pushLatency, m.broadcastDeliveries, m.webhooks,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry lets other packages register collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// ObserveRequest records one API request.
func (m *Metrics) ObserveRequest(route, operation string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, operation, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, operation).Observe(d.Seconds())
}

// JobMiddleware counts every job attempt by outcome.
func (m *Metrics) JobMiddleware() rivertype.Middleware {
	return river.WorkerMiddlewareFunc(func(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
		err := doInner(ctx)
		outcome := "completed"
		var snooze *river.JobSnoozeError
		var cancel *river.JobCancelError
		switch {
		case err == nil:
		case errors.As(err, &snooze):
			outcome = "snoozed"
		case errors.As(err, &cancel):
			outcome = "cancelled"
		default:
			outcome = "failed"
		}
		m.jobs.WithLabelValues(job.Kind, outcome).Inc()
		return err
	})
}

// WebhookDelivery counts one webhook delivery attempt by its outcome.
func (m *Metrics) WebhookDelivery(outcome string) { m.webhooks.WithLabelValues(outcome).Inc() }

// CountingMailer counts every email: sent or failed, or logged when s is
// the development mailer (which delivers nothing).
func (m *Metrics) CountingMailer(s mail.Sender) mail.Sender {
	ok := "sent"
	if mail.Logs(s) {
		ok = "logged"
	}
	return countingMailer{next: s, ok: m.emails.WithLabelValues(ok), failed: m.emails.WithLabelValues("failed")}
}

type countingMailer struct {
	next       mail.Sender
	ok, failed prometheus.Counter
}

func (c countingMailer) Send(ctx context.Context, msg mail.Message) error {
	err := c.next.Send(ctx, msg)
	if err != nil {
		c.failed.Inc()
	} else {
		c.ok.Inc()
	}
	return err
}

// CountingProvider counts every call to the push provider named provider
// by outcome, and observes its latency.
func (m *Metrics) CountingProvider(provider string, p push.Provider) push.Provider {
	return countingProvider{next: p, name: provider, m: m}
}

type countingProvider struct {
	next push.Provider
	name string
	m    *Metrics
}

func (c countingProvider) Send(ctx context.Context, t push.Target, n push.Notification) error {
	start := time.Now()
	err := c.next.Send(ctx, t, n)
	c.m.pushLatency.WithLabelValues(c.name).Observe(time.Since(start).Seconds())
	kind, _ := push.Classify(err)
	c.m.pushes.WithLabelValues(c.name, kind.String()).Inc()
	return err
}

// BroadcastDelivered counts one broadcast delivery outcome (for
// notifications.Config.Delivered).
func (m *Metrics) BroadcastDelivered(status string) {
	m.broadcastDeliveries.WithLabelValues(status).Inc()
}
