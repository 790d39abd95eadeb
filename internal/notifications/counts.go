package notifications

// JobCounts are the push broadcast jobs not yet finished, by status, for
// the operator console.
type JobCounts struct {
	Queued    int
	Scheduled int
	Running   int
}
