package limits

// Rate limiter backends, as State.Backend names them.
const (
	BackendRedis  = "redis"
	BackendMemory = "memory"
)

// State is how a replica's rate limiter counts, for the operator console:
// in memory, or in Redis; Degraded when Redis is configured but
// unreachable, so this replica counts in memory meanwhile (Reason says so).
type State struct {
	Backend  string
	Degraded bool
	Reason   string
}
