package notifications

import (
	"context"
	"slices"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/riverqueue/river"
)

// Broadcast job statuses: queued (or scheduled, until its sendAt) →
// running → completed, failed or cancelled.
const (
	StatusQueued    = fanout.Queued
	StatusScheduled = fanout.Scheduled
	StatusRunning   = fanout.Running
	StatusCompleted = fanout.Completed
	StatusFailed    = fanout.Failed
	StatusCancelled = fanout.Cancelled
)

// Delivery states of one device in one broadcast.
const (
	// DeliveryClaimed: about to be sent or in flight; outcome unknown.
	DeliveryClaimed = "claimed"
	// DeliverySent: the provider accepted it.
	DeliverySent = "sent"
	// DeliveryFailed: will not be sent (non-transient failure, or still
	// failing transiently in the broadcast's last pass).
	DeliveryFailed = "failed"
	// DeliveryInvalid: the provider called the token dead; the device is
	// marked invalid.
	DeliveryInvalid = "invalid"
	// DeliveryRetry: failed transiently; sent again later in the broadcast.
	DeliveryRetry = "retry"
	// DeliverySkipped: no longer a recipient (removed, or its token died
	// or moved) when an unresolved delivery was taken up again.
	DeliverySkipped = "skipped"
	// DeliveryOptedOut: the walk reached the device when its owner had
	// the broadcast's category turned off on its channel; counted in the
	// job's OptedOut, never sent, not even by a resumed walk.
	DeliveryOptedOut = "opted_out"
	// DeliveryCapped: the walk reached the device when its owner already
	// had the day's cap of the broadcast's category (another send counted
	// first); counted in the job's Capped, never sent, not even by a
	// resumed walk.
	DeliveryCapped = "capped"
	// DeliveryHeld: the walk (or a release) reached the device inside its
	// owner's quiet hours; it waits for DueAt, the end of the window, and
	// is taken up again by a release pass of the same job (Store.ReleaseHeld),
	// under the preferences and quiet hours of then. Counted in the job's
	// Held while it waits.
	DeliveryHeld = "held"
)

// Job is a broadcast job.
type Job struct {
	ID              string
	Status          string
	Subject         string
	Content         string
	Data            map[string]any
	TotalRecipients int // active devices with a valid token when queued
	Sent            int
	Failed          int
	InvalidTokens   int
	// OptedOut counts the recipients skipped because their owner turned
	// the job's category off on the device's channel (at its claim).
	OptedOut int
	// Capped counts the recipients skipped because their owner already
	// had CapPerDay sends of the category that day (at its claim).
	Capped int
	// CapPerDay is the category's cap when the job was created (0: none);
	// the walk reads it from the job, not from the configuration of now.
	CapPerDay int
	// Urgent: an operator marked the broadcast urgent; it passes through
	// its recipients' quiet hours (as a critical category does).
	Urgent bool
	// Held counts the devices waiting now for the end of their owner's
	// quiet hours (DeliveryHeld); 0 once the job completes. A held device
	// is counted again where its outcome lands.
	Held int
	// ResumeAt is when a running job with held devices and none due
	// continues (the earliest end of their quiet hours); nil otherwise.
	ResumeAt   *time.Time
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
	// Error says why a failed job failed.
	Error string
	// Options are the push options every device is sent with.
	Options PushOptions
	// SendAt is when a scheduled job starts; nil for one queued at once.
	SendAt *time.Time
	// SendAtLocal: the job is due for each owner at this wall-clock time
	// in their zone (nil: at once).
	SendAtLocal *LocalTime
	// Audience is who it is sent to; the zero value is everyone.
	Audience Audience
	// Category is the notification category it is sent in
	// (preferences.Catalogue); recipients who turned it off are skipped.
	Category string
	// Inbox: the broadcast also keeps an inbox item for every account its
	// audience reaches that allows its category on the inbox channel,
	// written once by the job (InboxWritten), InboxItems of them.
	Inbox        bool
	InboxWritten bool
	InboxItems   int
	// Channels are the broadcast's channels (ChannelPush, ChannelEmail;
	// nil is push alone, as every broadcast before them).
	Channels []string
	// Email counts the email part, apart from the devices' counters.
	Email EmailCounts
}

// EmailCounts are a broadcast's email part: the accounts whose email it
// queued (one notification_email job each, EmailArgs), and those of the
// audience it skipped: opted out of the category's email, over its cap,
// or without a verified real address (HasEmailAddress).
type EmailCounts struct {
	Queued, OptedOut, Capped, NoEmailAddress int
}

// Pushes reports whether the job walks the devices (push and web push).
func (j Job) Pushes() bool { return len(j.Channels) == 0 || slices.Contains(j.Channels, ChannelPush) }

// Emails reports whether the job emails the audience's accounts.
func (j Job) Emails() bool { return slices.Contains(j.Channels, ChannelEmail) }

// CapSendID names broadcast jobID in its recipients' caps
// (preferences.CapUse.SendID): an owner is counted once per job, however
// many of their devices it reaches, in however many batches or runs.
func CapSendID(jobID string) string { return "job:" + jobID }

// Finished reports whether the job reached a final status.
func (j Job) Finished() bool { return fanout.Finished(j.Status) }

// NewBroadcast is what the store needs to create a broadcast job.
type NewBroadcast struct {
	ID      string
	Subject string
	Content string
	Data    []byte // JSON object, nil when none
	Options []byte // PushOptions as JSON, nil when none
	// SendAt schedules the job (status scheduled, its River job scheduled
	// at that time); nil queues it now.
	SendAt *time.Time
	// SendAtLocal: due for each owner at this wall-clock time in their
	// zone (Job.SendAtLocal); SendAt is then its earliest instant.
	SendAtLocal *LocalTime
	// Audience narrows the recipients; the zero value is everyone.
	Audience Audience
	// Category is the notification category (resolved: never "").
	Category string
	// Inbox: the job keeps inbox items (Job.Inbox).
	Inbox bool
	// CapPerDay is the category's cap (preferences.Catalogue.CapOf; 0:
	// uncapped), kept on the job.
	CapPerDay int
	// Urgent: the job passes through quiet hours (Job.Urgent).
	Urgent bool
	// Channels are the job's channels, checked (Job.Channels).
	Channels []string
}

// LocalTime is a wall-clock time on a civil date, read in each
// recipient's time zone (UTC without one).
type LocalTime struct {
	Date    string // YYYY-MM-DD
	Minutes int    // after midnight
}

// DueFor is when the time is due for an owner of schedule s
// (preferences.Schedule.LocalInstant).
func (l LocalTime) DueFor(s preferences.Schedule) time.Time {
	d, err := time.Parse(time.DateOnly, l.Date)
	if err != nil {
		return time.Time{} // checked when the job was created
	}
	return s.LocalInstant(d, l.Minutes)
}

// Audience narrows a broadcast's recipients (the zero value is everyone).
type Audience = audience.Audience

// Lease is the outcome of trying to take a broadcast's lease.
type Lease struct {
	Job Job // as it is after the attempt
	fanout.Lease
}

// Claim is one device claimed for sending.
type Claim struct {
	DeviceID string
	Platform string
	Token    string
	// Schedule is the device owner's time zone and quiet hours, read with
	// the claim: the engine decides with it whether the device is held.
	Schedule preferences.Schedule
	// holdUntil is set by the engine for a claim it holds (not sent).
	holdUntil time.Time
}

// Claims is a claimed batch.
type Claims struct {
	Claims []Claim
	// Last is the last device ID looked at; the next page starts after it.
	Last string
	// Done: nothing is left after this batch.
	Done bool
	// Stop: the caller no longer holds the lease or the job is no longer
	// running (cancelled); nothing was claimed.
	Stop bool
}

// EmailClaims is one page of a broadcast's email walk.
type EmailClaims struct {
	// Queued counts the emails queued by the page.
	Queued int
	// Done: the walk is over. Stop: the job is no longer owner's, or no
	// longer running; nothing was queued.
	Done, Stop bool
}

// Record is one write of a broadcast's outcomes.
type Record struct {
	// Outcomes are written as delivery rows.
	Outcomes []Outcome
	// Sent counts successful sends written without a row: devices of the
	// batches this write settles.
	Sent int
	// Settled moves the job's settled cursor: every device the walk
	// claimed up to it has its outcome written (as a row, or counted in
	// Sent now or before). "" leaves it.
	Settled string
}

// Outcome is the result of one claimed send.
type Outcome struct {
	DeviceID string
	Token    string // the token sent to; an invalid outcome marks the device only if it still has it
	Status   string // DeliverySent, DeliveryFailed, DeliveryInvalid, DeliveryRetry or DeliveryHeld
	// DueAt is when a DeliveryHeld device is due (the end of its owner's
	// quiet hours); zero otherwise.
	DueAt time.Time
}

// Store is the persistence the notifications service needs; sqlstore
// implements it. Errors are the storage package's.
type Store interface {
	// CapStore counts sends against the categories' caps
	// (preferences.UseCap).
	preferences.CapStore
	// AccountByID returns an account. ErrNotFound when unknown.
	AccountByID(ctx context.Context, id string) (accounts.Account, error)
	// ListDevices returns the account's active devices, oldest first.
	ListDevices(ctx context.Context, accountID string) ([]devices.Device, error)
	// DeviceByID returns any device, active or not. ErrNotFound when unknown.
	DeviceByID(ctx context.Context, id string) (devices.Device, error)
	// NotificationSettings are the account's stored notification
	// preferences (preferences.Store).
	NotificationSettings(ctx context.Context, accountID string) ([]preferences.Setting, error)
	// NotificationSchedule is the account's time zone and quiet hours.
	NotificationSchedule(ctx context.Context, accountID string) (preferences.Schedule, error)
	// ScheduleJob inserts a River job held until at.
	ScheduleJob(ctx context.Context, args river.JobArgs, at time.Time) error
	// AccountDisabled reports whether an operator disabled the account:
	// its devices get no pushes.
	AccountDisabled(ctx context.Context, accountID string) (bool, error)
	// InvalidatePushToken marks the device's token invalid if it still is
	// token.
	InvalidatePushToken(ctx context.Context, deviceID, token string) error
	// EnqueueJob inserts a background job (the email channel's
	// EmailArgs).
	EnqueueJob(ctx context.Context, args river.JobArgs) error
	// AddToDigest folds e into the account's open digest of category
	// (Digest.Add), or opens one due at due and inserts job(its id) in
	// the same transaction; it returns the digest as it is now.
	AddToDigest(ctx context.Context, accountID, category string, e DigestEntry, due time.Time, job func(id string) river.JobArgs) (Digest, error)
	// StartDigest closes the digest to new sends (the next send opens
	// another) and returns it. ErrNotFound when it is gone.
	StartDigest(ctx context.Context, id string) (Digest, error)
	// DeleteDigest deletes a sent digest.
	DeleteDigest(ctx context.Context, id string) error

	// CreateBroadcast counts the active devices with a valid token, writes
	// the job (queued) and inserts job, in one transaction.
	CreateBroadcast(ctx context.Context, b NewBroadcast, job river.JobArgs) (Job, error)
	// BroadcastJob returns one job. ErrNotFound when unknown.
	BroadcastJob(ctx context.Context, id string) (Job, error)
	// BroadcastJobs returns up to limit jobs, newest first, older than the
	// job beforeID ("" for the newest).
	BroadcastJobs(ctx context.Context, beforeID string, limit int) ([]Job, error)
	// CancelBroadcast cancels a queued, scheduled or running job and returns it; a
	// finished job is returned unchanged. ErrNotFound when unknown.
	CancelBroadcast(ctx context.Context, id string) (Job, error)
	// RequeueStalledBroadcasts finds running jobs whose lease expired or
	// was released and that were not requeued within minInterval, and for
	// each, in one transaction, marks it requeued and inserts newJob(id).
	// It returns the IDs requeued; run on every replica at once, each job
	// is requeued by one.
	RequeueStalledBroadcasts(ctx context.Context, minInterval time.Duration, newJob func(id string) river.JobArgs) ([]string, error)

	// AcquireBroadcast gives owner the job's lease until the given time
	// when it is free, expired or owner's, and moves a queued job to
	// running (startedAt). A finished job is returned without a lease.
	AcquireBroadcast(ctx context.Context, id, owner string, until time.Time) (Lease, error)
	// ReclaimDeliveries takes up, in device order after `after`, up to
	// limit unresolved deliveries: those in DeliveryRetry, and (unless
	// retriesOnly) those DeliveryClaimed by an earlier run whose outcome
	// is unknown (a worker that died, or claims a stopped run never sent).
	// Devices no longer recipients become DeliverySkipped; the rest become
	// DeliveryClaimed by owner and are returned. It renews the lease until
	// `until`. Only owner, holding the lease, works the job, so nothing it
	// takes up is in flight.
	ReclaimDeliveries(ctx context.Context, id, owner string, retriesOnly bool, after string, limit int, until time.Time) (Claims, error)
	// ClaimNextBatch claims, after the job's cursor, up to limit active
	// devices with a valid token created no later than the job, and moves
	// the cursor past them, in one transaction; it renews the lease. The
	// devices whose owner turned the job's category off on the device's
	// channel are not claimed but counted in the job's OptedOut (Last
	// still moves past them). For a capped job (CapPerDay), each owner of
	// the devices left is counted against their cap of the day
	// (preferences.UseCap, send id CapSendID), owners in account order;
	// the devices of an owner over the cap are not claimed but counted in
	// the job's Capped. It
	// writes nothing per device: until RecordDeliveries settles the walk
	// past them, claimed devices without a delivery row are the ones whose
	// outcome is unknown.
	ClaimNextBatch(ctx context.Context, id, owner string, limit int, until time.Time) (Claims, error)
	// ClaimEmailBatch is the email part's walk: it takes, in account
	// order after the job's email cursor, up to limit live, enabled
	// accounts with an active device in the job's audience created no
	// later than the job, and, in one transaction that also moves the
	// cursor past them (and renews the lease) only while owner holds the
	// lease of the running job: skips an account that turned the job's
	// category off on the email channel, then one without a verified real
	// address (HasEmailAddress: a guest's placeholder, an address not
	// verified), counts each left against its cap of the day as the
	// device walk does (send id CapSendID: an owner reached by both counts
	// once), skips those over it, and inserts email(account) for the
	// rest; each counted in the job's Email. A run that dies
	// before the commit queued nothing; after it, the cursor is past the
	// accounts, so no account is emailed twice by the job. Stop when the
	// job is not owner's or not running; Done when the walk is over.
	// email is given each account's schedule (read in the page's query)
	// and says when its email is due: the job is scheduled then (the zero
	// time: now).
	ClaimEmailBatch(ctx context.Context, id, owner string, limit int, until time.Time, email func(accountID string, s preferences.Schedule) (EmailArgs, time.Time)) (EmailClaims, error)
	// ResumeWalk returns, in device order after `after`, up to limit
	// devices the walk claimed but whose outcome is unknown: recipients
	// after the job's settled cursor and up to its walk cursor without a
	// delivery row (a worker that died, or a run stopped with sends
	// unanswered). Last is the last device returned, or the walk cursor
	// once Done. It renews the lease. Only owner, holding the lease, works
	// the job, so nothing it returns is in flight.
	ResumeWalk(ctx context.Context, id, owner, after string, limit int, until time.Time) (Claims, error)
	// RecordDeliveries writes r in one transaction: its outcomes as
	// delivery rows (a device's first outcome, or the outcome of a
	// delivery owner has claimed; any other is ignored), the job's counters
	// by the rows written, dead tokens marked invalid, and, while owner
	// holds the lease, r.Sent added to the sent counter and the settled
	// cursor moved to r.Settled. It renews the lease and reports whether
	// owner still holds it.
	RecordDeliveries(ctx context.Context, id, owner string, r Record, until time.Time) (bool, error)
	// ReleaseHeld takes up, in device order after `after`, up to limit
	// DeliveryHeld rows due at or before now, moving the job's Held down
	// by each: devices no longer recipients become DeliverySkipped, those
	// whose owner turned the job's category off on the device's channel
	// DeliveryOptedOut (counted in OptedOut), and the rest DeliveryClaimed
	// by owner, returned with their owner's schedule. It renews the lease.
	ReleaseHeld(ctx context.Context, id, owner, after string, now time.Time, limit int, until time.Time) (Claims, error)
	// ParkBroadcast, when the job has DeliveryHeld rows, in one
	// transaction sets its resume_at to the earliest due_at, frees owner's
	// lease and inserts newJob(id) scheduled then; the job stays running.
	// It reports whether it parked the job (false: nothing is held, and
	// the job can finish).
	ParkBroadcast(ctx context.Context, id, owner string, newJob func(id string) river.JobArgs) (bool, error)
	// FinishBroadcast moves a running job whose lease owner holds to
	// status (completed or failed, with errMsg) and frees the lease; it
	// returns the job as it is.
	FinishBroadcast(ctx context.Context, id, owner, status, errMsg string) (Job, error)
	// ReleaseBroadcast frees owner's lease.
	ReleaseBroadcast(ctx context.Context, id, owner string) error
}
