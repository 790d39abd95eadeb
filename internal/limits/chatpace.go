package limits

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/herald-vpn/herald/internal/sleep"
	"github.com/redis/go-redis/v9"
)

// ChatPacer spaces sends per chat and overall (Telegram allows a bot one
// message a second per chat and 30 a second in all): Wait takes the next
// slot for a chat, Pause holds a chat back (or every chat, for "") after
// the provider asked for a pause.
type ChatPacer interface {
	Wait(ctx context.Context, chatID string) error
	Pause(chatID string, d time.Duration)
}

// chatPaceScript books the next slot for a chat on Redis's clock, after
// both the chat's and the bot's next free slot, and returns how long, in
// microseconds, to wait for it. KEYS: the bot's key, the chat's key (one
// hash slot). ARGV: per-chat gap µs, overall gap µs.
const chatPaceScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local at = now
local g = tonumber(redis.call('GET', KEYS[1]) or '0')
if g > at then at = g end
local c = tonumber(redis.call('GET', KEYS[2]) or '0')
if c > at then at = c end
local gn = at + tonumber(ARGV[2])
local cn = at + tonumber(ARGV[1])
redis.call('SET', KEYS[1], string.format('%d', gn), 'PX', math.floor((gn - now) / 1000) + 1000)
redis.call('SET', KEYS[2], string.format('%d', cn), 'PX', math.floor((cn - now) / 1000) + 1000)
return at - now
`

// chatPauseScript moves a key's next free slot to at least now + ARGV[1]
// µs on Redis's clock.
const chatPauseScript = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local untl = now + tonumber(ARGV[1])
local cur = tonumber(redis.call('GET', KEYS[1]) or '0')
if untl > cur then
  redis.call('SET', KEYS[1], string.format('%d', untl), 'PX', math.floor((untl - now) / 1000) + 1000)
end
return 0
`

var (
	chatPaceLua  = redis.NewScript(chatPaceScript)
	chatPauseLua = redis.NewScript(chatPauseScript)
)

// SharedChatPace is a ChatPacer that every process using the same Redis
// prefix shares, so that replicas sending for one bot together keep its
// per-chat and overall pace. Each send books its slot in Redis, on Redis's
// clock (a replica's own clock does not matter); while Redis cannot be
// reached, the local pacer paces this process alone.
type SharedChatPace struct {
	client          redis.UniversalClient
	globalKey       string
	chatPrefix      string
	perChat, global time.Duration
	local           ChatPacer
	outage          outage
}

// NewSharedChatPace returns a pace of one send per perChat per chat and
// one per global overall, shared through Redis under prefix, falling back
// to local.
func NewSharedChatPace(client redis.UniversalClient, prefix string, perChat, global time.Duration, local ChatPacer, logger *slog.Logger) *SharedChatPace {
	// One hash tag, so the two keys of a booking share a Redis Cluster slot.
	tagged := prefix + "{pace}:"
	return &SharedChatPace{
		client: client, globalKey: tagged + "bot", chatPrefix: tagged + "chat:",
		perChat: perChat, global: global, local: local,
		outage: outage{logger: logger, what: "shared Telegram pace unavailable: Redis unreachable, pacing this replica alone"},
	}
}

// Wait blocks until a send to chatID may go out, or ctx is done.
func (p *SharedChatPace) Wait(ctx context.Context, chatID string) error {
	if p.outage.skipping() {
		return p.local.Wait(ctx, chatID)
	}
	wait, err := p.reserve(ctx, chatID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.outage.failed(ctx, err, "prefix", p.globalKey)
		return p.local.Wait(ctx, chatID)
	}
	return sleep.For(ctx, wait)
}

// reserve books chatID's next slot and says how long to wait for it.
func (p *SharedChatPace) reserve(ctx context.Context, chatID string) (time.Duration, error) {
	rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	us, err := chatPaceLua.Run(rctx, p.client, []string{p.globalKey, p.chatPrefix + chatID}, p.perChat.Microseconds(), p.global.Microseconds()).Int64()
	return time.Duration(us) * time.Microsecond, err
}

// Pause holds chatID (every chat for "") back for d, here and in Redis.
func (p *SharedChatPace) Pause(chatID string, d time.Duration) {
	p.local.Pause(chatID, d)
	if p.outage.skipping() {
		return
	}
	key := p.globalKey
	if chatID != "" {
		key = p.chatPrefix + chatID
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if err := chatPauseLua.Run(ctx, p.client, []string{key}, d.Microseconds()).Err(); err != nil {
		p.outage.failed(ctx, err, "prefix", p.globalKey)
	}
}

// outage is what a shared pace remembers of a Redis that failed: callers
// skip Redis for fallbackProbeEvery after a failure, and the warning is
// logged at most once per fallbackLogEvery.
type outage struct {
	logger    *slog.Logger
	what      string
	lastLog   atomic.Int64
	nextProbe atomic.Int64 // UnixMilli before which Redis is not asked again
}

func (o *outage) skipping() bool { return time.Now().UnixMilli() < o.nextProbe.Load() }

func (o *outage) failed(ctx context.Context, err error, attrs ...any) {
	now := time.Now().UnixMilli()
	o.nextProbe.Store(now + fallbackProbeEvery.Milliseconds())
	if o.logger != nil && now-o.lastLog.Load() >= fallbackLogEvery.Milliseconds() {
		o.lastLog.Store(now)
		o.logger.WarnContext(ctx, o.what, append(attrs, "err", err)...)
	}
}
