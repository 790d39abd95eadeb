package rest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
)

// NotificationInput is a notification as REST takes it. Data stays raw so
// that it is decoded as the GraphQL door decodes it (numbers kept exact).
type NotificationInput struct {
	Subject string          `json:"subject"`
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data"`
	// Options decode straight into the domain type: the same names.
	Options *notifications.PushOptions `json:"options"`
}

func (n *NotificationInput) notification() (notifications.Notification, error) {
	if n == nil {
		return notifications.Notification{}, apperr.Newf(apperr.InvalidInput, "The notification is required.").With("field", "notification")
	}
	out := notifications.Notification{Subject: n.Subject, Content: n.Content}
	if n.Options != nil {
		out.Options = *n.Options
	}
	if len(n.Data) > 0 && string(n.Data) != "null" {
		d, err := notifications.DecodeData(n.Data)
		if err != nil {
			return out, apperr.Newf(apperr.InvalidInput, "The notification data must be a JSON object.").With("field", "data")
		}
		out.Data = d
	}
	return out, nil
}

// IdempotencyHeader carries a send's idempotency key.
const IdempotencyHeader = "Idempotency-Key"

func (h *Handlers) idempotencyKey(r *http.Request) idempotency.Key {
	return idempotency.Key{Service: h.Idempotency, Field: IdempotencyHeader, Value: r.Header.Get(IdempotencyHeader)}
}

// NotificationJob is the REST record of a broadcast job.
type NotificationJob struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	Subject         string     `json:"subject"`
	TotalRecipients int        `json:"totalRecipients"`
	Sent            int        `json:"sent"`
	Failed          int        `json:"failed"`
	InvalidTokens   int        `json:"invalidTokens"`
	CreatedAt       time.Time  `json:"createdAt"`
	StartedAt       *time.Time `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt"`
	SendAt          *time.Time `json:"sendAt"`
	Error           *string    `json:"error"`
}

// NewNotificationJob renders a job as notificationJob does.
func NewNotificationJob(j notifications.Job) NotificationJob {
	out := NotificationJob{
		ID:              j.ID,
		Status:          j.Status,
		Subject:         j.Subject,
		TotalRecipients: j.TotalRecipients,
		Sent:            j.Sent,
		Failed:          j.Failed,
		InvalidTokens:   j.InvalidTokens,
		CreatedAt:       j.CreatedAt.UTC().Truncate(time.Second),
		StartedAt:       seconds(j.StartedAt),
		FinishedAt:      seconds(j.FinishedAt),
		SendAt:          seconds(j.SendAt),
	}
	if j.Error != "" {
		e := j.Error
		out.Error = &e
	}
	return out
}

// SendToDevice is POST /api/v1/notifications/devices/{id}.
func (h *Handlers) SendToDevice() http.HandlerFunc {
	type input struct {
		Notification *NotificationInput `json:"notification"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		n, err := in.Notification.notification()
		if err != nil {
			return nil, err
		}
		res, err := h.Notifications.SendToDeviceIdempotent(r.Context(), h.idempotencyKey(r), r.PathValue("id"), n)
		if err != nil {
			return nil, err
		}
		return map[string]any{"status": res.Status, "message": res.Message}, nil
	})
}

// Broadcast is POST /api/v1/notifications/broadcasts: 202, the job is
// queued.
func (h *Handlers) Broadcast() http.HandlerFunc {
	type input struct {
		Notification *NotificationInput `json:"notification"`
		SendAt       *time.Time         `json:"sendAt"`
		// Audience decodes straight into the domain type: the same names.
		Audience *notifications.Audience `json:"audience"`
	}
	return handle(http.StatusAccepted, func(r *http.Request, in input) (any, error) {
		n, err := in.Notification.notification()
		if err != nil {
			return nil, err
		}
		j, err := h.Notifications.BroadcastIdempotent(r.Context(), h.idempotencyKey(r), n, notifications.BroadcastOptions{SendAt: in.SendAt, Audience: deref(in.Audience)})
		if err != nil {
			return nil, err
		}
		return broadcastResult(j), nil
	})
}

func broadcastResult(j notifications.Job) map[string]any {
	return map[string]any{"status": j.Status, "message": notifications.QueuedMessage(j), "totalRecipients": j.TotalRecipients, "jobId": j.ID}
}

// ListBroadcasts is GET /api/v1/notifications/broadcasts?first=&after=.
func (h *Handlers) ListBroadcasts() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		first := 0
		if s := r.URL.Query().Get("first"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, apperr.Invalid("first", "a whole number", s)
			}
			first = n
		}
		page, err := h.Notifications.Jobs(r.Context(), first, r.URL.Query().Get("after"))
		if err != nil {
			return nil, err
		}
		nodes := make([]NotificationJob, 0, len(page.Jobs))
		for _, j := range page.Jobs {
			nodes = append(nodes, NewNotificationJob(j))
		}
		return map[string]any{"nodes": nodes, "pageInfo": pageInfo(page.EndCursor, page.HasNextPage)}, nil
	})
}

// listPage is a REST list's data: the page's items, each made a record
// by convert, and its pageInfo.
func listPage[I, R any](p cursor.Page[I], convert func(I) R) map[string]any {
	nodes := make([]R, 0, len(p.Items))
	for _, it := range p.Items {
		nodes = append(nodes, convert(it))
	}
	return map[string]any{"nodes": nodes, "pageInfo": pageInfo(p.EndCursor, p.HasNextPage)}
}

func pageInfo(end string, more bool) PageInfo {
	p := PageInfo{HasNextPage: more}
	if end != "" {
		p.EndCursor = &end
	}
	return p
}

// GetBroadcast is GET /api/v1/notifications/broadcasts/{id}.
func (h *Handlers) GetBroadcast() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		j, err := h.Notifications.Job(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return NewNotificationJob(j), nil
	})
}

// CancelBroadcast is DELETE /api/v1/notifications/broadcasts/{id}: the job
// as it is after the cancel (a finished one unchanged).
func (h *Handlers) CancelBroadcast() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		j, err := h.Notifications.Cancel(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return NewNotificationJob(j), nil
	})
}

// MessengerButton is an inline URL button.
type MessengerButton struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// MessengerOptions are sendMessengerMessage's options.
type MessengerOptions struct {
	Silent      bool                `json:"silent"`
	Buttons     [][]MessengerButton `json:"buttons"`
	ImageURL    string              `json:"imageUrl"`
	DocumentURL string              `json:"documentUrl"`
}

func (o *MessengerOptions) options() messenger.SendOptions {
	if o == nil {
		return messenger.SendOptions{}
	}
	out := messenger.SendOptions{Silent: o.Silent, ImageURL: o.ImageURL, DocumentURL: o.DocumentURL}
	for _, row := range o.Buttons {
		var bs []messenger.Button
		for _, b := range row {
			bs = append(bs, messenger.Button{Text: b.Text, URL: b.URL})
		}
		out.Buttons = append(out.Buttons, bs)
	}
	return out
}

// SendMessengerMessage is POST /api/v1/messenger/messages.
func (h *Handlers) SendMessengerMessage() http.HandlerFunc {
	type input struct {
		ChatID  string            `json:"chatId"`
		Message string            `json:"message"`
		Options *MessengerOptions `json:"options"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		id, err := h.Messenger.SendIdempotent(r.Context(), h.idempotencyKey(r), in.ChatID, in.Message, in.Options.options())
		if err != nil {
			return nil, err
		}
		return map[string]any{"success": true, "messageId": id}, nil
	})
}

// SendToUser is POST /api/v1/notifications/users/{id}.
func (h *Handlers) SendToUser() http.HandlerFunc {
	type input struct {
		Notification *NotificationInput `json:"notification"`
		Channels     []string           `json:"channels"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		n, err := in.Notification.notification()
		if err != nil {
			return nil, err
		}
		return h.Notifications.SendToUserIdempotent(r.Context(), h.idempotencyKey(r), r.PathValue("id"), n, in.Channels)
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
