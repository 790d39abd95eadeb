// Package metrics holds Herald's Prometheus collectors on a registry of its
// own (no global state), exposed at GET /metrics.
package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
			Name: "herald_emails_total", Help: "Emails by result (sent, failed).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.latency, m.jobs, m.emails,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry lets other packages register collectors of their own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

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

// CountingMailer counts every email sent or failed.
func (m *Metrics) CountingMailer(s mail.Sender) mail.Sender { return countingMailer{s, m} }

type countingMailer struct {
	next mail.Sender
	m    *Metrics
}

func (c countingMailer) Send(ctx context.Context, msg mail.Message) error {
	err := c.next.Send(ctx, msg)
	if err != nil {
		c.m.emails.WithLabelValues("failed").Inc()
	} else {
		c.m.emails.WithLabelValues("sent").Inc()
	}
	return err
}
