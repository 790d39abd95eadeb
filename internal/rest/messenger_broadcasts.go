package rest

import (
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/messenger"
)

// MessengerBroadcast is the REST record of a messenger broadcast job.
type MessengerBroadcast struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	TotalRecipients int        `json:"totalRecipients"`
	Sent            int        `json:"sent"`
	Failed          int        `json:"failed"`
	Blocked         int        `json:"blocked"`
	CreatedAt       time.Time  `json:"createdAt"`
	StartedAt       *time.Time `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt"`
	Error           *string    `json:"error"`
}

func newMessengerBroadcast(b messenger.Broadcast) MessengerBroadcast {
	out := MessengerBroadcast{ID: b.ID, Status: b.Status, TotalRecipients: b.TotalRecipients, Sent: b.Sent, Failed: b.Failed, Blocked: b.Blocked,
		CreatedAt: b.CreatedAt.UTC().Truncate(time.Second), StartedAt: truncPtr(b.StartedAt), FinishedAt: truncPtr(b.FinishedAt)}
	if b.Error != "" {
		out.Error = &b.Error
	}
	return out
}

func truncPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

// SendMessengerBroadcast is POST /api/v1/messenger/broadcasts: 202 with the
// queued job.
func (h *Handlers) SendMessengerBroadcast() http.HandlerFunc {
	type input struct {
		Message string            `json:"message"`
		Options *MessengerOptions `json:"options"`
		// Audience decodes straight into the domain type: the same names.
		Audience *audience.Audience `json:"audience"`
	}
	return handle(http.StatusAccepted, func(r *http.Request, in input) (any, error) {
		b, err := h.MessengerBroadcasts.BroadcastIdempotent(r.Context(), h.idempotencyKey(r), in.Message, in.Options.options(), in.Audience)
		if err != nil {
			return nil, err
		}
		return newMessengerBroadcast(b), nil
	})
}

// GetMessengerBroadcast is GET /api/v1/messenger/broadcasts/{id}.
func (h *Handlers) GetMessengerBroadcast() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		b, err := h.MessengerBroadcasts.Job(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return newMessengerBroadcast(b), nil
	})
}

// CancelMessengerBroadcast is DELETE /api/v1/messenger/broadcasts/{id}: the
// job as it is after the cancel (a finished one unchanged).
func (h *Handlers) CancelMessengerBroadcast() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		b, err := h.MessengerBroadcasts.Cancel(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return newMessengerBroadcast(b), nil
	})
}
