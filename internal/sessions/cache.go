package sessions

import (
	"sync"
	"sync/atomic"
	"time"
)

// Revocation kinds, as the store announces them (any other kind means
// "forget everything": announcements may have been missed).
const (
	RevokedSession = "session" // one session, by id
	RevokedAccount = "account" // every session of an account, by account id
)

// A cached "this session is live" answer lasts cacheTTL, and only while
// the store's announcements of revocations are being received (PostgreSQL's
// NOTIFY, SQLite's polled revocation epoch), each of which evicts on every
// replica. Without them (a listener that is down) nothing is cached and
// every request looks its session up.
const (
	cacheTTL        = 5 * time.Minute
	cacheMaxEntries = 100_000
)

// liveSessions remembers, on this replica, sessions found live, so that an
// authenticated request needs no query of its own.
type liveSessions struct {
	now       func() time.Time
	listening atomic.Bool

	mu      sync.Mutex
	entries map[string]liveEntry // by session id
	// gen counts evictions: an answer read from the database is cached
	// only if no eviction happened while it was being read, so a
	// revocation that commits during the read is never forgotten.
	gen uint64
}

type liveEntry struct {
	accountID string
	expiresAt time.Time // the session's own end
	until     time.Time // of this answer
}

func newLiveSessions(now func() time.Time) *liveSessions {
	return &liveSessions{now: now, entries: map[string]liveEntry{}}
}

// get reports whether sessionID of accountID is known unrevoked, and
// when the session expires: the caller still checks that end, so a cached
// answer never outlives the session.
func (c *liveSessions) get(sessionID, accountID string) (expiresAt time.Time, ok bool) {
	if !c.listening.Load() {
		return time.Time{}, false
	}
	c.mu.Lock()
	e, ok := c.entries[sessionID]
	c.mu.Unlock()
	if !ok || e.accountID != accountID || !c.now().Before(e.until) {
		return time.Time{}, false
	}
	return e.expiresAt, true
}

// generation is the eviction count to pass to put after a database read.
func (c *liveSessions) generation() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// put remembers a session read live, and its end, unless nobody announces
// revocations or an eviction happened since gen.
func (c *liveSessions) put(sessionID, accountID string, expiresAt time.Time, gen uint64) {
	if !c.listening.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return
	}
	makeRoom(c.entries, cacheMaxEntries)
	c.entries[sessionID] = liveEntry{accountID: accountID, expiresAt: expiresAt, until: c.now().Add(cacheTTL)}
}

// makeRoom drops an arbitrary entry of m when it holds limit already, so
// that one more keeps it within limit (the caller holds m's lock). Entries
// are answers that can be worked out again, so any can go.
func makeRoom[K comparable, V any](m map[K]V, limit int) {
	if len(m) < limit {
		return
	}
	for k := range m {
		delete(m, k)
		return
	}
}

// evict forgets a revoked session, every session of an account, or (any
// other kind) everything.
func (c *liveSessions) evict(kind, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	switch kind {
	case RevokedSession:
		delete(c.entries, id)
	case RevokedAccount:
		for k, e := range c.entries {
			if e.accountID == id {
				delete(c.entries, k)
			}
		}
	default:
		clear(c.entries)
	}
}
