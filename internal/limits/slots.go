package limits

import (
	"net/netip"
	"sync"
)

// Slots bounds what is open at once under each key on this replica: the
// WebSocket connections, or the event streams, of one caller or of one
// client address. The zero value is ready to use.
type Slots struct {
	mu   sync.Mutex
	open map[string]int
}

// Take counts one more under key unless max are open already (max <= 0:
// no bound), and reports whether it did; each Take that succeeded is
// undone by one Release.
func (s *Slots) Take(key string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if max > 0 && s.open[key] >= max {
		return false
	}
	if s.open == nil {
		s.open = map[string]int{}
	}
	s.open[key]++
	return true
}

// Release frees one place under key.
func (s *Slots) Release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open[key]--; s.open[key] <= 0 {
		delete(s.open, key)
	}
}

// AddressSlot is the key of a client address in Slots: its Subject, so an
// IPv6 client's connections count together with its /64's, as its rate
// limits and bans do.
func AddressSlot(ip netip.Addr) string { return "ip:" + Subject(ip) }
