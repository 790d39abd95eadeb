package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/fanout"
	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// NotificationJob is a push broadcast job: what REST and GraphQL answer,
// what the progress stream (SSE) and subscription (WebSocket) send, and
// what one replica publishes to the others (NotificationJobWire).
type NotificationJob struct {
	ID              string `json:"id"`
	Status          string `json:"status"`
	Subject         string `json:"subject"`
	TotalRecipients int    `json:"totalRecipients"`
	Sent            int    `json:"sent"`
	Failed          int    `json:"failed"`
	InvalidTokens   int    `json:"invalidTokens"`
	// Skipped counts the recipients not sent to, per reason.
	Skipped SkipCounts `json:"skipped"`
	// Held counts the devices waiting now for the end of their owner's
	// quiet hours (0 once the job completes); each is counted again where
	// its outcome lands.
	Held int `json:"held"`
	// Urgent: the job passes through quiet hours.
	Urgent bool `json:"urgent"`
	// Category is the notification category it is sent in.
	Category string `json:"category"`
	// Inbox: the job keeps inbox items; InboxItems counts those it wrote
	// (0 until it starts).
	Inbox      bool `json:"inbox"`
	InboxItems int  `json:"inboxItems"`
	// Channels are the broadcast's channels: push (every device in the
	// audience), email (one email per account of the audience), or both.
	Channels []string `json:"channels"`
	// Email counts the email part (zeros without the email channel).
	Email      BroadcastEmailCounts `json:"email"`
	CreatedAt  time.Time            `json:"createdAt"`
	StartedAt  *time.Time           `json:"startedAt"`
	FinishedAt *time.Time           `json:"finishedAt"`
	// SendAt is when a scheduled job starts; nil for one queued at once.
	SendAt *time.Time `json:"sendAt"`
	// SendAtLocal is the wall-clock time the job is due at in each
	// recipient's zone; nil for a job sent at once.
	SendAtLocal *LocalTime `json:"sendAtLocal"`
	// Error says why a failed job failed.
	Error *string `json:"error"`
}

// LocalTime is a wall-clock time on a date, read in each recipient's
// time zone: sendAtLocal, asked for and shown.
type LocalTime struct {
	Date string `json:"date"`
	Time string `json:"time"`
}

// SendTime is the domain's input.
func (l *LocalTime) SendTime() *notifications.LocalSendTime {
	if l == nil {
		return nil
	}
	return &notifications.LocalSendTime{Date: l.Date, Time: l.Time}
}

func newLocalTime(l *notifications.LocalTime) *LocalTime {
	if l == nil {
		return nil
	}
	return &LocalTime{Date: l.Date, Time: preferences.Clock(l.Minutes)}
}

func (l *LocalTime) local() *notifications.LocalTime {
	if l == nil {
		return nil
	}
	m, _ := preferences.ParseClock("time", l.Time)
	return &notifications.LocalTime{Date: l.Date, Minutes: m}
}

// NewNotificationJob renders a job, without its content and data.
func NewNotificationJob(j notifications.Job) NotificationJob {
	return NotificationJob{
		ID:              j.ID,
		Status:          j.Status,
		Subject:         j.Subject,
		TotalRecipients: j.TotalRecipients,
		Sent:            j.Sent,
		Failed:          j.Failed,
		InvalidTokens:   j.InvalidTokens,
		Skipped:         SkipCounts{OptedOut: j.OptedOut, Capped: j.Capped},
		Held:            j.Held,
		Urgent:          j.Urgent,
		Channels:        channelsOf(j),
		Email:           BroadcastEmailCounts(j.Email),
		Category:        j.Category,
		Inbox:           j.Inbox,
		InboxItems:      j.InboxItems,
		CreatedAt:       seconds(j.CreatedAt),
		StartedAt:       optionalSeconds(j.StartedAt),
		FinishedAt:      optionalSeconds(j.FinishedAt),
		SendAt:          optionalSeconds(j.SendAt),
		SendAtLocal:     newLocalTime(j.SendAtLocal),
		Error:           nonEmpty(j.Error),
	}
}

// channelsOf is a job's channels, push alone for a job that names none.
func channelsOf(j notifications.Job) []string {
	if len(j.Channels) == 0 {
		return []string{notifications.ChannelPush}
	}
	return j.Channels
}

// job is the domain value v shows (without content and data, which it
// does not carry).
func (v NotificationJob) job() notifications.Job {
	return notifications.Job{ID: v.ID, Status: v.Status, Subject: v.Subject, TotalRecipients: v.TotalRecipients, Sent: v.Sent, Failed: v.Failed,
		InvalidTokens: v.InvalidTokens, OptedOut: v.Skipped.OptedOut, Capped: v.Skipped.Capped, Held: v.Held, Urgent: v.Urgent, Channels: v.Channels, Email: notifications.EmailCounts(v.Email), Category: v.Category, Inbox: v.Inbox, InboxItems: v.InboxItems, CreatedAt: v.CreatedAt, StartedAt: v.StartedAt, FinishedAt: v.FinishedAt, SendAt: v.SendAt, SendAtLocal: v.SendAtLocal.local(), Error: deref(v.Error)}
}

// NotificationJobWire writes a job's state into a live progress event, as
// a NotificationJob, and reads it back (notifications.Config.Wire): what a
// replica publishes is what the others' subscribers are shown. The
// fields are those replicas of earlier versions wrote, so a rolling
// upgrade reads both ways.
func NotificationJobWire() live.Codec[notifications.Job] {
	return jsonCodec(NewNotificationJob, NotificationJob.job)
}

// BroadcastResult answers a push broadcast: the job queued (or
// scheduled).
type BroadcastResult struct {
	JobID           string `json:"jobId"`
	Message         string `json:"message"`
	Status          string `json:"status"`
	TotalRecipients int    `json:"totalRecipients"`
}

// NewBroadcastResult renders the answer for job j.
func NewBroadcastResult(j notifications.Job) BroadcastResult {
	return BroadcastResult{Status: j.Status, Message: notifications.QueuedMessage(j), TotalRecipients: j.TotalRecipients, JobID: j.ID}
}

// SendNotificationResult answers a send to one device or token.
type SendNotificationResult struct {
	Message string `json:"message"`
	Status  string `json:"status"`
}

// NewSendNotificationResult renders a single send's result.
func NewSendNotificationResult(r notifications.SendResult) SendNotificationResult {
	return SendNotificationResult{Status: r.Status, Message: r.Message}
}

// SendToUserResult answers a send to every device (and the linked chat) of
// a user.
type SendToUserResult struct {
	UserID   string              `json:"userId"`
	Status   string              `json:"status"`
	Message  string              `json:"message"`
	Outcomes []DeviceSendOutcome `json:"outcomes"`
	// Skipped counts the devices and the chat not sent to, per reason.
	Skipped SkipCounts `json:"skipped"`
	// HeldUntil is when a send held by the user's quiet hours goes out
	// (status held); nil otherwise.
	HeldUntil *time.Time `json:"heldUntil"`
}

// SkipCounts counts the recipients of a send or a broadcast skipped, per
// reason.
type SkipCounts struct {
	// OptedOut: the user turned the category off on that channel.
	OptedOut int `json:"optedOut"`
	// Capped: the user already had the category's cap of sends that day
	// (a broadcast counts each device of such a user when its walk
	// reaches it).
	Capped int `json:"capped"`
}

// BroadcastEmailCounts are a broadcast's email part, counted apart from
// its devices: one email per account of the audience.
type BroadcastEmailCounts struct {
	// Queued: emails queued, one per account with a verified real
	// address (each then sent by the email channel's job).
	Queued int `json:"queued"`
	// OptedOut: accounts that turned the category's email off.
	OptedOut int `json:"optedOut"`
	// Capped: accounts already at the category's cap that day.
	Capped int `json:"capped"`
	// NoEmailAddress: accounts without a verified real address (a
	// guest's placeholder, an address not yet verified).
	NoEmailAddress int `json:"noEmailAddress"`
}

// DeviceSendOutcome is how the send to one device, or to the linked
// Telegram chat, went. REST leaves out the fields that do not apply;
// GraphQL shows them null.
type DeviceSendOutcome struct {
	DeviceID *string `json:"deviceId,omitempty"` // nil for the chat
	ChatID   *string `json:"chatId,omitempty"`   // nil for a device
	Platform string  `json:"platform"`
	Channel  string  `json:"channel"`
	Status   string  `json:"status"`
	// Error is the catalogue code of an outcome other than sent.
	Error *string `json:"error,omitempty"`
}

// NewSendToUserResult renders a send to a user.
func NewSendToUserResult(r notifications.UserSendResult) SendToUserResult {
	return SendToUserResult{UserID: r.UserID, Status: r.Status, Message: r.Message, Skipped: SkipCounts(r.Skipped), HeldUntil: optionalSeconds(r.HeldUntil),
		Outcomes: All(r.Outcomes, func(o notifications.DeviceOutcome) DeviceSendOutcome {
			return DeviceSendOutcome{DeviceID: nonEmpty(o.DeviceID), ChatID: nonEmpty(o.ChatID), Platform: o.Platform, Channel: o.Channel,
				Status: o.Status, Error: nonEmpty(o.Error)}
		})}
}

// NotificationJobEvent is the data of a notification.broadcast.* webhook
// event, taken from the job's wire type: its id as jobId, its outcome and
// counters, and error only when set. Its fields are in the order of their
// JSON names, the order the outbox has always written.
type NotificationJobEvent struct {
	Error           *string `json:"error,omitempty"`
	Failed          int     `json:"failed"`
	InvalidTokens   int     `json:"invalidTokens"`
	JobID           string  `json:"jobId"`
	Sent            int     `json:"sent"`
	Status          string  `json:"status"`
	TotalRecipients int     `json:"totalRecipients"`
}

// NewNotificationJobEvent is the event of a finished or cancelled job.
func NewNotificationJobEvent(j notifications.Job) NotificationJobEvent {
	v := NewNotificationJob(j)
	return NotificationJobEvent{Error: v.Error, Failed: v.Failed, InvalidTokens: v.InvalidTokens, JobID: v.ID, Sent: v.Sent, Status: v.Status,
		TotalRecipients: v.TotalRecipients}
}

// EventType names the event of the job's final status.
func (e NotificationJobEvent) EventType() string {
	return finishingEvent(e.Status, webhooks.BroadcastCompleted, webhooks.BroadcastFailed, webhooks.BroadcastCancelled)
}

// finishingEvent is the event of a broadcast's final status; "" for one
// not final, which no finishing event is written for.
func finishingEvent(status, completed, failed, cancelled string) string {
	switch status {
	case fanout.Completed:
		return completed
	case fanout.Failed:
		return failed
	case fanout.Cancelled:
		return cancelled
	}
	return ""
}
