package limits_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// globalGap is the ChatPace's default spacing: 1s/30 rounded up.
const globalGap = (time.Second + 29) / 30

func TestChatPacePerChat(t *testing.T) {
	clk := testsupport.NewSleepingClock(time.Unix(1000, 0), true)
	p := limits.NewChatPace(limits.ChatPaceConfig{Clock: clk})
	ctx := context.Background()
	for range 3 {
		if err := p.Wait(ctx, "A"); err != nil {
			t.Fatal(err)
		}
	}
	// A different chat only waits for the global gap after A's last slot.
	if err := p.Wait(ctx, "B"); err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{time.Second, time.Second, globalGap}
	if got := clk.Sleeps(); !slices.Equal(got, want) {
		t.Fatalf("sleeps = %v, want %v", got, want)
	}

	// After a quiet spell nobody waits.
	clk.Advance(5 * time.Second)
	before := len(clk.Sleeps())
	if err := p.Wait(ctx, "A"); err != nil {
		t.Fatal(err)
	}
	if len(clk.Sleeps()) != before {
		t.Fatalf("slept after idle period: %v", clk.Sleeps()[before:])
	}
}

func TestChatPaceGlobal(t *testing.T) {
	// The clock stands still, so each wait is the offset of its slot.
	clk := testsupport.NewSleepingClock(time.Unix(1000, 0), false)
	p := limits.NewChatPace(limits.ChatPaceConfig{Clock: clk})
	var offsets []time.Duration
	for i := range 31 {
		n := len(clk.Sleeps())
		if err := p.Wait(context.Background(), string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
		off := time.Duration(0)
		if s := clk.Sleeps(); len(s) > n {
			off = s[n]
		}
		offsets = append(offsets, off)
	}
	inFirstSecond := 0
	for i, off := range offsets {
		if want := time.Duration(i) * globalGap; off != want {
			t.Fatalf("send %d at +%v, want +%v", i, off, want)
		}
		if off < time.Second {
			inFirstSecond++
		}
	}
	if inFirstSecond != 30 {
		t.Fatalf("%d sends in the first second, want 30", inFirstSecond)
	}
}

func TestChatPaceConcurrent(t *testing.T) {
	clk := testsupport.NewSleepingClock(time.Unix(1000, 0), false)
	p := limits.NewChatPace(limits.ChatPaceConfig{Clock: clk, PerChat: time.Second, Global: 10 * time.Millisecond})
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if err := p.Wait(context.Background(), "same-chat"); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := clk.Sleeps()
	slices.Sort(got)
	// One caller goes at once; the others get distinct one-second slots.
	if len(got) != 19 {
		t.Fatalf("%d sleeps, want 19", len(got))
	}
	for i, d := range got {
		if want := time.Duration(i+1) * time.Second; d != want {
			t.Fatalf("sleep %d = %v, want %v", i, d, want)
		}
	}
}

func TestChatPacePauseAndCancel(t *testing.T) {
	clk := testsupport.NewSleepingClock(time.Unix(1000, 0), false)
	p := limits.NewChatPace(limits.ChatPaceConfig{Clock: clk})
	p.Pause("A", 5*time.Second)
	if err := p.Wait(context.Background(), "A"); err != nil {
		t.Fatal(err)
	}
	p.Pause("", 3*time.Second)
	if err := p.Wait(context.Background(), "B"); err != nil {
		t.Fatal(err)
	}
	if got, want := clk.Sleeps(), []time.Duration{5 * time.Second, 5*time.Second + globalGap}; !slices.Equal(got, want) {
		// B waits for the global slot after A's (later than the 3s pause).
		t.Fatalf("sleeps = %v, want %v", got, want)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Wait(ctx, "C"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on cancelled ctx = %v", err)
	}
}
