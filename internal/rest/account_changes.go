package rest

import (
	_ "embed"
	"html/template"
	"mime"
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/view"
)

// changeEmailBody is the body of ChangeEmail.
type changeEmailBody struct {
	Email string `json:"email"`
}

// ChangeEmail is POST /api/v1/users/me/email: a code goes to the new
// address and a notice, with a cancel link, to the current one.
func (h *Handlers) ChangeEmail() http.HandlerFunc {
	return handle(http.StatusAccepted, func(r *http.Request, in changeEmailBody) (any, error) {
		pending, err := h.Accounts.RequestEmailChange(r.Context(), auth.Caller(r.Context()), in.Email)
		if err != nil {
			return nil, err
		}
		return view.NewEmailChangeRequest(pending), nil
	})
}

// confirmEmailChangeBody is the body of ConfirmEmailChange.
type confirmEmailChangeBody struct {
	Code string `json:"code"`
}

// ConfirmEmailChange is POST /api/v1/users/me/email/confirm: the new
// address's code makes it the account's email.
func (h *Handlers) ConfirmEmailChange() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in confirmEmailChangeBody) (any, error) {
		acct, err := h.Accounts.ConfirmEmailChange(r.Context(), auth.Caller(r.Context()), in.Code)
		if err != nil {
			return nil, err
		}
		return view.NewUser(acct, h.Accounts.Now()), nil
	})
}

// changePasswordBody is the body of ChangePassword.
type changePasswordBody struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

// ChangePassword is POST /api/v1/users/me/password.
func (h *Handlers) ChangePassword() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in changePasswordBody) (any, error) {
		n, err := h.Accounts.ChangePassword(r.Context(), auth.Caller(r.Context()), in.CurrentPassword, in.NewPassword)
		if err != nil {
			return nil, err
		}
		return view.PasswordChange{SessionsEnded: n}, nil
	})
}

// cancelEmailChangeBody is the body of CancelEmailChange.
type cancelEmailChangeBody struct {
	Token string `json:"token"`
}

//go:embed cancel_email_change.html
var cancelPageHTML string

var cancelPage = template.Must(template.New("cancel").Parse(cancelPageHTML))

// cancelPageData is what the cancel page shows: the form (with the link's
// token) before, the outcome after.
type cancelPageData struct {
	Token     string
	Done      bool
	Cancelled bool
	Error     string
}

// CancelEmailChangePage is GET /api/v1/auth/email-change/cancel?token=…,
// where the old address's link lands: a page whose button posts the
// token. Opening the link changes nothing, so that a mail scanner that
// follows links cannot cancel a change.
func (h *Handlers) CancelEmailChangePage() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeCancelPage(w, http.StatusOK, cancelPageData{Token: r.URL.Query().Get("token")})
	}
}

// CancelEmailChange is POST /api/v1/auth/email-change/cancel: JSON
// {token} answers the envelope; the page's form (urlencoded) answers the
// page with the outcome.
func (h *Handlers) CancelEmailChange() http.HandlerFunc {
	asJSON := handle(http.StatusOK, func(r *http.Request, in cancelEmailChangeBody) (any, error) {
		ok, err := h.Accounts.CancelEmailChange(r.Context(), in.Token)
		if err != nil {
			return nil, err
		}
		return view.EmailChangeCancel{Cancelled: ok}, nil
	})
	return func(w http.ResponseWriter, r *http.Request) {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
			asJSON(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		// A person reads the page: a link that is not valid is an outcome
		// it shows (200); the server's own trouble is the envelope's 5xx.
		if err := r.ParseForm(); err != nil {
			writeCancelPage(w, http.StatusOK, cancelPageData{Done: true, Error: "The form could not be read."})
			return
		}
		ok, err := h.Accounts.CancelEmailChange(r.Context(), r.PostForm.Get("token"))
		if apperr.Is(err, apperr.ValidationError) {
			writeCancelPage(w, http.StatusOK, cancelPageData{Done: true,
				Error: "The link is not valid: it may be damaged or expired. If the change was not yours, change your password."})
			return
		}
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		writeCancelPage(w, http.StatusOK, cancelPageData{Done: true, Cancelled: ok})
	}
}

func writeCancelPage(w http.ResponseWriter, status int, d cancelPageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	_ = cancelPage.Execute(w, d)
}
