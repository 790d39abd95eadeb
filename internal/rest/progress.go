package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

// SSEHeartbeat is how often an idle event stream gets a comment line, so
// that proxies and load balancers keep it open.
const SSEHeartbeat = 15 * time.Second

// BroadcastEvents is GET /api/v1/notifications/broadcasts/{id}/events:
// the job's progress as Server-Sent Events. Each event is "progress", its
// id the job's version (notifications.Job.Version, monotonic per job and
// the same on every replica), its data the job as JSON. The current state
// comes first unless Last-Event-ID says the client has it; the stream
// ends after the final state. A finished job whose final state the client
// has (Last-Event-ID) answers 204, which tells EventSource to stop
// reconnecting.
func (h *Handlers) BroadcastEvents() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := r.PathValue("id")
		var after int64
		if v := strings.TrimSpace(r.Header.Get("Last-Event-ID")); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				api.WriteError(w, r, apperr.Invalid("Last-Event-ID", "an event id of this stream (a non-negative integer)", v))
				return
			}
			after = n
		}
		j, err := h.Notifications.Job(ctx, id)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		if j.Finished() && j.Version() <= after {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		events, err := h.Notifications.Watch(ctx, id, after)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		rc := http.NewResponseController(w)
		// The server's timeouts are for requests and answers, not for
		// streams.
		rc.SetWriteDeadline(time.Time{})
		rc.SetReadDeadline(time.Time{})
		hdr := w.Header()
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		hdr.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, "retry: 2000\n\n")
		rc.Flush()
		beat := time.NewTicker(SSEHeartbeat)
		defer beat.Stop()
		for {
			select {
			case j, ok := <-events:
				if !ok {
					return
				}
				data, _ := json.Marshal(NewNotificationJob(j))
				fmt.Fprintf(w, "id: %d\nevent: progress\ndata: %s\n\n", j.Version(), data)
			case <-beat.C:
				fmt.Fprint(w, ": keep-alive\n\n")
			case <-h.Stopping:
				// Shutting down: the client reconnects (to another
				// replica) with its Last-Event-ID.
				return
			case <-ctx.Done():
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	}
}
