package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/storage"
)

// Envelope is the REST response shape of the spec's section 2.
type Envelope struct {
	Success bool           `json:"success"`
	Data    any            `json:"data,omitempty"`
	Error   *EnvelopeError `json:"error,omitempty"`
}

// EnvelopeError is the error member of the envelope.
type EnvelopeError struct {
	Code    apperr.Code    `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// restCodes renames the codes whose REST name differs from the GraphQL one
// (the spec's section 7).
var restCodes = map[apperr.Code]apperr.Code{
	apperr.EmailExists: apperr.EmailAlreadyExists,
}

// WriteData writes a success envelope.
func WriteData(w http.ResponseWriter, status int, data any) {
	writeJSON(w, status, Envelope{Success: true, Data: data})
}

// WriteError writes the error envelope of err. An error that is not an
// application error is logged with the request's logger and shown as
// INTERNAL_ERROR, never with its text.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if ClientGone(r.Context(), err) {
		WriteClientGone(w, r)
		return
	}
	ae := Classify(err)
	LogUnexpected(r.Context(), err, ae)
	code := ae.Code
	if renamed, ok := restCodes[code]; ok {
		code = renamed
	}
	if ae.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(ae.RetryAfterSeconds))
	}
	writeJSON(w, ae.Status(), Envelope{Error: &EnvelopeError{Code: code, Message: ae.Message, Details: ae.Details}})
}

// writeJSON is the one place a JSON response is written.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"success":false,"error":{"code":"INTERNAL_ERROR","message":"An unexpected error occurred."}}`)
	}
	WriteRawJSON(w, status, body)
}

// WriteRawJSON writes an already encoded JSON body.
func WriteRawJSON(w http.ResponseWriter, status int, body []byte) {
	WriteRaw(w, status, "application/json; charset=utf-8", body)
}

// WriteRaw writes an already encoded body of the given content type.
func WriteRaw(w http.ResponseWriter, status int, contentType string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}

// Classify is the application error a door shows for err: an application
// error as it is; text the database cannot store VALIDATION_ERROR (400); a
// database that is locked, overloaded or unreachable, work refused by its
// class's bounds (package shed), and a deadline that passed (the
// request's own, HERALD_REQUEST_TIMEOUT, or a query's), for what it waited
// on was too slow, not wrong: SERVICE_UNAVAILABLE (503, retryable);
// anything else INTERNAL_ERROR.
func Classify(err error) *apperr.Error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, storage.ErrInvalidText) {
		return apperr.Newf(apperr.ValidationError, "A field holds characters that cannot be stored (a NUL byte or invalid UTF-8).").
			With("constraint", "valid UTF-8 without NUL").With("received", "invalid characters")
	}
	if errors.Is(err, storage.ErrUnavailable) {
		return apperr.Newf(apperr.ServiceUnavailable, "The database is unavailable; try again shortly.").WithRetryAfter(UnavailableRetryAfter)
	}
	if errors.Is(err, storage.ErrBusy) {
		return apperr.Newf(apperr.ServiceUnavailable, "The service is busy; try again shortly.").WithRetryAfter(1)
	}
	if refused, ok := errors.AsType[*shed.Refused](err); ok {
		return apperr.Newf(apperr.ServiceUnavailable, "The server is at capacity for %s; try again shortly.", refused.Class).
			WithRetryAfter(apperr.WaitSeconds(refused.RetryAfter))
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return apperr.Newf(apperr.ServiceUnavailable, "The request ran out of time waiting for the database; try again shortly.").WithRetryAfter(UnavailableRetryAfter)
	}
	return apperr.New(apperr.Internal)
}

// StatusClientClosedRequest is the status a request the client abandoned
// is logged and counted under (nginx's 499); nothing reaches the client.
const StatusClientClosedRequest = 499

// ClientGone reports whether err is the request's own cancellation: the
// client went away before the answer.
func ClientGone(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, context.Canceled)
}

// WriteClientGone records a request the client abandoned: an INFO line, and
// status 499 for the request log and metrics.
func WriteClientGone(w http.ResponseWriter, r *http.Request) {
	Logger(r.Context()).InfoContext(r.Context(), "client closed request")
	w.WriteHeader(StatusClientClosedRequest)
}

// UnavailableRetryAfter is the Retry-After, in seconds, of a request
// refused because the database cannot be reached.
const UnavailableRetryAfter = 2

// LogUnexpected logs what a door shows as ae for err, when the client
// could not have caused it: an internal error at ERROR with its text, a
// busy database at WARN. An unreachable database is not logged per
// request: the store logs the outage once, and its end.
func LogUnexpected(ctx context.Context, err error, ae *apperr.Error, attrs ...any) {
	switch {
	case ae.Code == apperr.Internal:
		Logger(ctx).ErrorContext(ctx, "internal error", append([]any{"err", err}, attrs...)...)
	case ae.Code == apperr.ServiceUnavailable && errors.Is(err, storage.ErrUnavailable):
		Logger(ctx).DebugContext(ctx, "database unavailable", append([]any{"err", err}, attrs...)...)
	case ae.Code == apperr.ServiceUnavailable && errors.Is(err, storage.ErrBusy):
		Logger(ctx).WarnContext(ctx, "database busy", append([]any{"err", err}, attrs...)...)
	case ae.Code == apperr.ServiceUnavailable && errors.Is(err, context.DeadlineExceeded):
		Logger(ctx).WarnContext(ctx, "deadline exceeded", append([]any{"err", err}, attrs...)...)
	}
}
