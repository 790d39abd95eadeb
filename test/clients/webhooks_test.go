package clients

import "testing"

// TestWebhooksWithStandardWebhooks: a receiver written with the
// standardwebhooks npm package verifies Herald's signatures, before and
// during a secret rotation.
func TestWebhooksWithStandardWebhooks(t *testing.T) {
	needNode(t)
	s := startServer(t, map[string]string{"HERALD_WEBHOOKS_ALLOW_INSECURE": "on", "HERALD_WEBHOOKS_ALLOW_PRIVATE": "on"})
	runNode(t, s, "webhook_verify.mjs", map[string]string{"TOKEN": s.adminToken(t, "hooks@example.com")})
}
