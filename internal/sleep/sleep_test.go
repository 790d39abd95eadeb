package sleep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sleep"
)

func TestFor(t *testing.T) {
	start := time.Now()
	if err := sleep.For(context.Background(), 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 20*time.Millisecond {
		t.Fatalf("returned after %s, want at least 20ms", waited)
	}
	if err := sleep.For(context.Background(), 0); err != nil {
		t.Fatalf("no wait: %v", err)
	}
	if err := sleep.For(context.Background(), -time.Second); err != nil {
		t.Fatalf("negative wait: %v", err)
	}
}

func TestForContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range []time.Duration{-1, 0, time.Hour} {
		if err := sleep.For(ctx, d); !errors.Is(err, context.Canceled) {
			t.Fatalf("For(cancelled, %s) = %v, want context.Canceled", d, err)
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := sleep.For(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("For(deadline, 1h) = %v", err)
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("waited %s for a 20ms deadline", waited)
	}
}
