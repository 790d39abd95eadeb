// Package notifications sends push notifications: to one device at once
// (SendToDevice) and to every device as a durable background job
// (Broadcast, worked by BroadcastWorker on the River queue QueuePush).
//
// # Delivery guarantee of a broadcast
//
// A broadcast walks the recipients in keyset-paged batches ordered by device
// ID. Claiming a batch moves the job's walk cursor past it, in one statement
// that checks the worker still holds the lease; nothing is written per
// device. A batch's outcomes are held until every one is known; then, once
// every earlier batch has settled too, the batch settles in one write: its
// failures, retries and dead tokens become delivery rows (job_id, device_id
// unique), its successful sends only add to the job's counter, and the job's
// settled cursor moves past it. Outcomes a slow send keeps waiting longer
// than a quarter of the lease (at most a second) are written as rows
// instead. So every device up to the settled cursor has its outcome written,
// and a device between the settled and walk cursors has one exactly when it
// has a row; a device with a row is never sent to again by the walk, by any
// worker, and the cursor only moves forward, so no device is skipped.
//
// The one window no design can close is a crash after the provider accepted
// a message and before its outcome was written: neither FCM nor APNs can be
// asked whether a message was delivered, so such a claim has an unknown
// outcome. The next run (a new lease) re-sends the devices between the
// settled and walk cursors without a row (ResumeWalk): a broadcast is
// at-least-once for the messages in flight or not yet settled at the moment
// of a kill -9 (about two batches at most) and exactly-once for every other
// device. We chose this over at-most-once because a user who misses a
// notification has no way of knowing, while a duplicate is visible and rare. A graceful stop (SIGTERM, River's
// StopAndCancel) starts no new send, lets those in flight finish within
// StopGrace and writes their outcomes, so it leaves no duplicate.
//
// Only one worker works a broadcast at a time: it holds a lease on the job
// row, renewed while it works and checked in every claiming transaction. A
// River job that finds the lease held by a live worker snoozes until it
// expires; after a kill -9 the lease expires after LeaseTTL and Recover
// (called at start-up) queues a River job that takes over.
package notifications

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/push"
)

// Size limits, in bytes, chosen so that every notification fits the 4 KB
// payload limit of both FCM and APNs.
const (
	MaxSubjectBytes = 512
	MaxContentBytes = 2048
	MaxDataBytes    = 1024 // the data object as JSON
)

// Notification is what is pushed: subject → title, content → body, data →
// the data payload (FCM receives non-string values as JSON text; APNs keeps
// JSON types; see the push/fcm and push/apns documentation).
type Notification struct {
	Subject string
	Content string
	Data    map[string]any
	Options PushOptions
}

// MaxTTLSeconds is the longest TTL: FCM's limit, 28 days.
const MaxTTLSeconds = 28 * 24 * 3600

// maxOptionBytes bounds the text options (sound, channelId, threadId).
const maxOptionBytes = 256

// PushOptions are a notification's delivery options, mapped to each
// provider by push/fcm and push/apns (see docs/notifications.md's table). The zero
// value is the providers' defaults. It is stored with a broadcast as
// JSON.
type PushOptions struct {
	Priority         string `json:"priority,omitempty"` // "", high or normal
	TTLSeconds       *int   `json:"ttl,omitempty"`
	Badge            *int   `json:"badge,omitempty"`
	Sound            string `json:"sound,omitempty"`
	ImageURL         string `json:"imageUrl,omitempty"`
	ChannelID        string `json:"channelId,omitempty"`
	ThreadID         string `json:"threadId,omitempty"`
	ContentAvailable bool   `json:"contentAvailable,omitempty"`
}

func (o PushOptions) validate() error {
	switch o.Priority {
	case "", push.PriorityHigh, push.PriorityNormal:
	default:
		return invalidInput("options.priority", "The priority is high or normal.")
	}
	if o.TTLSeconds != nil && (*o.TTLSeconds < 0 || *o.TTLSeconds > MaxTTLSeconds) {
		return invalidInput("options.ttl", fmt.Sprintf("The ttl is a number of seconds from 0 to %d (28 days).", MaxTTLSeconds))
	}
	if o.Badge != nil && (*o.Badge < 0 || *o.Badge > 99999) {
		return invalidInput("options.badge", "The badge is a number from 0 to 99999.")
	}
	for field, v := range map[string]string{"options.sound": o.Sound, "options.channelId": o.ChannelID, "options.threadId": o.ThreadID} {
		if len(v) > maxOptionBytes || !printable(v) || strings.ContainsAny(v, "\n\t") {
			return invalidInput(field, fmt.Sprintf("The %s is at most %d bytes of printable text.", strings.TrimPrefix(field, "options."), maxOptionBytes))
		}
	}
	if o.ImageURL != "" {
		u, err := url.Parse(o.ImageURL)
		if err != nil || u.Scheme != "https" || u.Host == "" || len(o.ImageURL) > 2048 {
			return invalidInput("options.imageUrl", "The imageUrl is an absolute https URL of at most 2048 bytes.")
		}
	}
	return nil
}

func (o PushOptions) push() push.Options {
	out := push.Options{Priority: o.Priority, Badge: o.Badge, Sound: o.Sound, ImageURL: o.ImageURL, ChannelID: o.ChannelID, ThreadID: o.ThreadID, ContentAvailable: o.ContentAvailable}
	if o.TTLSeconds != nil {
		ttl := time.Duration(*o.TTLSeconds) * time.Second
		out.TTL = &ttl
	}
	return out
}

// reservedDataKeys are data keys FCM or APNs refuse or reserve.
var reservedDataKeys = map[string]bool{
	"aps": true, "from": true, "notification": true, "message_type": true, "collapse_key": true,
}

// Validate returns INVALID_INPUT naming the field when subject or content is
// missing or blank, or a field is too large, or data uses a key the
// providers reserve.
func (n Notification) Validate() error {
	_, err := n.validate()
	return err
}

// validate is Validate that also returns the data as JSON (nil when there
// is none), which it has to encode to check its size.
func (n Notification) validate() ([]byte, error) {
	if strings.TrimSpace(n.Subject) == "" {
		return nil, invalidInput("subject", "The notification subject is required.")
	}
	if strings.TrimSpace(n.Content) == "" {
		return nil, invalidInput("content", "The notification content is required.")
	}
	if len(n.Subject) > MaxSubjectBytes {
		return nil, invalidInput("subject", fmt.Sprintf("The notification subject is longer than %d bytes.", MaxSubjectBytes))
	}
	if len(n.Content) > MaxContentBytes {
		return nil, invalidInput("content", fmt.Sprintf("The notification content is longer than %d bytes.", MaxContentBytes))
	}
	for field, text := range map[string]string{"subject": n.Subject, "content": n.Content} {
		if !printable(text) {
			return nil, invalidInput(field, fmt.Sprintf("The notification %s holds invalid UTF-8 or control characters.", field))
		}
	}
	if err := n.Options.validate(); err != nil {
		return nil, err
	}
	for k := range n.Data {
		lk := strings.ToLower(k)
		if k == "" || reservedDataKeys[lk] || strings.HasPrefix(lk, "google.") || strings.HasPrefix(lk, "gcm.") {
			return nil, invalidInput("data", fmt.Sprintf("The data key %q is reserved by the push providers.", k))
		}
	}
	return n.encodeData()
}

// encodeData returns the data as JSON, nil when there is none.
func (n Notification) encodeData() ([]byte, error) {
	if len(n.Data) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(n.Data)
	if err != nil {
		return nil, invalidInput("data", "The notification data cannot be encoded as JSON.")
	}
	if len(b) > MaxDataBytes {
		return nil, invalidInput("data", fmt.Sprintf("The notification data is larger than %d bytes as JSON.", MaxDataBytes))
	}
	return b, nil
}

func (n Notification) push() push.Notification {
	return push.Notification{Title: n.Subject, Body: n.Content, Data: n.Data, Options: n.Options.push()}
}

func invalidInput(field, msg string) *apperr.Error {
	return apperr.Newf(apperr.InvalidInput, "%s", msg).With("field", field)
}

// printable reports whether text is valid UTF-8 without control characters
// other than newline and tab (a NUL would be refused by PostgreSQL).
func printable(text string) bool {
	if !utf8.ValidString(text) {
		return false
	}
	return strings.IndexFunc(text, func(r rune) bool { return unicode.IsControl(r) && r != '\n' && r != '\t' }) < 0
}
