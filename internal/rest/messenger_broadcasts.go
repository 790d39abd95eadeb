package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/audience"
	"github.com/herald-vpn/herald/internal/view"
)

// sendMessengerBroadcastBody is the body of SendMessengerBroadcast.
type sendMessengerBroadcastBody struct {
	Message string                 `json:"message"`
	Options *view.MessengerOptions `json:"options"`
	// Audience decodes straight into the domain type: the same names.
	Audience *audience.Audience `json:"audience"`
}

// SendMessengerBroadcast is POST /api/v1/messenger/broadcasts: 202 with the
// queued job.
func (h *Handlers) SendMessengerBroadcast() http.HandlerFunc {
	return handle(http.StatusAccepted, func(r *http.Request, in sendMessengerBroadcastBody) (any, error) {
		b, err := h.MessengerBroadcasts.BroadcastIdempotent(r.Context(), h.idempotencyKey(r), in.Message, in.Options.SendOptions(), in.Audience)
		if err != nil {
			return nil, err
		}
		return view.NewMessengerBroadcast(b), nil
	})
}

// GetMessengerBroadcast is GET /api/v1/messenger/broadcasts/{id}.
func (h *Handlers) GetMessengerBroadcast() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		b, err := h.MessengerBroadcasts.Job(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.NewMessengerBroadcast(b), nil
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
		return view.NewMessengerBroadcast(b), nil
	})
}
