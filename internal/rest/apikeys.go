package rest

import (
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/apikeys"
)

// APIKey is the REST record of an API key, without its secret.
type APIKey struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	RateLimit  int        `json:"rateLimit"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
}

func (h *Handlers) apiKey(k apikeys.Key) APIKey {
	return APIKey{
		ID:         k.ID,
		Name:       k.Name,
		Scopes:     k.Scopes,
		RateLimit:  h.APIKeys.RateLimitOf(k),
		ExpiresAt:  seconds(k.ExpiresAt),
		CreatedAt:  k.CreatedAt.UTC().Truncate(time.Second),
		LastUsedAt: seconds(k.LastUsedAt),
		RevokedAt:  seconds(k.RevokedAt),
	}
}

// seconds is an optional time as REST shows times: UTC, whole seconds.
func seconds(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC().Truncate(time.Second)
	return &u
}

// CreateAPIKey is POST /api/v1/api-keys: the key is in the answer this
// once.
func (h *Handlers) CreateAPIKey() http.HandlerFunc {
	type input struct {
		Name      string     `json:"name"`
		Scopes    []string   `json:"scopes"`
		RateLimit *int       `json:"rateLimit"`
		ExpiresAt *time.Time `json:"expiresAt"`
	}
	return handle(http.StatusCreated, func(r *http.Request, in input) (any, error) {
		k, key, err := h.APIKeys.Create(r.Context(), apikeys.NewKey{Name: in.Name, Scopes: in.Scopes, RateLimit: in.RateLimit, ExpiresAt: in.ExpiresAt})
		if err != nil {
			return nil, err
		}
		return map[string]any{"key": key, "apiKey": h.apiKey(k)}, nil
	})
}

// ListAPIKeys is GET /api/v1/api-keys.
func (h *Handlers) ListAPIKeys() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.APIKeys.List(r.Context())
		if err != nil {
			return nil, err
		}
		out := make([]APIKey, 0, len(list))
		for _, k := range list {
			out = append(out, h.apiKey(k))
		}
		return out, nil
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
