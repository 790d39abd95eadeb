package clients

import "testing"

// TestTokensWithJose: a service using jose's createRemoteJWKSet verifies a
// Herald token with issuer and audience, and refuses another audience,
// another issuer and a changed payload. The issuer is no URL and the port
// is chosen at start, so discovery takes the address from the request:
// the development profile's (production would need HERALD_PUBLIC_URL).
func TestTokensWithJose(t *testing.T) {
	needNode(t)
	const issuer, audience = "herald-test", "https://vpn.example.com"
	s := startServer(t, map[string]string{"HERALD_JWT_ISSUER": issuer, "HERALD_JWT_AUDIENCE": audience, "HERALD_ENV": "development"})
	token := s.userToken(t, "jose@example.com")
	runNode(t, s, "tokens.mjs", map[string]string{"TOKEN": token, "ISSUER": issuer, "AUDIENCE": audience})
}
