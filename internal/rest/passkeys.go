package rest

import (
	"encoding/json"
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/passkeys"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/view"
)

// passkeyOptions renders a ceremony begun.
func passkeyOptions(b passkeys.Begun, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return view.NewPasskeyOptions(b)
}

// BeginPasskeyRegistration is POST /api/v1/users/me/passkeys/register/begin.
func (h *Handlers) BeginPasskeyRegistration() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return passkeyOptions(h.Passkeys.BeginRegistration(r.Context(), auth.Caller(r.Context())))
	})
}

// finishPasskeyRegistrationBody is the body of FinishPasskeyRegistration.
type finishPasskeyRegistrationBody struct {
	ChallengeID string          `json:"challengeId"`
	Name        string          `json:"name"`
	Credential  json.RawMessage `json:"credential"`
}

// FinishPasskeyRegistration is POST /api/v1/users/me/passkeys/register/finish.
func (h *Handlers) FinishPasskeyRegistration() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in finishPasskeyRegistrationBody) (any, error) {
		c, err := h.Passkeys.FinishRegistration(r.Context(), auth.Caller(r.Context()), in.ChallengeID, in.Name, credentialJSON(in.Credential))
		if err != nil {
			return nil, err
		}
		return view.NewPasskey(c), nil
	})
}

// credentialJSON is a credential member as sent: nothing for null.
func credentialJSON(raw json.RawMessage) []byte {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// MyPasskeys is GET /api/v1/users/me/passkeys.
func (h *Handlers) MyPasskeys() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Passkeys.List(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.All(list, view.NewPasskey), nil
	})
}

// renamePasskeyBody is the body of RenamePasskey.
type renamePasskeyBody struct {
	Name string `json:"name"`
}

// RenamePasskey is PATCH /api/v1/users/me/passkeys/{id}.
func (h *Handlers) RenamePasskey() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in renamePasskeyBody) (any, error) {
		if err := api.Required("name", in.Name); err != nil {
			return nil, err
		}
		c, err := h.Passkeys.Rename(r.Context(), auth.Caller(r.Context()), r.PathValue("id"), in.Name)
		if err != nil {
			return nil, err
		}
		return view.NewPasskey(c), nil
	})
}

// RemovePasskey is DELETE /api/v1/users/me/passkeys/{id}.
func (h *Handlers) RemovePasskey() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("id")
		if err := h.Passkeys.Remove(r.Context(), auth.Caller(r.Context()), id); err != nil {
			return nil, err
		}
		return view.PasskeyRemoved{PasskeyID: id, Removed: true}, nil
	})
}

// UserPasskeys is GET /api/v1/admin/users/{id}/passkeys.
func (h *Handlers) UserPasskeys() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Passkeys.ListOf(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return view.All(list, view.NewPasskey), nil
	})
}

// RemoveUserPasskey is DELETE /api/v1/admin/users/{id}/passkeys/{passkeyId}.
func (h *Handlers) RemoveUserPasskey() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		id := r.PathValue("passkeyId")
		if err := h.Passkeys.RemoveFor(r.Context(), auth.Caller(r.Context()), r.PathValue("id"), id); err != nil {
			return nil, err
		}
		return view.PasskeyRemoved{PasskeyID: id, Removed: true}, nil
	})
}

// BeginPasskeyLogin is POST /api/v1/auth/passkey/begin: a passwordless
// sign-in's options.
func (h *Handlers) BeginPasskeyLogin() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return passkeyOptions(h.Passkeys.BeginLogin(r.Context()))
	})
}

// finishPasskeyLoginBody is the body of FinishPasskeyLogin.
type finishPasskeyLoginBody struct {
	ChallengeID string          `json:"challengeId"`
	Credential  json.RawMessage `json:"credential"`
}

func client(r *http.Request) sessions.Client {
	return sessions.ClientAt(api.Info(r.Context()).UserAgent, api.Info(r.Context()).ClientIP)
}

// FinishPasskeyLogin is POST /api/v1/auth/passkey/finish.
func (h *Handlers) FinishPasskeyLogin() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in finishPasskeyLoginBody) (any, error) {
		if err := api.Required("challengeId", in.ChallengeID); err != nil {
			return nil, err
		}
		t, err := h.Passkeys.FinishLogin(r.Context(), in.ChallengeID, credentialJSON(in.Credential), client(r))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// beginPasskeyMFABody is the body of BeginPasskeyMFA.
type beginPasskeyMFABody struct {
	ChallengeToken string `json:"challengeToken"`
}

// BeginPasskeyMFA is POST /api/v1/auth/login/mfa/passkey/begin: options
// for a passkey completing a login that answered MFA_REQUIRED.
func (h *Handlers) BeginPasskeyMFA() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in beginPasskeyMFABody) (any, error) {
		if err := api.Required("challengeToken", in.ChallengeToken); err != nil {
			return nil, err
		}
		return passkeyOptions(h.Passkeys.BeginMFA(r.Context(), in.ChallengeToken))
	})
}

// finishPasskeyMFABody is the body of FinishPasskeyMFA.
type finishPasskeyMFABody struct {
	ChallengeToken string          `json:"challengeToken"`
	ChallengeID    string          `json:"challengeId"`
	Credential     json.RawMessage `json:"credential"`
}

// FinishPasskeyMFA is POST /api/v1/auth/login/mfa/passkey/finish.
func (h *Handlers) FinishPasskeyMFA() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in finishPasskeyMFABody) (any, error) {
		if err := api.Required("challengeToken", in.ChallengeToken); err != nil {
			return nil, err
		}
		if err := api.Required("challengeId", in.ChallengeID); err != nil {
			return nil, err
		}
		t, err := h.Passkeys.FinishMFA(r.Context(), in.ChallengeToken, in.ChallengeID, credentialJSON(in.Credential), client(r))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// BeginPasskeyStepUp is POST /api/v1/auth/mfa/passkey/begin: options for
// a passkey stepping the caller's session up to aal2.
func (h *Handlers) BeginPasskeyStepUp() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return passkeyOptions(h.Passkeys.BeginStepUp(r.Context(), auth.Caller(r.Context())))
	})
}

// verifyPasskeyBody is the body of VerifyPasskey.
type verifyPasskeyBody struct {
	ChallengeID string          `json:"challengeId"`
	Credential  json.RawMessage `json:"credential"`
}

// VerifyPasskey is POST /api/v1/auth/mfa/passkey/verify: the caller's
// session steps up to aal2 with a passkey.
func (h *Handlers) VerifyPasskey() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in verifyPasskeyBody) (any, error) {
		if err := api.Required("challengeId", in.ChallengeID); err != nil {
			return nil, err
		}
		t, err := h.Passkeys.FinishStepUp(r.Context(), auth.Caller(r.Context()), in.ChallengeID, credentialJSON(in.Credential))
		if err != nil {
			return nil, err
		}
		return view.NewTokens(t), nil
	})
}

// AuthMethods is GET /api/v1/auth/methods: whether passkeys are on here.
func (h *Handlers) AuthMethods() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		return view.AuthMethods{Passkeys: h.Passkeys.Enabled()}, nil
	})
}
