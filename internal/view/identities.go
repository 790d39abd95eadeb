package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/identities"
)

// Identity is one provider identity of an account (GraphQL Identity).
type Identity struct {
	CreatedAt time.Time `json:"createdAt"`
	// Email is the address the provider gave (an Apple private relay
	// address when the user hid theirs).
	Email        string     `json:"email"`
	ID           string     `json:"id"`
	LastUsedAt   *time.Time `json:"lastUsedAt"`
	PrivateRelay bool       `json:"privateRelay"`
	Provider     string     `json:"provider"`
}

// NewIdentity renders an identity.
func NewIdentity(i identities.Identity) Identity {
	return Identity{CreatedAt: i.CreatedAt, Email: i.Email, ID: i.ID, LastUsedAt: i.LastUsedAt, PrivateRelay: i.PrivateRelay, Provider: string(i.Provider)}
}

// IdentityRemoved answers an unlink (GraphQL IdentityRemoved).
type IdentityRemoved struct {
	IdentityID string `json:"identityId"`
	Removed    bool   `json:"removed"`
}

// SignIn answers a sign-in that may create the account (GraphQL
// SignIn): with a provider's id_token, or as a guest. The session, and
// whether the sign-in created the account.
type SignIn struct {
	AccountCreated bool   `json:"accountCreated"`
	Session        Tokens `json:"session"`
}
