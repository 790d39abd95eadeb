// Package policy is what identity and the rate limiter share: the tiers an
// operation is charged to and what one request costs in each. auth's rules
// name a tier and count a request's Units; limits counts them against its
// limits. Neither imports the other.
package policy

// Tier names, as they appear in `details.tier`.
const (
	TierGlobal    = "global"
	TierAuth      = "auth"
	TierProtected = "protected"
	TierAdmin     = "admin"
	TierAPIKey    = "apikey"
)

// Units is what one request costs against each tier: one per request on
// REST, one per root field on GraphQL.
type Units struct {
	Global, Auth, Protected, Admin, APIKeyUnits int
	UserID                                      string // subject of protected and admin
	APIKey                                      string // subject of apikey
	// APIKeyLimit is the key's own limit per window; 0 is the tier's.
	APIKeyLimit int
}
