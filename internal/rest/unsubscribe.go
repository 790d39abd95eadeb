package rest

import (
	_ "embed"
	"errors"
	"html/template"
	"mime"
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/view"
)

//go:embed unsubscribe.html
var unsubscribePageHTML string

var unsubscribePage = template.Must(template.New("unsubscribe").Parse(unsubscribePageHTML))

// unsubscribePageData is what the unsubscribe page shows: the form
// before, the outcome after.
type unsubscribePageData struct {
	Token    string
	Category string
	Done     bool
	Error    string
}

// unsubscribeMaxBody bounds an unsubscribe post's body: the one-click
// form is 26 bytes.
const unsubscribeMaxBody = 4096

// oneClick is the body of an RFC 8058 one-click POST: the form field
// List-Unsubscribe with the value One-Click.
const (
	oneClickField = "List-Unsubscribe"
	oneClickValue = "One-Click"
)

// UnsubscribePage is GET /api/v1/notifications/unsubscribe?token=…,
// where a notification email's unsubscribe link lands in a browser: a
// page naming the category, whose button posts the one-click form.
// Opening the link changes nothing, so that a mail scanner that follows
// links cannot unsubscribe anyone. A token that is damaged, not the
// server's or expired is the page's 400 (UNSUBSCRIBE_LINK_INVALID).
func (h *Handlers) UnsubscribePage() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		token := r.URL.Query().Get("token")
		u, err := h.Preferences.UnsubscribeLinks().Parse(token)
		if err != nil && !wantsHTML(r) {
			api.WriteError(w, r, err) // a client, as the end-session link answers one
			return
		}
		if err != nil {
			writeUnsubscribePage(w, http.StatusBadRequest, unsubscribePageData{Error: apperr.As(err).Message})
			return
		}
		writeUnsubscribePage(w, http.StatusOK, unsubscribePageData{Token: token, Category: u.Category})
	}
}

// Unsubscribe is POST /api/v1/notifications/unsubscribe?token=…: the
// one-click unsubscribe of RFC 8058 (a form body
// List-Unsubscribe=One-Click, urlencoded or multipart, the token in the
// query). It turns the category's email off for the token's account
// (preferences.Service.Unsubscribe) and answers the envelope, 200 with
// what is now off; a token that is not valid is 400
// UNSUBSCRIBE_LINK_INVALID, one used already 400 UNSUBSCRIBE_LINK_USED,
// a body without the one-click field 400 VALIDATION_ERROR. The page's own
// form (field page) gets the page back instead.
func (h *Handlers) Unsubscribe() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, unsubscribeMaxBody)
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		var err error
		switch mt {
		case "multipart/form-data":
			err = r.ParseMultipartForm(unsubscribeMaxBody)
		case "application/x-www-form-urlencoded":
			err = r.ParseForm()
		default:
			err = errors.New("not a form")
		}
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			api.WriteError(w, r, apperr.Newf(apperr.PayloadTooLarge, "An unsubscribe post is at most %d bytes.", unsubscribeMaxBody).With("limit", unsubscribeMaxBody))
			return
		}
		if err != nil || r.PostForm.Get(oneClickField) != oneClickValue {
			api.WriteError(w, r, apperr.Newf(apperr.ValidationError, "An unsubscribe is a form post of List-Unsubscribe=One-Click (RFC 8058).").
				With("field", oneClickField).With("constraint", "One-Click, as a form field").With("received", r.PostForm.Get(oneClickField)))
			return
		}
		page := r.PostForm.Get("page") != ""
		u, err := h.Preferences.Unsubscribe(r.Context(), r.URL.Query().Get("token"))
		switch {
		case err == nil && page:
			writeUnsubscribePage(w, http.StatusOK, unsubscribePageData{Done: true, Category: u.Category})
		case err == nil:
			api.WriteData(w, http.StatusOK, view.NewUnsubscribed(u))
		case page && (apperr.Is(err, apperr.UnsubscribeLinkInvalid) || apperr.Is(err, apperr.UnsubscribeLinkUsed)):
			writeUnsubscribePage(w, http.StatusBadRequest, unsubscribePageData{Done: true, Error: apperr.As(err).Message})
		default:
			api.WriteError(w, r, err)
		}
	}
}

func writeUnsubscribePage(w http.ResponseWriter, status int, d unsubscribePageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	_ = unsubscribePage.Execute(w, d)
}
