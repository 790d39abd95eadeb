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

// ConnectTimeout bounds the connection of an attempt, and
// TLSHandshakeTimeout its handshake: a dead or black-holed receiver fails
// in seconds, not in the whole Timeout.
const (
	ConnectTimeout      = 3 * time.Second
	TLSHandshakeTimeout = 5 * time.Second
)

// AttemptBound is the delivery job's timeout: the attempt, and time to
// record it. A slot is held at most this long without a release.
const AttemptBound = Timeout + 20*time.Second

// MaxRetryAfter caps the wait a receiver's Retry-After can ask for.
const MaxRetryAfter = 24 * time.Hour

// The classes of a failed attempt's error, all an attempt records of it:
// the raw error would name the URL, and would tell an open port from a
// closed one.
const (
	ErrorTimeout     = "timeout"     // no answer in time (connect, handshake or answer)
	ErrorUnreachable = "unreachable" // no connection: refused, reset, no route, no such name, or an address or port not allowed
	ErrorTLS         = "tls"         // the TLS handshake failed or the certificate was not accepted
	ErrorHTTPStatus  = "http_status" // an answer other than 2xx (the status code says which)
)

// SendError is a Sender's failure: no answer came. Reason is a short
// phrase of a fixed vocabulary for the log (never the URL).
type SendError struct {
	Class, Reason string
}

func (e *SendError) Error() string { return e.Class + ": " + e.Reason }

// DeliveryArgs is the job delivering one event to one endpoint.
type DeliveryArgs struct {
	EventID    string `json:"event_id"`
	EndpointID string `json:"endpoint_id"`
	// Attempts were made before this job: a delivery that waited for a
	// slot goes on in a new job.
	Attempts int `json:"attempts,omitempty"`
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
// Timeout, the body read to a bound. An error (a *SendError) means no
// answer came.
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
	return AttemptBound
}

// Work makes one attempt, when the endpoint has a slot free (see Slots);
// otherwise the delivery is parked and the job ends, holding no worker.
// A failure snoozes the job until the schedule's next retry (or the
// receiver's Retry-After, when later): snoozes do not use up River's
// attempts, and the attempt number is the attempts of earlier jobs of
// the delivery, plus River's attempts and the snoozes.
func (w *DeliveryWorker) Work(ctx context.Context, job *river.Job[DeliveryArgs]) error {
	var meta struct {
		Snoozes int `json:"snoozes"`
	}
	_ = json.Unmarshal(job.Metadata, &meta) // no metadata: no snoozes
	return w.Service.deliver(ctx, job.ID, job.Args, job.Args.Attempts+job.Attempt+meta.Snoozes)
}

// ErrorClass is the class of a Sender's error.
func ErrorClass(err error) (class, reason string) {
	var se *SendError
	if errors.As(err, &se) {
		return se.Class, se.Reason
	}
	return ErrorUnreachable, "no connection"
}

func (s *Service) deliver(ctx context.Context, jobID int64, args DeliveryArgs, n int) error {
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
	held, err := s.store.AcquireWebhookSlot(ctx, SlotRequest{EndpointID: ep.ID, EventID: args.EventID, JobID: jobID, Attempts: n - 1}, s.slots)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // the endpoint went, or was disabled, meanwhile
	}
	if err != nil {
		return err
	}
	if !held {
		return nil // parked (the next slot released sends it on, in a new job), or its event is gone
	}
	recorded := false
	defer func() {
		if !recorded {
			s.release(ctx, ep.ID, jobID)
		}
	}()
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
	reason := ""
	switch {
	case sendErr != nil:
		a.StatusCode = 0
		a.Error, reason = ErrorClass(sendErr)
	case !a.Succeeded():
		a.Error, reason = ErrorHTTPStatus, fmt.Sprintf("HTTP %d", res.StatusCode)
	}
	failingSince, err := s.store.RecordWebhookAttempt(ctx, a, jobID, s.slots)
	if err != nil {
		return err
	}
	recorded = true
	// The log names the endpoint by its id, never by its URL (whose query
	// string may hold a receiver's token).
	log := s.cfg.Logger.With("endpoint", ep.ID, "event", ev.ID, "type", ev.Type, "attempt", n)
	switch {
	case a.Succeeded():
		s.cfg.Outcome(OutcomeSuccess)
		return nil
	case a.StatusCode == 410:
		s.cfg.Outcome(OutcomeDisabled)
		log.WarnContext(ctx, "webhook endpoint disabled: it answered 410 Gone")
		return s.disable(ctx, ep.ID, "the endpoint answered 410 Gone")
	case failingSince != nil && !now.Before(failingSince.Add(s.cfg.DisableAfter)):
		s.cfg.Outcome(OutcomeDisabled)
		log.WarnContext(ctx, "webhook endpoint disabled: every attempt failed", "failing_since", failingSince, "last_error", a.Error, "reason", reason)
		return s.disable(ctx, ep.ID, fmt.Sprintf("every attempt failed since %s", failingSince.UTC().Format(time.RFC3339)))
	case n > len(s.cfg.Schedule):
		s.cfg.Outcome(OutcomeFailed)
		log.WarnContext(ctx, "webhook delivery given up after its last retry", "last_error", a.Error, "reason", reason)
		return nil
	}
	s.cfg.Outcome(OutcomeRetry)
	wait := s.cfg.Schedule[n-1]
	if res.RetryAfter > wait {
		wait = min(res.RetryAfter, MaxRetryAfter)
	}
	log.InfoContext(ctx, "webhook delivery failed; retrying", "err", a.Error, "reason", reason, "retry_in", wait)
	return river.JobSnooze(wait)
}

// release gives up the job's slot without an attempt (the event is gone,
// or Herald is stopping), even when ctx has ended; should it fail, the
// slot lapses after AttemptBound.
func (s *Service) release(ctx context.Context, endpointID string, jobID int64) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.store.ReleaseWebhookSlot(rctx, endpointID, jobID, s.slots); err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.cfg.Logger.WarnContext(ctx, "webhook slot not released; it lapses", "endpoint", endpointID, "err", err)
	}
}

func (s *Service) disable(ctx context.Context, id, reason string) error {
	_, err := s.store.SetWebhookEndpointDisabled(ctx, id, true, reason)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	return err
}
