package rest

import (
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/view"
)

func (h *Handlers) apiKey(k apikeys.Key) view.APIKey {
	return view.NewAPIKey(k, h.APIKeys.RateLimitOf(k))
}

// createAPIKeyBody is the body of CreateAPIKey.
type createAPIKeyBody struct {
	Name      string     `json:"name"`
	Scopes    []string   `json:"scopes"`
	RateLimit *int       `json:"rateLimit"`
	ExpiresAt *time.Time `json:"expiresAt"`
}

// CreateAPIKey is POST /api/v1/api-keys: the key is in the answer this
// once.
func (h *Handlers) CreateAPIKey() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in createAPIKeyBody) (any, error) {
		k, key, err := h.APIKeys.Create(r.Context(), auth.Caller(r.Context()), apikeys.NewKey{Name: in.Name, Scopes: in.Scopes, RateLimit: in.RateLimit, ExpiresAt: in.ExpiresAt})
		if err != nil {
			return nil, err
		}
		return view.CreatedAPIKey{Key: key, APIKey: h.apiKey(k)}, nil
	})
}

// ListAPIKeys is GET /api/v1/api-keys.
func (h *Handlers) ListAPIKeys() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.APIKeys.List(r.Context())
		if err != nil {
			return nil, err
		}
		return view.All(list, h.apiKey), nil
	})
}

// RevokeAPIKey is DELETE /api/v1/api-keys/{id}: the revoked key.
func (h *Handlers) RevokeAPIKey() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		k, err := h.APIKeys.Revoke(r.Context(), r.PathValue("id"))
		if err != nil {
			return nil, err
		}
		return h.apiKey(k), nil
	})
}
