package limits

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// localChatPacer records what reaches the fallback.
type localChatPacer struct {
	mu     sync.Mutex
	waits  []string
	pauses []string
}

func (l *localChatPacer) Wait(_ context.Context, chatID string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.waits = append(l.waits, chatID)
	return nil
}

func (l *localChatPacer) Pause(chatID string, _ time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pauses = append(l.pauses, chatID)
}

// Two processes booking sends to one chat through one Redis prefix get
// slots a per-chat gap apart, whichever process books; another chat is
// held back only by the overall gap. The gaps are an hour and a
// millisecond, so the time the test itself takes cannot blur them.
func TestSharedChatPaceHoldsAcrossProcesses(t *testing.T) {
	c := testRedisClient(t)
	prefix := testPrefix(t, c) + ":tg:"
	const perChat, global = time.Hour, time.Millisecond
	a := NewSharedChatPace(c, prefix, perChat, global, &localChatPacer{}, nil)
	b := NewSharedChatPace(c, prefix, perChat, global, &localChatPacer{}, nil)
	ctx := context.Background()
	book := func(p *SharedChatPace, chatID string) time.Duration {
		t.Helper()
		wait, err := p.reserve(ctx, chatID)
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	if wait := book(a, "42"); wait > time.Minute {
		t.Fatalf("the first send waits %s", wait)
	}
	// Another chat is held back only by the overall gap.
	if wait := book(b, "43"); wait > time.Minute {
		t.Fatalf("another chat waits %s, want at most the overall gap", wait)
	}
	for i, p := range []*SharedChatPace{b, a, b} {
		want := time.Duration(i+1) * perChat
		if wait := book(p, "42"); wait > want+time.Minute || wait < want-time.Minute {
			t.Fatalf("send %d to one chat waits %s, want about %s", i+2, wait, want)
		}
	}
	// A pause asked for by one process holds a chat back in the other
	// (slots are booked in call order, as the local pacer books them, so
	// it comes after the slots booked above).
	a.Pause("7", 5*perChat)
	if wait := book(b, "7"); wait < 5*perChat-time.Minute || wait > 5*perChat+time.Minute {
		t.Fatalf("after a pause of %s in the other process, a send waits %s", 5*perChat, wait)
	}
}

// Without Redis, a shared chat pace paces with its local pacer.
func TestSharedChatPaceFallsBackWithoutRedis(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 50 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	local := &localChatPacer{}
	p := NewSharedChatPace(c, "herald:test:tg:", time.Second, time.Millisecond, local, slog.New(slog.DiscardHandler))
	for range 3 {
		if err := p.Wait(context.Background(), "42"); err != nil {
			t.Fatal(err)
		}
	}
	p.Pause("42", time.Second)
	local.mu.Lock()
	defer local.mu.Unlock()
	if len(local.waits) != 3 || len(local.pauses) != 1 {
		t.Fatalf("the local pacer saw %d waits and %d pauses, want 3 and 1", len(local.waits), len(local.pauses))
	}
}
