// Package password hashes and checks passwords with argon2id, stored in the
// PHC string form ($argon2id$v=19$m=…,t=…,p=…$salt$hash) so the cost can be
// raised later and old hashes still verify (and are flagged for rehash).
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/password/argon2id"
	"github.com/herald-vpn/herald/internal/shed"
)

// Params is the argon2id cost.
type Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
	SaltLen     uint32
	KeyLen      uint32
}

// DefaultParams follows RFC 9106's second recommended option scaled to a
// server: 64 MiB, 3 passes, 2 lanes.
func DefaultParams() Params {
	return Params{MemoryKiB: 64 * 1024, Iterations: 3, Parallelism: 2, SaltLen: 16, KeyLen: 32}
}

func (p Params) String() string {
	return fmt.Sprintf("argon2id m=%dKiB t=%d p=%d", p.MemoryKiB, p.Iterations, p.Parallelism)
}

// ErrMalformedHash means a stored hash is not an argon2id PHC string.
var ErrMalformedHash = errors.New("password: malformed argon2id hash")

// Hasher hashes under a bound on concurrent hashes: each hash holds
// MemoryKiB of memory and one core, so a burst of logins must queue, not
// exhaust RAM or starve every other request of CPU. The queue is bounded
// too, in length and in wait: past either a hash is refused with
// *shed.Refused (503 with Retry-After at the doors), so a login flood is
// answered "later" within about the wait instead of piling up.
// The memory is reused from hash to hash (allocating 64 MiB per login
// costs more than the hash: the kernel zeroes every page, the collector
// reclaims it), allocated at the first hash and let go after IdleRelease
// without one, so a process that checks no password holds none.
type Hasher struct {
	params Params
	slots  *shed.Queue
	dummy  string

	mu          sync.Mutex
	free        []*argon2id.Memory // at most cap(slots)
	lastUsed    time.Time
	idle        *time.Timer
	idleRelease time.Duration
}

// IdleRelease is how long the hasher keeps its memory without a hash.
const IdleRelease = 30 * time.Second

// NewHasher returns a hasher that runs at most maxConcurrent hashes at
// once and lets the others wait as long as their context allows (for
// tests and tools); a server bounds the wait with NewHasherWithin.
func NewHasher(p Params, maxConcurrent int) *Hasher {
	return NewHasherWithin(p, shed.Bounds{Concurrency: maxConcurrent, Queue: math.MaxInt32, Wait: 24 * time.Hour})
}

// NewHasherWithin returns a hasher that hashes within b: b.Concurrency
// hashes at once, b.Queue waiting for a slot, none for longer than b.Wait.
func NewHasherWithin(p Params, b shed.Bounds) *Hasher {
	// The dummy is a PHC string of the current cost whose key matches no
	// password: checking against it costs what a real check costs, and
	// making it costs nothing (no hash is computed at start).
	enc := base64.RawStdEncoding
	dummy := fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2id.Version, p.MemoryKiB, p.Iterations, p.Parallelism,
		enc.EncodeToString(make([]byte, p.SaltLen)), enc.EncodeToString(make([]byte, p.KeyLen)))
	return &Hasher{params: p, slots: shed.New("password hashing", b), dummy: dummy, idleRelease: IdleRelease}
}

// MemoryBound is the most memory the hasher's hashes hold at once.
func (h *Hasher) MemoryBound() uint64 {
	return uint64(h.slots.Concurrency()) * uint64(h.params.MemoryKiB) * 1024
}

// Slots is the queue hashes wait in, for metrics.
func (h *Hasher) Slots() *shed.Queue { return h.slots }

// Params returns the hasher's current cost.
func (h *Hasher) Params() Params { return h.params }

func (h *Hasher) acquire(ctx context.Context) error { return h.slots.Acquire(ctx) }

func (h *Hasher) release() { h.slots.Release() }

// memory takes a working memory for one hash of memoryKiB; give it back
// with putMemory. Only a slot holder calls it, so at most cap(slots) exist.
func (h *Hasher) memory(memoryKiB uint32) *argon2id.Memory {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := len(h.free); n > 0 {
		m := h.free[n-1]
		h.free = h.free[:n-1]
		if m.Fits(memoryKiB) {
			return m
		}
	}
	// A stored hash of a larger cost than the current one gets memory of
	// its own, which is not kept.
	return argon2id.NewMemory(max(memoryKiB, h.params.MemoryKiB))
}

func (h *Hasher) putMemory(m *argon2id.Memory) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.free) < h.slots.Concurrency() && m.Fits(h.params.MemoryKiB) && !m.Fits(h.params.MemoryKiB+1) {
		h.free = append(h.free, m)
	}
	h.lastUsed = time.Now()
	if h.idle == nil {
		h.idle = time.AfterFunc(h.idleRelease, h.releaseIdle)
	}
}

// releaseIdle lets go of the memory once no hash ran for IdleRelease.
func (h *Hasher) releaseIdle() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if wait := h.idleRelease - time.Since(h.lastUsed); wait > 0 {
		h.idle.Reset(wait)
		return
	}
	h.free = nil
	h.idle = nil
}

// key runs one hash in reused memory; the caller holds a slot. Its lanes
// run one after another, so a slot is one core: the hasher's concurrency
// is the number of cores hashing may take, whatever the parallelism.
func (h *Hasher) key(plain, salt []byte, p Params, keyLen uint32) []byte {
	m := h.memory(p.MemoryKiB)
	defer h.putMemory(m)
	return argon2id.Key(m, plain, salt, p.Iterations, p.MemoryKiB, p.Parallelism, keyLen)
}

// Hash returns the PHC string of plain with a fresh random salt.
func (h *Hasher) Hash(ctx context.Context, plain string) (string, error) {
	salt := make([]byte, h.params.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	return h.encode(salt, []byte(plain)), nil
}

func (h *Hasher) encode(salt, plain []byte) string {
	p := h.params
	key := h.key(plain, salt, p, p.KeyLen)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2id.Version, p.MemoryKiB, p.Iterations, p.Parallelism, enc.EncodeToString(salt), enc.EncodeToString(key))
}

// Verify reports whether plain matches the PHC string encoded, and whether
// the hash used a weaker cost than the hasher's and should be replaced.
// err is ErrMalformedHash, *shed.Refused or ctx's error.
func (h *Hasher) Verify(ctx context.Context, plain, encoded string) (ok, needsRehash bool, err error) {
	p, salt, key, err := decode(encoded)
	if err != nil {
		return false, false, err
	}
	if err := h.acquire(ctx); err != nil {
		return false, false, err
	}
	defer h.release()
	got := h.key([]byte(plain), salt, p, uint32(len(key)))
	ok = subtle.ConstantTimeCompare(got, key) == 1
	weaker := p.MemoryKiB < h.params.MemoryKiB || p.Iterations < h.params.Iterations ||
		p.Parallelism < h.params.Parallelism || uint32(len(key)) < h.params.KeyLen
	return ok, ok && weaker, nil
}

// VerifyDummy spends the same time as Verify against a hash that matches
// nothing, so an unknown account cannot be told from a wrong password. It
// fails as Verify does when the hasher refuses (or ctx ends), so an
// unknown account is refused like a known one.
func (h *Hasher) VerifyDummy(ctx context.Context, plain string) error {
	_, _, err := h.Verify(ctx, plain, h.dummy)
	return err
}

func decode(encoded string) (Params, []byte, []byte, error) {
	parts := strings.Split(encoded, "$")
	// "", "argon2id", "v=19", "m=..,t=..,p=..", salt, key
	if len(parts) != 6 || parts[1] != "argon2id" {
		return Params{}, nil, nil, ErrMalformedHash
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2id.Version {
		return Params{}, nil, nil, ErrMalformedHash
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Iterations, &p.Parallelism); err != nil {
		return Params{}, nil, nil, ErrMalformedHash
	}
	if p.MemoryKiB == 0 || p.Iterations == 0 || p.Parallelism == 0 {
		return Params{}, nil, nil, ErrMalformedHash
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return Params{}, nil, nil, ErrMalformedHash
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) == 0 {
		return Params{}, nil, nil, ErrMalformedHash
	}
	return p, salt, key, nil
}
