package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// Queue is the River queue of deliveries, apart from email and push so
// that a slow receiver delays neither.
const Queue = "webhooks"

// Timeout bounds one attempt: no answer within it is a failure.
const Timeout = 10 * time.Second

// MaxRetryAfter caps the wait a receiver's Retry-After can ask for.
const MaxRetryAfter = 24 * time.Hour

// DeliveryArgs is the job delivering one event to one endpoint.
type DeliveryArgs struct {
	EventID    string `json:"event_id"`
	EndpointID string `json:"endpoint_id"`
}

func (DeliveryArgs) Kind() string { return "webhook_delivery" }

// InsertOpts puts deliveries on their queue.
func (DeliveryArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: Queue} }

// Request is one signed delivery.
type Request struct {
	URL     string
	Headers Headers
	Body    []byte
}

// Response is what a receiver answered.
type Response struct {
	StatusCode int
	// RetryAfter is the Retry-After header's wait, 0 when absent.
	RetryAfter time.Duration
}

// Sender posts a delivery (httpsend.Sender): no redirect followed, at most
// Timeout, the body read to a bound. An error means no answer came.
type Sender interface {
	Send(ctx context.Context, r Request) (Response, error)
}

// DeliveryWorker works DeliveryArgs; register it with river.AddWorker.
type DeliveryWorker struct {
	river.WorkerDefaults[DeliveryArgs]
	Service *Service
}

// Timeout: the attempt's own bound, and time to record it.
func (w *DeliveryWorker) Timeout(*river.Job[DeliveryArgs]) time.Duration {
	return Timeout + 20*time.Second
}

// Work makes one attempt. A failure snoozes the job until the schedule's
// next retry (or the receiver's Retry-After, when later): snoozes do not
// use up River's attempts, and the attempt number is River's attempts plus
// the snoozes.
func (w *DeliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta) // no metadata: no snoozes
	return w.Service.deliver(ctx, job.Args, job.Attempt+meta.Snoozes)
}

func (s *Service) deliver(ctx context.Context, args DeliveryArgs, n int) error {
	ep, err := s.store.WebhookEndpoint(ctx, args.EndpointID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // deleted: nothing to deliver to
	}
	if err != nil {
		return err
	}
	if !ep.Enabled() {
		return nil
	}
	ev, err := s.store.WebhookEvent(ctx, args.EventID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // pruned
	}
	if err != nil {
		return err
	}
	now := s.cfg.Now()
	h, err := SignedHeaders(ep.SigningSecrets(now), ev.ID, now, ev.Payload)
	if err != nil {
		return river.JobCancel(fmt.Errorf("endpoint %s: %w", ep.ID, err))
	}
	actx, cancel := context.WithTimeout(ctx, Timeout)
	res, sendErr := s.sender.Send(actx, Request{URL: ep.URL, Headers: h, Body: ev.Payload})
	cancel()
	if sendErr != nil && ctx.Err() != nil {
		return ctx.Err() // Herald is stopping: River retries the job after the restart
	}
	id, err := uuid.NewV7()
	if err != nil {
		return err
	}
	a := Attempt{ID: id.String(), EndpointID: ep.ID, EventID: ev.ID, EventType: ev.Type, Attempt: n,
		StatusCode: res.StatusCode, Duration: s.cfg.Now().Sub(now), CreatedAt: now}
	switch {
	case sendErr != nil:
		a.StatusCode, a.Error = 0, sendErr.Error()
	case !a.Succeeded():
		a.Error = fmt.Sprintf("HTTP %d", res.StatusCode)
	}
	failingSince, err := s.store.RecordWebhookAttempt(ctx, a)
	if err != nil {
		return err
	}
	log := s.cfg.Logger.With("endpoint", ep.ID, "event", ev.ID, "type", ev.Type, "attempt", n)
	switch {
	case a.Succeeded():
		s.cfg.Outcome(OutcomeSuccess)
		return nil
	case a.StatusCode == 410:
		s.cfg.Outcome(OutcomeDisabled)
		log.WarnContext(ctx, "webhook endpoint disabled: it answered 410 Gone", "url", ep.URL)
		return s.disable(ctx, ep.ID, "the endpoint answered 410 Gone")
	case failingSince != nil && !now.Before(failingSince.Add(s.cfg.DisableAfter)):
		s.cfg.Outcome(OutcomeDisabled)
		log.WarnContext(ctx, "webhook endpoint disabled: every attempt failed", "url", ep.URL, "failing_since", failingSince, "last_error", a.Error)
		return s.disable(ctx, ep.ID, fmt.Sprintf("every attempt failed since %s", failingSince.UTC().Format(time.RFC3339)))
	case n > len(s.cfg.Schedule):
		s.cfg.Outcome(OutcomeFailed)
		log.WarnContext(ctx, "webhook delivery given up after its last retry", "last_error", a.Error)
		return nil
	}
	s.cfg.Outcome(OutcomeRetry)
	wait := s.cfg.Schedule[n-1]
	if res.RetryAfter > wait {
		wait = min(res.RetryAfter, MaxRetryAfter)
	}
	log.InfoContext(ctx, "webhook delivery failed; retrying", "err", a.Error, "retry_in", wait)
	return river.JobSnooze(wait)
}

func (s *Service) disable(ctx context.Context, id, reason string) error {
	_, err := s.store.SetWebhookEndpointDisabled(ctx, id, true, reason)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
