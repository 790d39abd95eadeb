package limits

import (
	"context"
	"sync"
	"time"
)

// janitorInterval bounds how long expired windows linger in memory.
const janitorInterval = time.Minute

// Memory is an in-process Backend. It is exact for a single instance and is
// the fallback when Redis is unreachable. Close stops its janitor.
type Memory struct {
	policy AbusePolicy
	now    func() time.Time

	mu      sync.Mutex
	windows map[windowKey]windowCount
	abuse   map[string]*abuseState

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// windowKey mirrors the Redis key prefix:tier:subject:windowStart; a struct
// avoids building a string per lookup.
type windowKey struct {
	tier    string
	subject string
	start   int64
}

type windowCount struct {
	n   int64
	end int64 // ms; the janitor drops the window after this
}

type abuseState struct {
	refusals   []int64 // oldest first, at most RefusalsBeforeBlock+1 entries
	blockUntil int64   // ms
	blocks     []int64 // oldest first, at most BanAfterBlocks entries
}

var _ Backend = (*Memory)(nil)

// NewMemory returns a Memory backend using now as its clock (time.Now when
// nil) and starts its janitor; call Close to stop it.
func NewMemory(policy AbusePolicy, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	m := &Memory{
		policy:  policy.withDefaults(),
		now:     now,
		windows: make(map[windowKey]windowCount),
		abuse:   make(map[string]*abuseState),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go m.janitor()
	return m
}

// Close stops the janitor. Allow keeps working afterwards. Safe to call
// more than once.
func (m *Memory) Close() error {
	m.closeOnce.Do(func() {
		close(m.stop)
		<-m.done
	})
	return nil
}

func (m *Memory) janitor() {
	defer close(m.done)
	t := time.NewTicker(janitorInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.sweep()
		}
	}
}

// sweep deletes state that can no longer influence a decision.
func (m *Memory) sweep() {
	nowMs := m.now().UnixMilli()
	refusalCutoff := nowMs - m.policy.RefusalWindow.Milliseconds()
	banCutoff := nowMs - m.policy.BanWindow.Milliseconds()
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, w := range m.windows {
		if w.end <= nowMs {
			delete(m.windows, k)
		}
	}
	for ip, s := range m.abuse {
		if s.blockUntil <= nowMs &&
			(len(s.refusals) == 0 || s.refusals[len(s.refusals)-1] <= refusalCutoff) &&
			(len(s.blocks) == 0 || s.blocks[len(s.blocks)-1] <= banCutoff) {
			delete(m.abuse, ip)
		}
	}
}

// Allow implements Backend.
func (m *Memory) Allow(_ context.Context, abuseKey string, checks []Check) (Decision, error) {
	nowMs := m.now().UnixMilli()
	var pbuf [maxInline]planned
	plan, err := buildPlan(nowMs, checks, pbuf[:0])
	if err != nil {
		return Decision{}, err
	}
	// Sized up front (no append) so the buffer stays on the stack.
	var cbuf [maxInline]int64
	counts := cbuf[:]
	if len(plan) > maxInline {
		counts = make([]int64, len(plan))
	}
	o := outcome{counts: counts[:len(plan)]}

	m.mu.Lock()
	m.allowLocked(nowMs, abuseKey, plan, &o)
	m.mu.Unlock()
	return decide(nowMs, plan, o, m.policy), nil
}

// allowLocked is the same sequence as the Redis script.
func (m *Memory) allowLocked(nowMs int64, abuseKey string, plan []planned, o *outcome) {
	var st *abuseState
	if abuseKey != "" {
		st = m.abuse[abuseKey]
		if st != nil && st.blockUntil > nowMs {
			o.status, o.blockUntil = statusBlocked, st.blockUntil
			return
		}
	}

	refused := false
	for i, p := range plan {
		n := m.windows[windowKey{p.name, p.subject, p.start}].n
		o.counts[i] = n
		if n+p.cost > p.limit {
			refused = true
		}
	}
	if !refused {
		for i, p := range plan {
			m.windows[windowKey{p.name, p.subject, p.start}] = windowCount{n: o.counts[i] + p.cost, end: p.end()}
		}
		o.status = statusAllowed
		return
	}
	o.status = statusRefused
	if abuseKey == "" {
		return
	}

	if st == nil {
		st = &abuseState{}
		m.abuse[abuseKey] = st
	}
	maxRefusals := m.policy.RefusalsBeforeBlock
	st.refusals = appendCapped(st.refusals, nowMs, maxRefusals+1)
	if len(st.refusals) <= maxRefusals || st.refusals[0] <= nowMs-m.policy.RefusalWindow.Milliseconds() {
		return
	}

	st.blockUntil = nowMs + m.policy.BlockFor.Milliseconds()
	st.refusals = st.refusals[:0] // a fresh count after the block ends
	st.blocks = appendCapped(st.blocks, nowMs, m.policy.BanAfterBlocks)
	o.status, o.blockUntil = statusJustBlocked, st.blockUntil
	o.banDue = len(st.blocks) >= m.policy.BanAfterBlocks &&
		st.blocks[0] > nowMs-m.policy.BanWindow.Milliseconds()
}

// appendCapped appends v and keeps only the newest n entries (sliding log).
func appendCapped(s []int64, v int64, n int) []int64 {
	s = append(s, v)
	if len(s) > n {
		s = s[:copy(s, s[len(s)-n:])]
	}
	return s
}
