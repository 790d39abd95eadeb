package argon2id

import (
	"bytes"
	"encoding/hex"
	"math/rand/v2"
	"testing"

	"golang.org/x/crypto/argon2"
)

// TestMatchesXCrypto holds the fork to x/crypto bit for bit, over memory
// that is reused across cases and starts full of garbage, so a first pass
// that read old contents instead of overwriting them would fail.
func TestMatchesXCrypto(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	mem := NewMemory(8192)
	for i := range mem.blocks {
		for j := range mem.blocks[i] {
			mem.blocks[i][j] = r.Uint64()
		}
	}
	cases := []struct {
		time, memory uint32
		threads      uint8
		keyLen       uint32
	}{
		{1, 64, 1, 32}, {2, 64, 1, 32}, {2, 64, 2, 32}, {3, 256, 2, 32}, {4, 4096, 4, 32},
		{4, 1024, 8, 16}, {2, 64, 3, 64}, {3, 1024, 6, 32}, {3, 8192, 2, 32}, {1, 8, 1, 4},
	}
	for round := range 2 {
		for _, c := range cases {
			password, salt := make([]byte, r.IntN(40)), make([]byte, 8+r.IntN(24))
			for i := range password {
				password[i] = byte(r.Uint32())
			}
			for i := range salt {
				salt[i] = byte(r.Uint32())
			}
			want := argon2.IDKey(password, salt, c.time, c.memory, c.threads, c.keyLen)
			if got := Key(mem, password, salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
				t.Errorf("round %d, %+v: got %x, want %x", round, c, got, want)
			}
			if got := Key(nil, password, salt, c.time, c.memory, c.threads, c.keyLen); !bytes.Equal(got, want) {
				t.Errorf("round %d, %+v, fresh memory: got %x, want %x", round, c, got, want)
			}
		}
	}
	// Memory too small for a hash is not used (and not overrun).
	small := NewMemory(64)
	want := argon2.IDKey([]byte("pw"), []byte("saltsalt"), 1, 1024, 1, 32)
	if got := Key(small, []byte("pw"), []byte("saltsalt"), 1, 1024, 1, 32); !bytes.Equal(got, want) {
		t.Errorf("small memory: got %x, want %x", got, want)
	}
}

// TestKnownVectors are x/crypto's own Argon2id vectors (password
// "password", salt "somesalt", 24-byte keys), over one reused memory.
func TestKnownVectors(t *testing.T) {
	mem := NewMemory(4096)
	for _, v := range []struct {
		time, memory uint32
		threads      uint8
		hash         string
	}{
		{1, 64, 1, "655ad15eac652dc59f7170a7332bf49b8469be1fdb9c28bb"},
		{2, 64, 1, "068d62b26455936aa6ebe60060b0a65870dbfa3ddf8d41f7"},
		{2, 64, 2, "350ac37222f436ccb5c0972f1ebd3bf6b958bf2071841362"},
		{3, 256, 2, "4668d30ac4187e6878eedeacf0fd83c5a0a30db2cc16ef0b"},
		{4, 4096, 4, "145db9733a9f4ee43edf33c509be96b934d505a4efb33c5a"},
		{4, 1024, 8, "8dafa8e004f8ea96bf7c0f93eecf67a6047476143d15577f"},
		{2, 64, 3, "4a15b31aec7c2590b87d1f520be7d96f56658172deaa3079"},
		{3, 1024, 6, "1640b932f4b60e272f5d2207b9a9c626ffa1bd88d2349016"},
	} {
		want, _ := hex.DecodeString(v.hash)
		if got := Key(mem, []byte("password"), []byte("somesalt"), v.time, v.memory, v.threads, 24); !bytes.Equal(got, want) {
			t.Errorf("%+v: got %x", v, got)
		}
	}
}

func BenchmarkKey(b *testing.B) {
	const memory = 64 * 1024
	password, salt := []byte("Secret123"), []byte("0123456789abcdef")
	b.Run("x/crypto", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			argon2.IDKey(password, salt, 3, memory, 2, 32)
		}
	})
	b.Run("reused memory", func(b *testing.B) {
		b.ReportAllocs()
		mem := NewMemory(memory)
		for b.Loop() {
			Key(mem, password, salt, 3, memory, 2, 32)
		}
	})
	// OWASP's minimum for argon2id (Password Storage Cheat Sheet): 19 MiB,
	// 2 passes, 1 lane; for the comparison in docs/operations.md.
	b.Run("OWASP minimum, reused memory", func(b *testing.B) {
		mem := NewMemory(19 * 1024)
		for b.Loop() {
			Key(mem, password, salt, 2, 19*1024, 1, 32)
		}
	})
}

// BenchmarkKeyParallel runs two hashes at once, as a 2-core server does.
func BenchmarkKeyParallel(b *testing.B) {
	const memory = 64 * 1024
	password, salt := []byte("Secret123"), []byte("0123456789abcdef")
	b.Run("x/crypto", func(b *testing.B) {
		b.SetParallelism(1)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				argon2.IDKey(password, salt, 3, memory, 2, 32)
			}
		})
	})
	b.Run("reused memory", func(b *testing.B) {
		b.SetParallelism(1)
		b.RunParallel(func(pb *testing.PB) {
			mem := NewMemory(memory)
			for pb.Next() {
				Key(mem, password, salt, 3, memory, 2, 32)
			}
		})
	})
}
