package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/view"
)

// Login is POST /api/v1/auth/login.
func (h *Handlers) Login() http.HandlerFunc {
	type input struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		t, err := h.Sessions.Login(r.Context(), in.Email, in.Password, sessions.ClientAt(api.Info(r.Context()).UserAgent, api.Info(r.Context()).ClientIP))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// Refresh is POST /api/v1/auth/refresh.
func (h *Handlers) Refresh() http.HandlerFunc {
	type input struct {
		RefreshToken string `json:"refreshToken"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
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
		if err := h.Sessions.Logout(r.Context(), auth.Caller(r.Context()).SessionID); err != nil {
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

// RequestPasswordReset is POST /api/v1/auth/password-reset.
func (h *Handlers) RequestPasswordReset() http.HandlerFunc {
	type input struct {
		Email string `json:"email"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		if err := h.Accounts.RequestPasswordReset(r.Context(), in.Email); err != nil {
			return nil, err
		}
		return view.ResetRequested{Message: "If an account has this email, a reset code is on its way."}, nil
	})
}

// ResetPassword is POST /api/v1/auth/password-reset/confirm.
func (h *Handlers) ResetPassword() http.HandlerFunc {
	type input struct {
		Email       string `json:"email"`
		Code        string `json:"code"`
		NewPassword string `json:"newPassword"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		if err := h.Accounts.ResetPassword(r.Context(), in.Email, in.Code, in.NewPassword); err != nil {
			return nil, err
		}
		return view.PasswordReset{PasswordReset: true, Message: "Password changed; log in again on every device."}, nil
	})
}
