package password

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func cheap() Params {
	return Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1, SaltLen: 16, KeyLen: 32}
}

func TestHashVerify(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(cheap(), 2)
	enc, err := h.Hash(ctx, "Secret123")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(enc, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("not a PHC string: %s", enc)
	}
	if ok, rehash, err := h.Verify(ctx, "Secret123", enc); !ok || rehash || err != nil {
		t.Fatalf("right password: ok=%v rehash=%v err=%v", ok, rehash, err)
	}
	if ok, _, _ := h.Verify(ctx, "Secret124", enc); ok {
		t.Fatal("wrong password accepted")
	}
	again, _ := h.Hash(ctx, "Secret123")
	if again == enc {
		t.Fatal("two hashes of one password share a salt")
	}
}

func TestNeedsRehashWhenCostRaised(t *testing.T) {
	ctx := context.Background()
	old := NewHasher(cheap(), 1)
	enc, _ := old.Hash(ctx, "Secret123")
	stronger := cheap()
	stronger.Iterations = 2
	ok, rehash, err := NewHasher(stronger, 1).Verify(ctx, "Secret123", enc)
	if !ok || !rehash || err != nil {
		t.Fatalf("ok=%v rehash=%v err=%v", ok, rehash, err)
	}
	if ok, rehash, _ := NewHasher(stronger, 1).Verify(ctx, "wrong", enc); ok || rehash {
		t.Fatal("a wrong password must not ask for a rehash")
	}
}

func TestMalformed(t *testing.T) {
	h := NewHasher(cheap(), 1)
	for _, enc := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=18$m=1024,t=1,p=1$AAAA$AAAA",
		"$argon2id$v=19$m=0,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=1024,t=1,p=1$!!$AAAA", "$argon2id$v=19$m=1024,t=1,p=1$AAAA$"} {
		if _, _, err := h.Verify(context.Background(), "x", enc); err != ErrMalformedHash {
			t.Errorf("%q: err = %v, want ErrMalformedHash", enc, err)
		}
	}
}

func TestHashRespectsCancelledContextWhenSaturated(t *testing.T) {
	h := NewHasher(cheap(), 1)
	if err := h.slots.Acquire(context.Background()); err != nil { // every slot taken
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, "Secret123"); err == nil {
		t.Fatal("hash ran past the concurrency bound")
	}
}

// The hasher's queue is bounded in length and in wait: past either a hash
// is refused with *shed.Refused; a freed slot lets a waiter in; and no
// goroutine outlives its hash.
func TestHasherBounds(t *testing.T) {
	ctx := context.Background()
	goroutines := runtime.NumGoroutine()
	h := NewHasherWithin(cheap(), shed.Bounds{Concurrency: 1, Queue: 1, Wait: time.Minute})
	if err := h.slots.Acquire(ctx); err != nil { // the one slot taken
		t.Fatal(err)
	}

	waiter := make(chan error, 1)
	go func() {
		_, err := h.Hash(ctx, "Secret123")
		waiter <- err
	}()
	testsupport.Eventually(t, 10*time.Second, func() bool { return h.slots.Waiting() == 1 }, "the first hash waits in the queue")

	// The queue is full: refused at once (the wait is a minute; the
	// bound here only catches a hash that waited).
	start := time.Now()
	_, err := h.Hash(ctx, "Secret123")
	if refused, ok := errors.AsType[*shed.Refused](err); !ok || !refused.QueueFull || refused.RetryAfter <= 0 {
		t.Fatalf("hash beyond the queue: err = %v, want *shed.Refused with QueueFull and a RetryAfter", err)
	}
	if waited := time.Since(start); waited > 30*time.Second {
		t.Fatalf("the refusal of a hash beyond a full queue took %v: it waited", waited)
	}
	if ok, _, err := h.Verify(ctx, "Secret123", h.dummy); ok || !isRefused(err) {
		t.Fatalf("verify beyond the queue: ok=%v err=%v, want refused", ok, err)
	}
	if err := h.VerifyDummy(ctx, "Secret123"); !isRefused(err) {
		t.Fatalf("dummy verify beyond the queue: err=%v, want refused like a real one", err)
	}

	// The slot freed: the waiter gets it and hashes.
	h.slots.Release()
	select {
	case err := <-waiter:
		if err != nil {
			t.Fatalf("the waiter, let in: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not get the freed slot within 30 s")
	}
	if h.slots.Running() != 0 || h.slots.Waiting() != 0 {
		t.Fatalf("after the hashes: %d running, %d waiting", h.slots.Running(), h.slots.Waiting())
	}
	if n := h.slots.Refusals(); n != 3 {
		t.Fatalf("refusals counted: %d, want 3", n)
	}
	testsupport.Eventually(t, 10*time.Second, func() bool { return runtime.NumGoroutine() <= goroutines },
		"no goroutine left behind by the hashes (the idle-release timer is a timer, not a goroutine)")
}

// A waiter is refused once it has waited the longest wait.
func TestHasherRefusesPastTheWait(t *testing.T) {
	ctx := context.Background()
	h := NewHasherWithin(cheap(), shed.Bounds{Concurrency: 1, Queue: 4, Wait: 20 * time.Millisecond})
	if err := h.slots.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.slots.Release()
	done := make(chan error, 1)
	go func() {
		_, err := h.Hash(ctx, "Secret123")
		done <- err
	}()
	select {
	case err := <-done:
		if refused, ok := errors.AsType[*shed.Refused](err); !ok || refused.QueueFull {
			t.Fatalf("err = %v, want *shed.Refused after the wait (not QueueFull)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a hash waited 30 s past a wait bound of 20 ms")
	}
	if h.slots.Waiting() != 0 {
		t.Fatalf("%d still waiting after the refusal", h.slots.Waiting())
	}
}

func isRefused(err error) bool {
	_, ok := errors.AsType[*shed.Refused](err)
	return ok
}

// The hasher keeps one working memory per slot between hashes, and lets
// them go once no hash ran for its idle time.
func TestMemoryReusedThenReleased(t *testing.T) {
	ctx := context.Background()
	h := NewHasher(cheap(), 2)
	h.idleRelease = 50 * time.Millisecond
	held := func() int {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.free)
	}
	if held() != 0 {
		t.Fatal("a new hasher must hold no memory")
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := h.Hash(ctx, "Secret123"); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := held(); n < 1 || n > 2 {
		t.Fatalf("after hashes the hasher holds %d memories, want 1 or 2 (one per slot at most)", n)
	}
	first := h.free[0]
	if _, err := h.Hash(ctx, "Secret123"); err != nil {
		t.Fatal(err)
	}
	h.mu.Lock()
	reused := slices.Contains(h.free, first)
	h.mu.Unlock()
	if !reused {
		t.Fatal("the next hash must reuse a held memory")
	}
	testsupport.Eventually(t, 5*time.Second, func() bool { return held() == 0 }, "memory released after the idle time")
}
