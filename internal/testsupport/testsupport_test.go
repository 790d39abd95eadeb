package testsupport_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
)

var _ io.Writer = (*testsupport.Buffer)(nil)

func TestClock(t *testing.T) {
	start := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	c := testsupport.NewClock(start)
	var now func() time.Time = c.Now // the constructors' convention
	if !now().Equal(start) {
		t.Fatalf("Now = %v, want %v", now(), start)
	}
	c.Advance(90 * time.Second)
	if want := start.Add(90 * time.Second); !now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", now(), want)
	}
	c.Set(start)
	if !now().Equal(start) {
		t.Fatalf("after Set: %v, want %v", now(), start)
	}
	if !new(testsupport.Clock).Now().IsZero() {
		t.Fatal("the zero Clock is not at the zero time")
	}
}

// TestConcurrent is for the race detector: readers and writers at once.
func TestConcurrent(t *testing.T) {
	c := testsupport.NewClock(time.Time{})
	var b testsupport.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Second)
				_ = c.Now()
				fmt.Fprintf(&b, "%d\n", i)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := c.Now(); got != (time.Time{}).Add(800*time.Second) {
		t.Fatalf("clock at %v after 800 advances of 1s", got)
	}
	if n := strings.Count(b.String(), "\n"); n != 800 {
		t.Fatalf("%d lines written, want 800", n)
	}
}

func TestSleeper(t *testing.T) {
	var s testsupport.Sleeper
	ctx, cancel := context.WithCancel(context.Background())
	for _, d := range []time.Duration{time.Second, -time.Second, 2 * time.Second} {
		if err := s.Sleep(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := s.Sleep(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
	if got, want := s.Sleeps(), []time.Duration{time.Second, -time.Second, 2 * time.Second, time.Minute}; !slices.Equal(got, want) {
		t.Fatalf("Sleeps = %v, want %v", got, want)
	}
	if got := s.Slept(); got != time.Minute+3*time.Second {
		t.Fatalf("Slept = %v", got)
	}
}

func TestSleepingClock(t *testing.T) {
	start := time.Unix(1000, 0)
	c := testsupport.NewSleepingClock(start, true)
	if err := c.Sleep(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
	if got := c.Now(); !got.Equal(start.Add(time.Second)) {
		t.Fatalf("Now after a 1s sleep = %v", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context: %v", err)
	}
	if got := c.Sleeps(); !slices.Equal(got, []time.Duration{time.Second}) {
		t.Fatalf("Sleeps = %v, want only the uncancelled one", got)
	}
	still := testsupport.NewSleepingClock(start, false)
	_ = still.Sleep(context.Background(), time.Second)
	if !still.Now().Equal(start) {
		t.Fatal("a clock made without advance moved")
	}
}
