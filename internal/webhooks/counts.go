package webhooks

// Counts are the webhook endpoints at a glance, for the operator console.
type Counts struct {
	Total int
	// Failing are the enabled endpoints with a failed attempt since their
	// last success (FailingSince set).
	Failing  int
	Disabled int
}
