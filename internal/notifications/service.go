package notifications

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/preferences"
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
	// Tokens check the bare push tokens of SendToToken as registration
	// checks a device's.
	Tokens devices.TokenRules
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
	// crash (default 20s). Sweep, run every SweepEvery, queues the
	// takeover.
	LeaseTTL time.Duration
	// OutcomeHold is the longest a send's outcome waits for its batch to
	// settle before it is written as a row of its own (default a quarter
	// of LeaseTTL, at most 1s).
	OutcomeHold time.Duration
	// Slice is how long one River attempt works a broadcast before it
	// snoozes and goes on (default 5m), so that River can rescue the
	// attempt of a process that died.
	Slice time.Duration
	// Live is the broker that carries progress to subscribers, on this
	// replica and (through its bus) the others; nil: one of its own.
	Live *live.Broker
	// ProgressInterval is the least time between two progress events of
	// one job (default DefaultProgressInterval); the final one is not held.
	ProgressInterval time.Duration
	// Wire writes a job's state into a progress event and reads it back
	// on every replica: the doors' wire type (view.NotificationJobWire), so
	// that an event carries what subscribers are shown. Required.
	Wire live.Codec[Job]
	// Delivered, when set, is told each broadcast delivery's outcome
	// (DeliverySent, DeliveryInvalid, DeliveryFailed or DeliveryRetry) as
	// it is recorded: the metrics count them.
	Delivered func(status string)
	Logger    *slog.Logger
	// Chats delivers the telegram channel of SendToUser; nil: the channel
	// has no chat to reach.
	Chats ChatSender
	// Inbox keeps what sends ask to keep in the in-app inbox; nil: such a
	// request keeps nothing.
	Inbox InboxKeeper
	// Categories are the notification categories sends name (default the
	// built-in ones).
	Categories preferences.Catalogue
	// Digests are the categories whose sends to a user are folded into
	// one per window (HERALD_NOTIFICATION_DIGESTS); none by default.
	Digests preferences.Digests
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
		c.LeaseTTL = DefaultLeaseTTL
	}
	if c.OutcomeHold <= 0 {
		c.OutcomeHold = min(c.LeaseTTL/4, time.Second)
	}
	if c.Slice <= 0 {
		c.Slice = 5 * time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Live == nil {
		c.Live = live.New(nil, c.Logger)
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Now == nil {
		c.Now = func() time.Time { return time.Now().UTC() }
	}
	if c.Categories.Empty() {
		c.Categories, _ = preferences.NewCatalogue(nil)
	}
	return c
}

// DefaultLeaseTTL is Config.LeaseTTL's default.
const DefaultLeaseTTL = 20 * time.Second

// Service sends notifications.
type Service struct {
	store    Store
	provider push.Provider
	cfg      Config
	live     *live.Broker
	progress *live.Announcer
	engine   *fanout.Engine[Job]
}

// NewService returns the service. provider is usually a push.NewRouter of
// the configured providers, each wrapped in RateLimit.
func NewService(store Store, provider push.Provider, cfg Config) *Service {
	if cfg.Wire.Encode == nil || cfg.Wire.Decode == nil {
		panic("notifications: Config.Wire is required (view.NotificationJobWire)")
	}
	s := &Service{store: store, provider: provider, cfg: cfg.withDefaults()}
	s.live = s.cfg.Live
	s.progress = fanout.NewProgress(s.live, s.cfg.ProgressInterval, ProgressTopic, s.store.BroadcastJob, s.cfg.Wire, Job.Finished, s.cfg.Logger, "broadcast")
	s.engine = &fanout.Engine[Job]{Name: "broadcast", Channel: pushChannel{s}, LeaseTTL: s.cfg.LeaseTTL, Now: s.cfg.Now, Log: s.cfg.Logger,
		Changed: s.progress.Changed, Finished: Job.Finished, Summary: summary, NotFound: jobNotFound, GiveUp: giveUp}
	return s
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
	if disabled, err := s.store.AccountDisabled(ctx, d.AccountID); err != nil {
		return SendResult{}, err
	} else if disabled {
		return SendResult{}, apperr.Newf(apperr.DeviceNotFound, "Device %q belongs to a disabled account; it gets no notifications.", deviceID)
	}
	if err := s.deliver(ctx, d, n); err != nil {
		return SendResult{}, err
	}
	return SendResult{Status: StatusSent, Message: fmt.Sprintf("Notification sent to device %s.", deviceID)}, nil
}

// deliver pushes n to device d now, with the short retry of a caller
// that waits, and says how it went in the catalogue's terms: nil when the
// provider accepted it; INVALID_PUSH_TOKEN when the token is known or
// found dead (the device is marked); INVALID_INPUT when the provider
// refused the data; UPSTREAM_ERROR when the provider keeps failing or is
// misconfigured; the context's error when the caller went away.
func (s *Service) deliver(ctx context.Context, d devices.Device, n Notification) error {
	deviceID := d.ID
	if d.PushTokenStatus != devices.TokenValid || d.PushToken == "" {
		return invalidToken(deviceID)
	}
	sctx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
	err := push.SendWithRetry(sctx, s.provider, push.Target{Platform: d.Platform, Token: d.PushToken}, n.push(), s.cfg.SendRetry)
	cancel()
	kind, _ := push.Classify(err)
	switch kind {
	case push.Sent:
		return nil
	case push.DeadToken:
		if d.ID == "" { // a bare token: no device to mark
			return apperr.Newf(apperr.InvalidPushToken, "The push token is invalid or expired (%s).", reasonOf(err))
		}
		if err := s.store.InvalidatePushToken(context.WithoutCancel(ctx), d.ID, d.PushToken); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "marking a dead push token invalid", "device_id", d.ID, "err", err)
		}
		s.cfg.Logger.InfoContext(ctx, "push token is dead; device marked invalid", "device_id", d.ID, "reason", reasonOf(err))
		return invalidToken(deviceID)
	case push.Fatal:
		s.cfg.Logger.ErrorContext(ctx, "PUSH PROVIDER MISCONFIGURED: check the FCM/APNs/VAPID/HMS credentials and settings", "device_id", d.ID, "platform", d.Platform, "err", err)
		return apperr.Newf(apperr.UpstreamError, "The push provider refused the request; the operator has been alerted.")
	case push.Retryable:
		s.cfg.Logger.WarnContext(ctx, "push provider unavailable", "device_id", d.ID, "err", err)
		return apperr.Newf(apperr.UpstreamError, "The push provider is unavailable; try again later.")
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if reasonOf(err) == "PayloadTooLarge" {
		return invalidInput("notification", "The notification is too large for Web Push: its subject, content, data and options must fit 3993 bytes of JSON.")
	}
	if pe, ok := errors.AsType[*push.Error](err); ok && pe.Provider == "hms" && pe.Reason == hmsBodyTooLarge {
		return invalidInput("notification", "The notification is too large for Huawei Push Kit: its subject, content, data and options must fit a 4096-byte message.")
	}
	if r := reasonOf(err); r == "InvalidData" || r == "INVALID_ARGUMENT" {
		return invalidInput("data", "The push provider refused the notification's data.")
	}
	s.cfg.Logger.WarnContext(ctx, "push failed", "device_id", d.ID, "err", err)
	return apperr.Newf(apperr.UpstreamError, "The push provider did not accept the notification.")
}

// hmsBodyTooLarge is Push Kit's result code for a message over its size
// limit (see internal/push/hms/errors.go).
const hmsBodyTooLarge = "80300008"

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
	return s.BroadcastWith(ctx, n, BroadcastOptions{})
}

// MaxSchedule is how far ahead a broadcast may be scheduled.
const MaxSchedule = 30 * 24 * time.Hour

// scheduleSkew is how far in the past a sendAt may be and still be taken
// as "now" (clocks differ).
const scheduleSkew = time.Minute

// BroadcastOptions are sendNotificationToAll's optional arguments.
type BroadcastOptions struct {
	// SendAt schedules the broadcast: it is created in status scheduled
	// and starts at that time on any replica. At most MaxSchedule ahead; a
	// time up to a minute past means now.
	SendAt *time.Time
	// Audience narrows the recipients (see Audience); totalRecipients
	// counts it.
	Audience Audience
	// Category is the notification category ("" is
	// preferences.DefaultCategory); a recipient who turned it off on the
	// device's channel is skipped when the walk reaches it.
	Category string
	// Inbox also keeps the notification in the inbox of every account
	// the audience reaches (an account with an active device in it) that
	// allows the category on the inbox channel: written by the job when
	// it starts, once (Job.InboxItems counts them).
	Inbox bool
	// SendAtLocal sends "at 09:00 in each recipient's time zone": one job,
	// scheduled at the earliest such instant (UTC+14), that holds each
	// device until that time in its owner's zone (UTC without one). Not
	// with SendAt.
	SendAtLocal *LocalSendTime
	// Urgent passes through the recipients' quiet hours and the
	// category's cap, as on sends to a user; otherwise a device whose
	// owner is inside their quiet hours when the walk reaches it is held
	// and sent at the end of the window, by the same job.
	Urgent bool
	// Channels are the broadcast's channels, the values of the user
	// send's: ChannelPush (every device in the audience: push and web
	// push) and ChannelEmail (one email per account of the audience with
	// a verified real address, however many devices it has). None is push
	// alone; another (telegram too: the Telegram broadcast is the
	// messenger's) is INVALID_INPUT (field channels).
	Channels []string
}

// LocalSendTime is sendAtLocal as the doors take it: a date (YYYY-MM-DD)
// and a wall-clock time (HH:MM).
type LocalSendTime struct {
	Date string `json:"date"`
	Time string `json:"time"`
}

// Time zones span UTC-12 to UTC+14: a wall-clock time on a date comes
// first in UTC+14 and last in UTC-12.
const (
	earliestZone = 14 * time.Hour
	latestZone   = 12 * time.Hour
)

// localTime checks sendAtLocal and returns it with the instant the job
// starts (nil: now, the time has come in some zone already).
// VALIDATION_ERROR naming the field for a malformed date or time, a time
// past in every zone, one more than 30 days ahead, or both sendAt and
// sendAtLocal.
func (s *Service) localTime(in LocalSendTime, sendAt *time.Time) (*LocalTime, *time.Time, error) {
	if sendAt != nil {
		return nil, nil, apperr.Invalid("sendAtLocal", "either sendAt or sendAtLocal, not both", "both")
	}
	d, err := time.Parse(time.DateOnly, in.Date)
	if err != nil {
		return nil, nil, apperr.Invalid("sendAtLocal.date", "a date as YYYY-MM-DD", fmt.Sprintf("%.16q", in.Date))
	}
	m, err := preferences.ParseClock("sendAtLocal.time", in.Time)
	if err != nil {
		return nil, nil, err
	}
	wall := time.Date(d.Year(), d.Month(), d.Day(), m/60, m%60, 0, 0, time.UTC)
	first, last, now := wall.Add(-earliestZone), wall.Add(latestZone), s.cfg.Now()
	switch {
	case last.Before(now):
		return nil, nil, apperr.Invalid("sendAtLocal", "a date and time not yet past in every time zone", in.Date+" "+in.Time)
	case first.After(now.Add(MaxSchedule)):
		return nil, nil, apperr.Invalid("sendAtLocal", "a date and time at most 30 days ahead", in.Date+" "+in.Time)
	case first.After(now):
		return &LocalTime{Date: in.Date, Minutes: m}, &first, nil
	}
	return &LocalTime{Date: in.Date, Minutes: m}, nil, nil
}

// BroadcastWith is Broadcast with options. VALIDATION_ERROR (field sendAt)
// for a sendAt more than 30 days ahead or more than a minute past.
func (s *Service) BroadcastWith(ctx context.Context, n Notification, opts BroadcastOptions) (Job, error) {
	data, err := n.validate()
	if err != nil {
		return Job{}, err
	}
	if err := opts.Audience.Validate(); err != nil {
		return Job{}, err
	}
	category, err := s.category(opts.Category)
	if err != nil {
		return Job{}, err
	}
	channels, err := broadcastChannels(opts.Channels)
	if err != nil {
		return Job{}, err
	}
	var sendAt *time.Time
	if opts.SendAt != nil {
		now, at := s.cfg.Now(), opts.SendAt.UTC()
		switch {
		case at.After(now.Add(MaxSchedule)):
			return Job{}, apperr.Invalid("sendAt", "a time at most 30 days ahead", at.Format(time.RFC3339))
		case at.Before(now.Add(-scheduleSkew)):
			return Job{}, apperr.Invalid("sendAt", "a time in the future", at.Format(time.RFC3339))
		case at.After(now):
			sendAt = &at
		}
	}
	var local *LocalTime
	if opts.SendAtLocal != nil {
		if local, sendAt, err = s.localTime(*opts.SendAtLocal, opts.SendAt); err != nil {
			return Job{}, err
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return Job{}, err
	}
	b := NewBroadcast{SendAtLocal: local, ID: id.String(), Subject: n.Subject, Content: n.Content, Data: data, SendAt: sendAt, Audience: opts.Audience, Category: category, Inbox: opts.Inbox,
		CapPerDay: s.cfg.Categories.CapOf(category, opts.Urgent), Urgent: opts.Urgent, Channels: channels}
	if n.Options != (PushOptions{}) {
		if b.Options, err = json.Marshal(n.Options); err != nil {
			return Job{}, err
		}
	}
	return s.store.CreateBroadcast(ctx, b, BroadcastArgs{JobID: id.String()})
}

// broadcastChannels checks a broadcast's channels and answers them in
// their one order (push, then email); none is push alone.
func broadcastChannels(channels []string) ([]string, error) {
	for _, c := range channels {
		if c != ChannelPush && c != ChannelEmail {
			return nil, invalidInput("channels", fmt.Sprintf("Unknown channel %q; the channels of a broadcast are push and email.", c))
		}
	}
	var out []string
	for _, c := range []string{ChannelPush, ChannelEmail} {
		if len(channels) == 0 && c == ChannelPush || slices.Contains(channels, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// category resolves the category a send names: INVALID_INPUT (field
// category) for one the catalogue does not have.
func (s *Service) category(name string) (string, error) {
	c, ok := s.cfg.Categories.Resolve(name)
	if !ok {
		return "", invalidInput("category", fmt.Sprintf("Unknown category %q; the categories are %s.", name, s.cfg.Categories.Names()))
	}
	return c, nil
}

// QueuedMessage is the message sendNotificationToAll shows.
func QueuedMessage(j Job) string {
	if j.SendAt != nil {
		return fmt.Sprintf("Notification scheduled for %s to %d device(s).", j.SendAt.UTC().Format(time.RFC3339), j.TotalRecipients)
	}
	if j.Emails() && !j.Pushes() {
		return "Notification queued by email for the audience's accounts."
	}
	also := ""
	if j.Emails() {
		also = ", and by email for the audience's accounts"
	}
	if j.TotalRecipients == 1 {
		return "Notification queued for 1 device" + also + "."
	}
	return fmt.Sprintf("Notification queued for %d devices%s.", j.TotalRecipients, also)
}

// Job returns a broadcast job; JOB_NOT_FOUND when unknown.
func (s *Service) Job(ctx context.Context, id string) (Job, error) { return s.engine.Job(ctx, id) }

// JobPage is one page of broadcast jobs.
type JobPage struct {
	Jobs        []Job
	EndCursor   string
	HasNextPage bool
}

// Jobs lists broadcast jobs, newest first, first at a time (default 20, at
// most 100) after the opaque cursor after.
func (s *Service) Jobs(ctx context.Context, first int, after string) (JobPage, error) {
	first, err := cursor.PageSize(first, DefaultPageSize, MaxPageSize)
	if err != nil {
		return JobPage{}, err
	}
	before, err := jobCursor.After(after)
	if err != nil {
		return JobPage{}, apperr.Invalid("after", "a cursor from an earlier page", after)
	}
	js, err := s.store.BroadcastJobs(ctx, before, first+1)
	if err != nil {
		return JobPage{}, err
	}
	p, err := cursor.Cut(jobCursor, js, first, func(j Job) string { return j.ID })
	if err != nil {
		return JobPage{}, err
	}
	return JobPage{Jobs: p.Items, EndCursor: p.EndCursor, HasNextPage: p.HasNextPage}, nil
}

// Cancel stops a queued or running broadcast: the batch being sent
// finishes, no further batch starts. A finished job is returned as it is.
// JOB_NOT_FOUND when unknown.
func (s *Service) Cancel(ctx context.Context, id string) (Job, error) {
	return s.engine.Cancel(ctx, id)
}

// SweepEvery is how often Sweep should run: a few times per lease.
func (s *Service) SweepEvery() time.Duration { return s.engine.SweepEvery() }

// Sweep queues a River job for every running broadcast whose lease expired
// or was released, so a live replica takes it over (fanout.Engine.Sweep).
func (s *Service) Sweep(ctx context.Context) (int, error) { return s.engine.Sweep(ctx) }

func jobNotFound(id string) error {
	return apperr.Newf(apperr.JobNotFound, "No notification job with the id %q.", id)
}

// jobCursor's payload is the ID of the last job of a page.
var jobCursor = cursor.New[string]("job")

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
