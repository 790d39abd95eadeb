package password

import (
	"context"
	"strings"
	"testing"
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
