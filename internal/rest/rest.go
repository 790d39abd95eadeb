// Package rest is the REST door under /api/v1: thin handlers that decode a
// request, call a service and write the envelope. Rules live in the
// services; routes live in the server's routes.go.
package rest

import (
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/sessions"
)

// Handlers holds the services the REST door opens onto.
type Handlers struct {
	Accounts *accounts.Service
	Sessions *sessions.Service
	Devices  *devices.Service
}

// User is the REST user record (the spec's section 2).
type User struct {
	ID            string       `json:"id"`
	Email         string       `json:"email"`
	EmailVerified bool         `json:"emailVerified"`
	CreatedAt     time.Time    `json:"createdAt"`
	ReferralCode  string       `json:"referralCode"`
	Subscription  Subscription `json:"subscription"`
}

// Subscription is the user's plan as REST shows it.
type Subscription struct {
	Plan      string    `json:"plan"`
	Status    string    `json:"status"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// NewUser renders an account; times are UTC, so JSON shows them as
// 2026-11-29T10:00:00Z.
func NewUser(a accounts.Account, now time.Time) User {
	return User{
		ID:            a.ID,
		Email:         a.Email,
		EmailVerified: a.Verified(),
		CreatedAt:     a.CreatedAt.UTC().Truncate(time.Second),
		ReferralCode:  a.ReferralCode,
		Subscription: Subscription{
			Plan:      a.Subscription.Plan,
			Status:    a.Subscription.Status(now),
			ExpiresAt: a.Subscription.ExpiresAt.UTC().Truncate(time.Second),
		},
	}
}

// Register is POST /api/v1/auth/register.
func (h *Handlers) Register(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
		Referral string `json:"referral"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	res, err := h.Accounts.Signup(r.Context(), in.Email, in.Password, in.Referral)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusCreated, map[string]any{
		"message":         accounts.SignupMessage(res.Account.Email),
		"user":            NewUser(res.Account, h.Accounts.Now()),
		"referralApplied": res.ReferralApplied,
	})
}

// Verify is POST /api/v1/auth/verify.
func (h *Handlers) Verify(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email string `json:"email"`
		Code  string `json:"code"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := h.Accounts.VerifyEmail(r.Context(), in.Email, in.Code); err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"verified": true, "message": "Email verified; you can log in now."})
}

// ResendVerification is POST /api/v1/auth/resend-verification.
func (h *Handlers) ResendVerification(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Email string `json:"email"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := h.Accounts.ResendVerification(r.Context(), in.Email); err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"sent": true, "message": "A new verification code is on its way."})
}
