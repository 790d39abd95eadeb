package rest

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/view"
)

// notificationInput is a notification as REST takes it. Data stays raw so
// that it is decoded as the GraphQL door decodes it (numbers kept exact).
type notificationInput struct {
	Subject string          `json:"subject"`
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data"`
	// Options decode straight into the domain type: the same names.
	Options *notifications.PushOptions `json:"options"`
}

func (n *notificationInput) notification() (notifications.Notification, error) {
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

// sendToDeviceBody is the body of SendToDevice.
type sendToDeviceBody struct {
	Notification *notificationInput `json:"notification"`
}

// SendToDevice is POST /api/v1/notifications/devices/{id}.
func (h *Handlers) SendToDevice() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in sendToDeviceBody) (any, error) {
		n, err := in.Notification.notification()
		if err != nil {
			return nil, err
		}
		res, err := h.Notifications.SendToDeviceIdempotent(r.Context(), h.idempotencyKey(r), r.PathValue("id"), n)
		if err != nil {
			return nil, err
		}
		return view.NewSendNotificationResult(res), nil
	})
}

// broadcastBody is the body of Broadcast.
type broadcastBody struct {
	Notification *notificationInput `json:"notification"`
	SendAt       *time.Time         `json:"sendAt"`
	// Audience decodes straight into the domain type: the same names.
	Audience *notifications.Audience `json:"audience"`
	Category string                  `json:"category"`
	// Inbox also keeps it in the inbox of every account the audience
	// reaches.
	Inbox bool `json:"inbox"`
	// Urgent passes through the recipients' quiet hours.
	Urgent bool `json:"urgent"`
	// SendAtLocal sends it at a wall-clock time in each recipient's zone.
	SendAtLocal *view.LocalTime `json:"sendAtLocal"`
	// Channels are push (the default) and email.
	Channels []string `json:"channels"`
}

// Broadcast is POST /api/v1/notifications/broadcasts: 202, the job is
// queued.
func (h *Handlers) Broadcast() http.HandlerFunc {
	return handle(http.StatusAccepted, func(r *http.Request, in broadcastBody) (any, error) {
		n, err := in.Notification.notification()
		if err != nil {
			return nil, err
		}
		j, err := h.Notifications.BroadcastIdempotent(r.Context(), h.idempotencyKey(r), n, notifications.BroadcastOptions{SendAt: in.SendAt, Audience: deref(in.Audience), Category: in.Category, Inbox: in.Inbox, Urgent: in.Urgent, SendAtLocal: in.SendAtLocal.SendTime(), Channels: in.Channels})
		if err != nil {
			return nil, err
		}
		return view.NewBroadcastResult(j), nil
	})
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
		return view.NewPage(page.Jobs, view.NewNotificationJob, page.EndCursor, page.HasNextPage), nil
	})
}

// listPage is a REST list's data: the page's items, each made a record
// by convert, and its pageInfo.
func listPage[I, R any](p cursor.Page[I], convert func(I) R) view.Page[R] {
	return view.NewPage(p.Items, convert, p.EndCursor, p.HasNextPage)
}

// GetBroadcast is GET /api/v1/notifications/broadcasts/{id}.
func (h *Handlers) GetBroadcast() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		j, err := h.Notifications.Job(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.NewNotificationJob(j), nil
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
		return view.NewNotificationJob(j), nil
	})
}

// sendMessengerMessageBody is the body of SendMessengerMessage.
type sendMessengerMessageBody struct {
	ChatID  string                 `json:"chatId"`
	Message string                 `json:"message"`
	Options *view.MessengerOptions `json:"options"`
}

// SendMessengerMessage is POST /api/v1/messenger/messages.
func (h *Handlers) SendMessengerMessage() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in sendMessengerMessageBody) (any, error) {
		id, err := h.Messenger.SendIdempotent(r.Context(), h.idempotencyKey(r), in.ChatID, in.Message, in.Options.SendOptions())
		if err != nil {
			return nil, err
		}
		return view.MessengerMessageResult{Success: true, MessageID: id}, nil
	})
}

// sendToUserBody is the body of SendToUser.
type sendToUserBody struct {
	Notification *notificationInput `json:"notification"`
	Channels     []string           `json:"channels"`
	Category     string             `json:"category"`
	Urgent       bool               `json:"urgent"`
	// Inbox also keeps it in the user's inbox.
	Inbox bool `json:"inbox"`
}

// SendToUser is POST /api/v1/notifications/users/{id}.
func (h *Handlers) SendToUser() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in sendToUserBody) (any, error) {
		n, err := in.Notification.notification()
		if err != nil {
			return nil, err
		}
		res, err := h.Notifications.SendToUserIdempotent(r.Context(), h.idempotencyKey(r), r.PathValue("id"), n, notifications.UserSendOptions{Channels: in.Channels, Category: in.Category, Urgent: in.Urgent, Inbox: in.Inbox})
		if err != nil {
			return nil, err
		}
		return view.NewSendToUserResult(res), nil
	})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
