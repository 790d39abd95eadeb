package view

// AuthMethods is what a sign-in page may offer besides the email and
// password on this server (GET /api/v1/auth/methods, GraphQL
// authMethods): public, so that a page hides what would only be refused.
type AuthMethods struct {
	// Passkeys: a relying party is configured (HERALD_WEBAUTHN_RP_ID);
	// false: every passkey operation answers PASSKEYS_NOT_CONFIGURED.
	Passkeys bool `json:"passkeys"`
}
