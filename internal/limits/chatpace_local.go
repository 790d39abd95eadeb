package limits

import (
	"context"
	"sync"
	"time"

	"github.com/herald-vpn/herald/internal/sleep"
)

// Clock is the time of code that both reads the time and sleeps, so a
// test can run it without waiting (testsupport.SleepingClock). The one
// rule across Herald: a config that only reads the time takes
// Now func() time.Time (testsupport.Clock's Now fakes it); one that only
// sleeps takes Sleep func(ctx, d) error (push.RetryPolicy;
// testsupport.Sleeper); only code that does both takes a Clock.
type Clock interface {
	Now() time.Time
	// Sleep waits for d or until ctx is done, returning ctx.Err() then.
	Sleep(ctx context.Context, d time.Duration) error
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error { return sleep.For(ctx, d) }

// ChatGap is Telegram's published pace per chat: about one message a
// second.
const ChatGap = time.Second

// ChatPaceConfig tunes a ChatPace; zero fields take Telegram's published
// limits.
type ChatPaceConfig struct {
	PerChat time.Duration // minimum gap between sends to one chat; default 1s
	Global  time.Duration // minimum gap between any two sends; default ~33.3ms (30/s)
	Clock   Clock         // default: real time
}

// ChatPace is the ChatPacer of one process: it spaces outgoing sends so
// the bot stays under Telegram's limits (about 1 message/second per chat,
// 30/second overall). Callers wait for a slot rather than being refused.
// Safe for concurrent use.
type ChatPace struct {
	perChat, global time.Duration
	clock           Clock

	mu         sync.Mutex
	globalNext time.Time            // earliest time of the next send overall
	chatNext   map[string]time.Time // earliest time of the next send per chat
	calls      int
}

// NewChatPace returns a ChatPace with cfg's limits.
func NewChatPace(cfg ChatPaceConfig) *ChatPace {
	if cfg.PerChat <= 0 {
		cfg.PerChat = ChatGap
	}
	if cfg.Global <= 0 {
		// Rounded up so 30 slots never fit inside one second.
		cfg.Global = (time.Second + 29) / 30
	}
	if cfg.Clock == nil {
		cfg.Clock = realClock{}
	}
	return &ChatPace{perChat: cfg.PerChat, global: cfg.Global, clock: cfg.Clock,
		chatNext: make(map[string]time.Time)}
}

// Wait blocks until a send to chatID may go out, or ctx is done. Slots are
// reserved in call order, so concurrent callers are served fairly; a slot
// abandoned by a cancelled caller is simply left unused.
func (p *ChatPace) Wait(ctx context.Context, chatID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	now := p.clock.Now()
	at := now
	if p.globalNext.After(at) {
		at = p.globalNext
	}
	if n, ok := p.chatNext[chatID]; ok && n.After(at) {
		at = n
	}
	p.globalNext = at.Add(p.global)
	p.chatNext[chatID] = at.Add(p.perChat)
	p.calls++
	if p.calls%1024 == 0 {
		p.prune(now)
	}
	p.mu.Unlock()

	if d := at.Sub(now); d > 0 {
		return p.clock.Sleep(ctx, d)
	}
	return nil
}

// Pause delays future sends to chatID by at least d from now, or all sends
// when chatID is "" – use it with the RetryAfter of a 429.
func (p *ChatPace) Pause(chatID string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := p.clock.Now().Add(d)
	if chatID == "" {
		if until.After(p.globalNext) {
			p.globalNext = until
		}
		return
	}
	if until.After(p.chatNext[chatID]) {
		p.chatNext[chatID] = until
	}
}

// prune forgets chats whose next slot has passed so the map stays bounded
// by the chats active in the last PerChat interval. Caller holds mu.
func (p *ChatPace) prune(now time.Time) {
	for id, t := range p.chatNext {
		if !t.After(now) {
			delete(p.chatNext, id)
		}
	}
}
