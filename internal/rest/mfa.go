package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/view"
)

// MyMFA is GET /api/v1/users/me/mfa: the caller's second factors.
func (h *Handlers) MyMFA() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		st, err := h.MFA.StatusOf(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.NewMFAStatus(st), nil
	})
}

// enrollTOTPBody is the body of EnrollTOTP (optional).
type enrollTOTPBody struct {
	Name string `json:"name"`
}

// EnrollTOTP is POST /api/v1/users/me/mfa/totp: a TOTP factor waiting for
// its first code.
func (h *Handlers) EnrollTOTP() http.HandlerFunc {
	return handleOptional(http.StatusCreated, func(r *http.Request, in enrollTOTPBody) (any, error) {
		e, err := h.MFA.EnrollTOTP(r.Context(), auth.Caller(r.Context()), in.Name)
		if err != nil {
			return nil, err
		}
		return view.NewTOTPEnrollment(e), nil
	})
}

// mfaCodeBody is a body carrying one second-factor code.
type mfaCodeBody struct {
	Code string `json:"code"`
}

// ConfirmTOTP is POST /api/v1/users/me/mfa/totp/{id}/confirm.
func (h *Handlers) ConfirmTOTP() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in mfaCodeBody) (any, error) {
		if err := api.Required("code", in.Code); err != nil {
			return nil, err
		}
		c, err := h.MFA.ConfirmTOTP(r.Context(), auth.Caller(r.Context()), r.PathValue("id"), in.Code)
		if err != nil {
			return nil, err
		}
		return view.NewMFAConfirmed(c), nil
	})
}

// RemoveMFAFactor is DELETE /api/v1/users/me/mfa/factors/{id}.
func (h *Handlers) RemoveMFAFactor() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.MFA.RemoveFactor(r.Context(), auth.Caller(r.Context()), id); err != nil {
			return nil, err
		}
		return view.MFAFactorRemoved{FactorID: id, Removed: true}, nil
	})
}

// RegenerateRecoveryCodes is POST /api/v1/users/me/mfa/recovery-codes.
func (h *Handlers) RegenerateRecoveryCodes() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		codes, err := h.MFA.RegenerateRecoveryCodes(r.Context(), auth.Caller(r.Context()))
		if err != nil {
			return nil, err
		}
		return view.RecoveryCodes{RecoveryCodes: codes}, nil
	})
}

// completeMFALoginBody is the body of CompleteMFALogin.
type completeMFALoginBody struct {
	ChallengeToken string `json:"challengeToken"`
	Code           string `json:"code"`
}

// CompleteMFALogin is POST /api/v1/auth/login/mfa: the second call of a
// login that answered MFA_REQUIRED.
func (h *Handlers) CompleteMFALogin() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in completeMFALoginBody) (any, error) {
		if err := api.Required("challengeToken", in.ChallengeToken); err != nil {
			return nil, err
		}
		if err := api.Required("code", in.Code); err != nil {
			return nil, err
		}
		t, err := h.MFA.CompleteLogin(r.Context(), in.ChallengeToken, in.Code, sessions.ClientAt(api.Info(r.Context()).UserAgent, api.Info(r.Context()).ClientIP))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// VerifyMFA is POST /api/v1/auth/mfa/verify: the caller's session steps
// up to aal2.
func (h *Handlers) VerifyMFA() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in mfaCodeBody) (any, error) {
		if err := api.Required("code", in.Code); err != nil {
			return nil, err
		}
		t, err := h.MFA.Verify(r.Context(), auth.Caller(r.Context()), in.Code)
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// UserMFA is GET /api/v1/admin/users/{id}/mfa.
func (h *Handlers) UserMFA() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if _, err := h.Accounts.User(r.Context(), id); err != nil {
			return nil, err
		}
		st, err := h.MFA.StatusOf(r.Context(), id)
		if err != nil {
			return nil, err
		}
		return view.NewMFAStatus(st), nil
	})
}

// ResetUserMFA is DELETE /api/v1/admin/users/{id}/mfa.
func (h *Handlers) ResetUserMFA() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		n, err := h.MFA.Reset(r.Context(), auth.Caller(r.Context()), id)
		if err != nil {
			return nil, err
		}
		return view.MFAReset{UserID: id, FactorsRemoved: n}, nil
	})
}

// handleOptional is handle for a body that may be left out: a request
// without one (Content-Length 0) decodes as the zero In.
func handleOptional[In any](status int, fn func(r *http.Request, in In) (any, error)) http.HandlerFunc {
	withBody := handle(status, fn)
	without := handle(status, func(r *http.Request, _ noBody) (any, error) {
		var in In
		return fn(r, in)
	})
	return func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength == 0 {
			without(w, r)
			return
		}
		withBody(w, r)
	}
}
