package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/herald-vpn/herald/internal/apperr"
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
	ae := Classify(err)
	switch ae.Code {
	case apperr.Internal:
		Logger(r.Context()).ErrorContext(r.Context(), "internal error", "err", err)
	case apperr.ServiceUnavailable:
		Logger(r.Context()).WarnContext(r.Context(), "database busy or unreachable", "err", err)
	}
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
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	w.Write(body)
	w.Write([]byte{'\n'})
}

// Classify is the application error a door shows for err: an application
// error as it is; text the database cannot store VALIDATION_ERROR (400); a
// database that is locked, overloaded or unreachable
// SERVICE_UNAVAILABLE (503, retryable); anything else INTERNAL_ERROR.
func Classify(err error) *apperr.Error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return ae
	}
	if errors.Is(err, storage.ErrInvalidText) {
		return apperr.Newf(apperr.ValidationError, "A field holds characters that cannot be stored (a NUL byte or invalid UTF-8).").
			With("constraint", "valid UTF-8 without NUL").With("received", "invalid characters")
	}
	if errors.Is(err, storage.ErrBusy) {
		return apperr.Newf(apperr.ServiceUnavailable, "The service is busy; try again shortly.").WithRetryAfter(1)
	}
	return apperr.New(apperr.Internal)
}
