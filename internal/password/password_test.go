package password

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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
	h.slots <- struct{}{} // every slot taken
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, "Secret123"); err == nil {
		t.Fatal("hash ran past the concurrency bound")
	}
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
