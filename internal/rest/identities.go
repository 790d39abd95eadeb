package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/identities"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/view"
)

// providerTokenBody is what an app sends after a provider's native
// sign-in: the id_token, the nonce it gave the provider and, from Apple,
// the authorization code.
type providerTokenBody struct {
	IDToken           string `json:"idToken"`
	Nonce             string `json:"nonce"`
	AuthorizationCode string `json:"authorizationCode"`
}

// SignInWithProvider is POST /api/v1/auth/oauth/{provider}: 201 with the
// session when it created the account, 200 otherwise.
func (h *Handlers) SignInWithProvider() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in providerTokenBody
		if err := api.DecodeJSON(w, r, &in); err != nil {
			api.WriteError(w, r, err)
			return
		}
		p, err := identities.ParseProvider(r.PathValue("provider"))
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		info := api.Info(r.Context())
		s, err := h.Identities.SignIn(r.Context(), p, in.IDToken, in.Nonce, in.AuthorizationCode, sessions.ClientAt(info.UserAgent, info.ClientIP))
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		status := http.StatusOK
		if s.Created {
			status = http.StatusCreated
		}
		api.WriteData(w, status, view.SignIn{AccountCreated: s.Created, Session: view.NewTokens(s.Tokens)})
	}
}

// MyIdentities is GET /api/v1/users/me/identities.
func (h *Handlers) MyIdentities() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Identities.List(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.All(list, view.NewIdentity), nil
	})
}

// UserIdentities is GET /api/v1/admin/users/{id}/identities.
func (h *Handlers) UserIdentities() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Identities.ListOf(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.All(list, view.NewIdentity), nil
	})
}

// linkIdentityBody is the body of LinkIdentity: the provider's token.
type linkIdentityBody struct {
	Provider string `json:"provider"`
	providerTokenBody
}

// LinkIdentity is POST /api/v1/users/me/identities.
func (h *Handlers) LinkIdentity() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in linkIdentityBody) (any, error) {
		p, err := identities.ParseProvider(in.Provider)
		if err != nil {
			return nil, err
		}
		i, err := h.Identities.Link(r.Context(), auth.Caller(r.Context()), p, in.IDToken, in.Nonce, in.AuthorizationCode)
		if err != nil {
			return nil, err
		}
		return view.NewIdentity(i), nil
	})
}

// UnlinkIdentity is DELETE /api/v1/users/me/identities/{id}.
func (h *Handlers) UnlinkIdentity() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Identities.Unlink(r.Context(), auth.Caller(r.Context()), id); err != nil {
			return nil, err
		}
		return view.IdentityRemoved{IdentityID: id, Removed: true}, nil
	})
}

// guestBody is the body of SignInAsGuest.
type guestBody struct {
	InstallID string `json:"installId"`
}

// SignInAsGuest is POST /api/v1/auth/guest: 201 with the session of a new
// guest, 200 with the install's guest again.
func (h *Handlers) SignInAsGuest() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in guestBody
		if err := api.DecodeJSON(w, r, &in); err != nil {
			api.WriteError(w, r, err)
			return
		}
		info := api.Info(r.Context())
		t, created, err := h.Sessions.SignInGuest(r.Context(), in.InstallID, accounts.Language{Accepted: api.Accepted(info)}, sessions.ClientAt(info.UserAgent, info.ClientIP))
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		api.WriteData(w, status, view.SignIn{AccountCreated: created, Session: view.NewTokens(t)})
	}
}

// upgradeGuestBody is the body of UpgradeGuest.
type upgradeGuestBody struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

// UpgradeGuest is POST /api/v1/users/me/upgrade: the upgraded account.
func (h *Handlers) UpgradeGuest() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in upgradeGuestBody) (any, error) {
		acct, err := h.Accounts.UpgradeGuest(r.Context(), auth.Caller(r.Context()).AccountID, in.Email, in.Password)
		if err != nil {
			return nil, err
		}
		return view.NewUser(acct, h.Accounts.Now()), nil
	})
}
