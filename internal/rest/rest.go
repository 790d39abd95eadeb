// Package rest is the REST door under /api/v1: thin handlers that decode a
// request, call a service and write the envelope. Rules live in the
// services; routes, with their tier and scope, live in the server's
// routes.go; the caller comes from the request's context (auth.Caller).
package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/services"
	"github.com/herald-vpn/herald/internal/view"
)

// Handlers is the REST door: the services it opens onto, and what its
// event streams need.
type Handlers struct {
	services.Services
	// Stopping is closed when the server shuts down: event streams end.
	Stopping <-chan struct{}
	// Streams bound the event streams.
	Streams StreamLimits
}

// noBody is the input of a handler that reads no body.
type noBody struct{}

// handle decodes the JSON body into In (unless In is noBody), calls fn and
// writes its answer in the envelope with status, or its error.
func handle[In any](status int, fn func(r *http.Request, in In) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		if _, none := any(in).(noBody); !none {
			if err := api.DecodeJSON(w, r, &in); err != nil {
				api.WriteError(w, r, err)
				return
			}
		}
		out, err := fn(r, in)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		api.WriteData(w, status, out)
	}
}

// registerBody is the body of Register.
type registerBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
	Referral string `json:"referral"`
	Locale   string `json:"locale"`
}

// Register is POST /api/v1/auth/register.
func (h *Handlers) Register() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in registerBody) (any, error) {
		lang := accounts.Language{Locale: in.Locale, Accepted: api.Accepted(api.Info(r.Context()))}
		res, err := h.Accounts.Signup(r.Context(), in.Email, in.Password, in.Referral, lang)
		if err != nil {
			return nil, err
		}
		return view.Registration{
			Message:         accounts.SignupMessage(res.Account.Email),
			User:            view.NewUser(res.Account, h.Accounts.Now()),
			ReferralApplied: res.ReferralApplied,
		}, nil
	})
}

// verifyBody is the body of Verify.
type verifyBody struct {
	Email string `json:"email"`
	Code  string `json:"code"`
}

// Verify is POST /api/v1/auth/verify.
func (h *Handlers) Verify() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in verifyBody) (any, error) {
		if err := h.Accounts.VerifyEmail(r.Context(), in.Email, in.Code); err != nil {
			return nil, err
		}
		return view.Verified{Verified: true, Message: "Email verified; you can log in now."}, nil
	})
}

// resendVerificationBody is the body of ResendVerification.
type resendVerificationBody struct {
	Email string `json:"email"`
}

// ResendVerification is POST /api/v1/auth/resend-verification.
func (h *Handlers) ResendVerification() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in resendVerificationBody) (any, error) {
		if err := h.Accounts.ResendVerification(r.Context(), in.Email); err != nil {
			return nil, err
		}
		return view.CodeSent{Sent: true, Message: "A new verification code is on its way."}, nil
	})
}
