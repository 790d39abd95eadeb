package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/sessions"
)

// Authed wraps a handler that needs a valid access token (and scope, when
// not empty); the identity is in the request's context.
func (h *Handlers) Authed(scope string, next func(http.ResponseWriter, *http.Request, sessions.Identity)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, err := h.Sessions.Require(r.Context(), scope)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		id, _ := sessions.FromContext(ctx)
		next(w, r.WithContext(ctx), id)
	}
}

func tokensData(t sessions.Tokens) map[string]any {
	return map[string]any{"token": t.AccessToken, "refreshToken": t.RefreshToken, "tokenType": t.TokenType, "expiresIn": t.ExpiresIn}
}

// Login is POST /api/v1/auth/login.
func (h *Handlers) Login(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	t, err := h.Sessions.Login(r.Context(), in.Email, in.Password)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, tokensData(t))
}

// Refresh is POST /api/v1/auth/refresh.
func (h *Handlers) Refresh(w http.ResponseWriter, r *http.Request) {
	var in struct {
		RefreshToken string `json:"refreshToken"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := api.Required("refreshToken", in.RefreshToken); err != nil {
		api.WriteError(w, r, err)
		return
	}
	t, err := h.Sessions.Refresh(r.Context(), in.RefreshToken)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, tokensData(t))
}

// Logout is POST /api/v1/auth/logout.
func (h *Handlers) Logout(w http.ResponseWriter, r *http.Request, id sessions.Identity) {
	if err := h.Sessions.Logout(r.Context(), id); err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"loggedOut": true})
}

// Me is GET /api/v1/users/me.
func (h *Handlers) Me(w http.ResponseWriter, r *http.Request, id sessions.Identity) {
	acct, err := h.Accounts.ByID(r.Context(), id.AccountID)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, NewUser(acct, h.Accounts.Now()))
}

// RequestPasswordReset is POST /api/v1/auth/password-reset.
func (h *Handlers) RequestPasswordReset(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email string `json:"email"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := h.Accounts.RequestPasswordReset(r.Context(), in.Email); err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"message": "If an account has this email, a reset code is on its way."})
}

// ResetPassword is POST /api/v1/auth/password-reset/confirm.
func (h *Handlers) ResetPassword(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email       string `json:"email"`
		Code        string `json:"code"`
		NewPassword string `json:"newPassword"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := h.Accounts.ResetPassword(r.Context(), in.Email, in.Code, in.NewPassword); err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"passwordReset": true, "message": "Password changed; log in again on every device."})
}
