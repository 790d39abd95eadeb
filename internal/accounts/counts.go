package accounts

// Counts are the accounts at a glance, for the operator console. Deleted
// accounts (tombstones) are not counted.
type Counts struct {
	Total    int
	Verified int
	// NewLast24h are the accounts created in the 24 hours before the count.
	NewLast24h int
	Disabled   int
}
