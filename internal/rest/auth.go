package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/view"
)

// loginBody is the body of Login.
type loginBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// Login is POST /api/v1/auth/login.
func (h *Handlers) Login() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in loginBody) (any, error) {
		t, err := h.Sessions.Login(r.Context(), in.Email, in.Password, sessions.ClientAt(api.Info(r.Context()).UserAgent, api.Info(r.Context()).ClientIP))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// refreshBody is the body of Refresh.
type refreshBody struct {
	RefreshToken string `json:"refreshToken"`
}

// Refresh is POST /api/v1/auth/refresh.
func (h *Handlers) Refresh() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in refreshBody) (any, error) {
		if err := api.Required("refreshToken", in.RefreshToken); err != nil {
			return nil, err
		}
		t, err := h.Sessions.Refresh(r.Context(), in.RefreshToken, sessions.ClientAt(api.Info(r.Context()).UserAgent, api.Info(r.Context()).ClientIP))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// Logout is POST /api/v1/auth/logout.
func (h *Handlers) Logout() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		if err := h.Sessions.Logout(r.Context(), auth.Caller(r.Context())); err != nil {
			return nil, err
		}
		return view.LoggedOut{LoggedOut: true}, nil
	})
}

// Me is GET /api/v1/users/me.
func (h *Handlers) Me() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		acct, err := h.Accounts.Profile(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.NewUser(acct, h.Accounts.Now()), nil
	})
}

// requestPasswordResetBody is the body of RequestPasswordReset.
type requestPasswordResetBody struct {
	Email string `json:"email"`
}

// RequestPasswordReset is POST /api/v1/auth/password-reset.
func (h *Handlers) RequestPasswordReset() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in requestPasswordResetBody) (any, error) {
		if err := h.Accounts.RequestPasswordReset(r.Context(), in.Email); err != nil {
			return nil, err
		}
		return view.ResetRequested{Message: "If an account has this email, a reset code is on its way."}, nil
	})
}

// resetPasswordBody is the body of ResetPassword.
type resetPasswordBody struct {
	Email       string `json:"email"`
	Code        string `json:"code"`
	NewPassword string `json:"newPassword"`
}

// ResetPassword is POST /api/v1/auth/password-reset/confirm.
func (h *Handlers) ResetPassword() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in resetPasswordBody) (any, error) {
		if err := h.Accounts.ResetPassword(r.Context(), in.Email, in.Code, in.NewPassword); err != nil {
			return nil, err
		}
		return view.PasswordReset{PasswordReset: true, Message: "Password changed; log in again on every device."}, nil
	})
}
