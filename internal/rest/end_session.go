package rest

import (
	_ "embed"
	"html/template"
	"mime"
	"net/http"
	"strings"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/view"
)

//go:embed end_session.html
var endSessionPageHTML string

var endSessionPage = template.Must(template.New("end").Parse(endSessionPageHTML))

// endSessionPageData is what the end-session page shows: the outcome.
type endSessionPageData struct {
	Ended bool
	Error string
}

// EndSessionByLink is GET /api/v1/auth/sessions/end?token=…, where a
// new-device alert's "end that session" link lands: it ends the session
// the token names (sessions.Service.EndByLink) and answers a page saying
// it was ended, or had ended already; a client that asks for JSON (Accept)
// gets the envelope. A damaged or expired token is 400 VALIDATION_ERROR.
func (h *Handlers) EndSessionByLink() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ended, err := h.Sessions.EndByLink(r.Context(), r.URL.Query().Get("token"))
		html := wantsHTML(r)
		switch {
		case err == nil && html:
			writeEndSessionPage(w, http.StatusOK, endSessionPageData{Ended: ended})
		case err == nil:
			api.WriteData(w, http.StatusOK, view.SessionEnd{Ended: ended})
		case html && apperr.Is(err, apperr.ValidationError):
			writeEndSessionPage(w, http.StatusBadRequest, endSessionPageData{
				Error: "The link is not valid: it may be damaged or expired (links work for 7 days). End the session from your account's list of sessions instead, and change your password if the sign-in was not yours."})
		default:
			api.WriteError(w, r, err)
		}
	}
}

// wantsHTML reports whether the client prefers a page to the envelope: a
// browser (Accept names text/html, or nothing) does; a client that names
// application/json and not text/html does not.
func wantsHTML(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	if accept == "" {
		return true
	}
	json := false
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/html", "application/xhtml+xml":
			return true
		case "application/json":
			json = true
		}
	}
	return !json
}

func writeEndSessionPage(w http.ResponseWriter, status int, d endSessionPageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	w.WriteHeader(status)
	_ = endSessionPage.Execute(w, d)
}
