package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/apikeys"
)

// APIKey is an API key, without its secret.
type APIKey struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	// RateLimit is the key's requests per rate-limit window, its own or
	// the default.
	RateLimit  int        `json:"rateLimit"`
	ExpiresAt  *time.Time `json:"expiresAt"`
	CreatedAt  time.Time  `json:"createdAt"`
	LastUsedAt *time.Time `json:"lastUsedAt"`
	RevokedAt  *time.Time `json:"revokedAt"`
}

// NewAPIKey renders k, whose effective rate limit is rateLimit
// (apikeys.Service.RateLimitOf).
func NewAPIKey(k apikeys.Key, rateLimit int) APIKey {
	return APIKey{
		ID:         k.ID,
		Name:       k.Name,
		Scopes:     k.Scopes,
		RateLimit:  rateLimit,
		ExpiresAt:  optionalSeconds(k.ExpiresAt),
		CreatedAt:  seconds(k.CreatedAt),
		LastUsedAt: optionalSeconds(k.LastUsedAt),
		RevokedAt:  optionalSeconds(k.RevokedAt),
	}
}

// CreatedAPIKey is a new key with its secret, shown this once.
type CreatedAPIKey struct {
	APIKey APIKey `json:"apiKey"`
	Key    string `json:"key"`
}
