package notifications

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/storage"
)

// Job listing page sizes.
const (
	DefaultPageSize = 20
	MaxPageSize     = 100
)

// Config holds the sending settings an operator may tune.
type Config struct {
	// BatchSize is the number of devices claimed per batch (default 500).
	BatchSize int
	// Concurrency bounds the sends in flight per broadcast (default 64).
	Concurrency int
	// SendTimeout bounds one device's send, retries included (default 30s).
	SendTimeout time.Duration
	// SendRetry is the retry of a single-device send: short, because a
	// caller waits (default 3 attempts, 200ms doubling, at most 2s).
	SendRetry push.RetryPolicy
	// BroadcastRetry is the in-place retry of one broadcast send (default
	// 3 attempts, 1s doubling, at most 10s); a device still failing is
	// tried again later in the broadcast.
	BroadcastRetry push.RetryPolicy
	// StopGrace is how long sends in flight may finish when the worker is
	// stopped (default 5s); outcomes known by then are written, the rest
	// are sent again by the next run.
	StopGrace time.Duration
	// LeaseTTL is how long a broadcast stays with a worker that stopped
	// renewing its lease, i.e. the delay before another takes over after a
	// crash (default 30s).
	LeaseTTL time.Duration
	// FlushEvery and FlushSize bound how many outcomes wait unwritten
	// (defaults 100ms and 100).
	FlushEvery time.Duration
	FlushSize  int
	Logger     *slog.Logger
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.BatchSize <= 0 {
		c.BatchSize = 500
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 64
	}
	if c.SendTimeout <= 0 {
		c.SendTimeout = 30 * time.Second
	}
	if c.SendRetry.Attempts == 0 {
		c.SendRetry = push.RetryPolicy{Attempts: 3, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second, Jitter: 0.2}
	}
	if c.BroadcastRetry.Attempts == 0 {
		c.BroadcastRetry = push.RetryPolicy{Attempts: 3, BaseBackoff: time.Second, MaxBackoff: 10 * time.Second, Jitter: 0.5}
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 5 * time.Second
	}
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.FlushEvery <= 0 {
		c.FlushEvery = 100 * time.Millisecond
	}
	if c.FlushSize <= 0 {
		c.FlushSize = 100
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = func() time.Time { return time.Now().UTC() }
	}
	return c
}

// Service sends notifications.
type Service struct {
	store    Store
	provider push.Provider
	cfg      Config
}

// NewService returns the service. provider is usually a push.NewRouter of
// the configured providers, each wrapped in RateLimit.
func NewService(store Store, provider push.Provider, cfg Config) *Service {
	return &Service{store: store, provider: provider, cfg: cfg.withDefaults()}
}

// StatusSent is SendToDevice's status.
const StatusSent = "sent"

// SendResult is the answer of a single-device send.
type SendResult struct {
	Status  string // StatusSent
	Message string
}

// SendToDevice pushes n to one device now. INVALID_INPUT for a bad
// notification; DEVICE_NOT_FOUND for an unknown or inactive device;
// INVALID_PUSH_TOKEN when its token is already known to be invalid (the
// provider is not called) or the provider says it is dead (the device is
// marked); UPSTREAM_ERROR when the provider keeps failing after a short
// bounded retry, or is misconfigured.
func (s *Service) SendToDevice(ctx context.Context, deviceID string, n Notification) (SendResult, error) {
	if err := n.Validate(); err != nil {
		return SendResult{}, err
	}
	d, err := s.store.DeviceByID(ctx, deviceID)
	if errors.Is(err, storage.ErrNotFound) || (err == nil && !d.Active) {
		return SendResult{}, apperr.Newf(apperr.DeviceNotFound, "No active device with the id %q.", deviceID)
	}
	if err != nil {
		return SendResult{}, err
	}
	if d.PushTokenStatus != devices.TokenValid || d.PushToken == "" {
		return SendResult{}, invalidToken(deviceID)
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
	err = push.SendWithRetry(sctx, s.provider, push.Target{Platform: d.Platform, Token: d.PushToken}, n.push(), s.cfg.SendRetry)
	cancel()
	kind, _ := push.Classify(err)
	switch kind {
	case push.Sent:
		return SendResult{Status: StatusSent, Message: fmt.Sprintf("Notification sent to device %s.", deviceID)}, nil
	case push.DeadToken:
		if err := s.store.InvalidatePushToken(context.WithoutCancel(ctx), d.ID, d.PushToken); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "marking a dead push token invalid", "device_id", d.ID, "err", err)
		}
		s.cfg.Logger.InfoContext(ctx, "push token is dead; device marked invalid", "device_id", d.ID, "reason", reasonOf(err))
		return SendResult{}, invalidToken(deviceID)
	case push.Fatal:
		s.cfg.Logger.ErrorContext(ctx, "PUSH PROVIDER MISCONFIGURED: check the FCM/APNs credentials and settings", "device_id", d.ID, "platform", d.Platform, "err", err)
		return SendResult{}, apperr.Newf(apperr.UpstreamError, "The push provider refused the request; the operator has been alerted.")
	case push.Retryable:
		s.cfg.Logger.WarnContext(ctx, "push provider unavailable", "device_id", d.ID, "err", err)
		return SendResult{}, apperr.Newf(apperr.UpstreamError, "The push provider is unavailable; try again later.")
	}
	if ctx.Err() != nil {
		return SendResult{}, ctx.Err()
	}
	if r := reasonOf(err); r == "InvalidData" || r == "INVALID_ARGUMENT" {
		return SendResult{}, invalidInput("data", "The push provider refused the notification's data.")
	}
	s.cfg.Logger.WarnContext(ctx, "push failed", "device_id", d.ID, "err", err)
	return SendResult{}, apperr.Newf(apperr.UpstreamError, "The push provider did not accept the notification.")
}

func invalidToken(deviceID string) error {
	return apperr.Newf(apperr.InvalidPushToken, "The push token of device %q is invalid or expired; the app must register a new one.", deviceID)
}

func reasonOf(err error) string {
	if pe, ok := errors.AsType[*push.Error](err); ok {
		return pe.Reason
	}
	return ""
}

// Broadcast queues n for every active device with a valid token: the job
// row and its first River job are written in one transaction, and the job
// is returned queued with TotalRecipients counted in that transaction.
// INVALID_INPUT for a bad notification.
func (s *Service) Broadcast(ctx context.Context, n Notification) (Job, error) {
	data, err := n.validate()
	if err != nil {
		return Job{}, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Job{}, err
	}
	return s.store.CreateBroadcast(ctx, NewBroadcast{ID: id.String(), Subject: n.Subject, Content: n.Content, Data: data}, BroadcastArgs{JobID: id.String()})
}

// QueuedMessage is the message sendNotificationToAll shows.
func QueuedMessage(j Job) string {
	if j.TotalRecipients == 1 {
		return "Notification queued for 1 device."
	}
	return fmt.Sprintf("Notification queued for %d devices.", j.TotalRecipients)
}

// Job returns a broadcast job; JOB_NOT_FOUND when unknown.
func (s *Service) Job(ctx context.Context, id string) (Job, error) {
	j, err := s.store.BroadcastJob(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Job{}, jobNotFound(id)
	}
	return j, err
}

// JobPage is one page of broadcast jobs.
type JobPage struct {
	Jobs        []Job
	EndCursor   string
	HasNextPage bool
}

// Jobs lists broadcast jobs, newest first, first at a time (default 20, at
// most 100) after the opaque cursor after.
func (s *Service) Jobs(ctx context.Context, first int, after string) (JobPage, error) {
	if first == 0 {
		first = DefaultPageSize
	}
	if first < 0 || first > MaxPageSize {
		return JobPage{}, apperr.Invalid("first", fmt.Sprintf("between 1 and %d", MaxPageSize), fmt.Sprint(first))
	}
	before, err := decodeCursor(after)
	if err != nil {
		return JobPage{}, apperr.Invalid("after", "a cursor from an earlier page", after)
	}
	js, err := s.store.BroadcastJobs(ctx, before, first+1)
	if err != nil {
		return JobPage{}, err
	}
	p := JobPage{Jobs: js}
	if len(js) > first {
		p.Jobs, p.HasNextPage = js[:first], true
	}
	if len(p.Jobs) > 0 {
		p.EndCursor = encodeCursor(p.Jobs[len(p.Jobs)-1].ID)
	}
	return p, nil
}

// Cancel stops a queued or running broadcast: the batch being sent
// finishes, no further batch starts. A finished job is returned as it is.
// JOB_NOT_FOUND when unknown.
func (s *Service) Cancel(ctx context.Context, id string) (Job, error) {
	j, err := s.store.CancelBroadcast(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Job{}, jobNotFound(id)
	}
	return j, err
}

// Recover queues a River job for every unfinished broadcast, so that a
// broadcast whose worker was killed resumes (after its lease expires)
// without waiting for River's stuck-job rescuer. Call it once at start-up;
// a broadcast whose worker is alive is not disturbed (the extra River job
// waits for the lease and ends when the broadcast does).
func (s *Service) Recover(ctx context.Context) (int, error) {
	ids, err := s.store.UnfinishedBroadcasts(ctx)
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if _, err := s.store.InsertJob(ctx, BroadcastArgs{JobID: id}, nil); err != nil {
			return i, err
		}
	}
	if len(ids) > 0 {
		s.cfg.Logger.InfoContext(ctx, "resuming unfinished broadcasts", "jobs", len(ids))
	}
	return len(ids), nil
}

func jobNotFound(id string) error {
	return apperr.Newf(apperr.JobNotFound, "No notification job with the id %q.", id)
}

func encodeCursor(id string) string { return base64.RawURLEncoding.EncodeToString([]byte("j:" + id)) }

func decodeCursor(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return "", err
	}
	id, ok := strings.CutPrefix(string(b), "j:")
	if !ok || id == "" {
		return "", errors.New("not a job cursor")
	}
	return id, nil
}

// DecodeData decodes a job's stored data; sqlstore uses it. Numbers are
// kept as json.Number so that large integers reach the devices unchanged.
func DecodeData(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}
