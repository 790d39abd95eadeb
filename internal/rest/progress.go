package rest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/view"
)

// Defaults of StreamLimits.
const (
	DefaultStreamHeartbeat   = 15 * time.Second
	DefaultStreamMaxDuration = 10 * time.Minute
)

// StreamLimits bound the event streams (Server-Sent Events) as WSLimits
// bound WebSocket connections; zero values are the defaults.
type StreamLimits struct {
	// Heartbeat is how often a stream gets a comment line, so that
	// proxies keep it open; the stream's credential is checked again at
	// each.
	Heartbeat time.Duration
	// MaxDuration is how long one stream lasts at most; the client then
	// reconnects with Last-Event-ID, and is admitted again.
	MaxDuration time.Duration
	// MaxPerCaller and MaxPerAddress bound the open streams of one user
	// (or API key) and of one client address (an IPv6 client's /64) on
	// this replica; 0: no bound.
	MaxPerCaller, MaxPerAddress int
}

func (l StreamLimits) withDefaults() StreamLimits {
	if l.Heartbeat <= 0 {
		l.Heartbeat = DefaultStreamHeartbeat
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = DefaultStreamMaxDuration
	}
	return l
}

// lastEventID reads a reconnecting client's Last-Event-ID header: the
// version of the last state it has, or -1 when it has none (even version
// 0, scheduled, is news then).
func lastEventID(header string) (int64, error) {
	v := strings.TrimSpace(header)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, apperr.Invalid("Last-Event-ID", "an event id of this stream (a non-negative integer)", v)
	}
	return n, nil
}

// BroadcastEvents is GET /api/v1/notifications/broadcasts/{id}/events:
// the job's progress as Server-Sent Events. Each event is "progress", its
// id the job's version (notifications.Job.Version, monotonic per job and
// the same on every replica), its data the job as JSON. The current state
// comes first, whatever it is (a scheduled job's too), unless
// Last-Event-ID says the client has it; the stream ends after the final
// state. A finished job whose final state the client has (Last-Event-ID)
// answers 204, which tells EventSource to stop reconnecting.
//
// Like a WebSocket connection, a stream is counted against its caller's
// and its address's caps (TOO_MANY_STREAMS before it starts), its
// credential is checked again at every heartbeat and ends it at its
// expiry, with an "error" event naming the code (TOKEN_INVALID,
// TOKEN_EXPIRED…), and it lasts at most MaxDuration.
func (h *Handlers) BroadcastEvents() http.HandlerFunc {
	lim := h.Streams.withDefaults()
	var open limits.Slots // this replica's streams, per caller and per address
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		id := r.PathValue("id")
		after, err := lastEventID(r.Header.Get("Last-Event-ID"))
		if err != nil {
			api.WriteError(w, r, err)
			return
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
		release, err := takeStream(r, &open, lim)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		defer release()
		events, err := h.Notifications.Watch(ctx, id, after)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		stream(h, w, r, lim, events, func(w io.Writer, j notifications.Job) {
			data, _ := json.Marshal(view.NewNotificationJob(j))
			fmt.Fprintf(w, "id: %d\nevent: progress\ndata: %s\n\n", j.Version(), data)
		})
	}
}

// takeStream counts a stream against its caller's and its address's caps
// on this replica (TOO_MANY_STREAMS over either); release gives its
// places back.
func takeStream(r *http.Request, open *limits.Slots, lim StreamLimits) (release func(), err error) {
	caller := auth.Caller(r.Context())
	addressKey := limits.AddressSlot(api.Info(r.Context()).ClientIP)
	if !open.Take(addressKey, lim.MaxPerAddress) {
		return nil, tooManyStreams(lim, lim.MaxPerAddress, "address")
	}
	if !open.Take(caller.Subject(), lim.MaxPerCaller) {
		open.Release(addressKey)
		return nil, tooManyStreams(lim, lim.MaxPerCaller, "caller")
	}
	return func() { open.Release(caller.Subject()); open.Release(addressKey) }, nil
}

// stream answers a Server-Sent Events stream: each value of events as
// write writes it, until events is closed; a comment line every
// heartbeat, at which the credential is checked again (an "error" event
// ends the stream when it no longer holds); the credential's expiry, the
// stream's longest duration and the server's shutdown end it too.
func stream[T any](h *Handlers, w http.ResponseWriter, r *http.Request, lim StreamLimits, events <-chan T, write func(io.Writer, T)) {
	ctx := r.Context()
	caller := auth.Caller(ctx)
	info := api.Info(ctx)
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
	beat := time.NewTicker(lim.Heartbeat)
	defer beat.Stop()
	end := time.NewTimer(lim.MaxDuration)
	defer end.Stop()
	var expiry <-chan time.Time
	if !caller.ExpiresAt.IsZero() {
		t := time.NewTimer(time.Until(caller.ExpiresAt))
		defer t.Stop()
		expiry = t.C
	}
	for {
		select {
		case v, ok := <-events:
			if !ok {
				return
			}
			write(w, v)
		case <-beat.C:
			// A logout, a revoked session or API key ends the stream
			// within a heartbeat; a database outage does not.
			if ae := h.refused(r, info.Credential); ae != nil {
				writeErrorEvent(w, ae)
				rc.Flush()
				return
			}
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-expiry:
			// The credential's end is the stream's: the client
			// reconnects with a fresh one.
			ae := h.refused(r, info.Credential)
			if ae == nil { // a verifier's clock a moment behind
				ae = expired(caller)
			}
			writeErrorEvent(w, ae)
			rc.Flush()
			return
		case <-end.C:
			// Its time is up: EventSource reconnects with its
			// Last-Event-ID and is admitted again.
			return
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

// tooManyStreams refuses a stream over a cap: per "caller" or "address".
// Retry after one heartbeat: a stream whose client has gone is noticed
// within one, and frees its place.
func tooManyStreams(lim StreamLimits, limit int, per string) error {
	return apperr.Newf(apperr.TooManyStreams, "This %s has %d event streams open on this server, the most allowed; close one first.", per, limit).
		With("limit", limit).With("per", per).WithRetryAfter(apperr.WaitSeconds(lim.Heartbeat))
}

// writeErrorEvent ends a stream with an "error" event: its data is the
// error object of the REST envelope (code, message, details). It has no
// id, so a reconnecting client's Last-Event-ID stays that of the last
// progress event.
func writeErrorEvent(w http.ResponseWriter, ae *apperr.Error) {
	data, _ := json.Marshal(api.EnvelopeError{Code: ae.Code, Message: ae.Message, Details: ae.Details})
	fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
}

// refused authenticates a stream's credential again: the refusal it now
// gets (401 or 403), or nil while it holds, or when the check itself
// failed (an unreachable database does not end streams).
func (h *Handlers) refused(r *http.Request, c auth.Credential) *apperr.Error {
	_, err := h.Authenticator.Authenticate(r.Context(), c)
	if err == nil || r.Context().Err() != nil {
		return nil
	}
	if ae := api.Classify(err); ae.Status() == http.StatusUnauthorized || ae.Status() == http.StatusForbidden {
		return ae
	}
	return nil
}

// expired is the refusal of p's credential at its expiry, as the verifiers
// give it: TOKEN_EXPIRED for an access token, TOKEN_INVALID for an API key.
func expired(p auth.Principal) *apperr.Error {
	if p.Kind == auth.APIKey {
		return apperr.Newf(apperr.TokenInvalid, "This API key expired.")
	}
	return apperr.New(apperr.TokenExpired).With("expiredAt", p.ExpiresAt.UTC().Format(time.RFC3339)).With("tokenType", "access")
}
