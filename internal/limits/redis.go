package limits

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// allowScript does a whole Allow in one round trip, so concurrent instances
// never see a half-charged request. It mirrors Memory.allowLocked.
//
// KEYS: [block, refusals, blocks] when ARGV[2] == "1", then one counter per check.
// ARGV: 1 now, 2 abuse flag, 3 RefusalsBeforeBlock, 4 refusal cutoff,
// 5 RefusalWindow ms, 6 block until, 7 BlockFor ms, 8 BanAfterBlocks,
// 9 ban cutoff, 10 BanWindow ms, then per check: limit, cost, ttl ms.
// Reply: {status, blockUntil, banDue, count per check before charging...}.
// Times are passed by the caller (not Redis TIME) so every instance and the
// memory backend agree on window boundaries.
const allowScript = `
local now = tonumber(ARGV[1])
local off = 0
if ARGV[2] == '1' then
  off = 3
  local blocked = tonumber(redis.call('GET', KEYS[1]) or '0')
  if blocked > now then
    return {2, blocked, 0}
  end
end
local res = {0, 0, 0}
local refused = false
for i = 1, #KEYS - off do
  local a = 10 + (i - 1) * 3
  local c = tonumber(redis.call('GET', KEYS[off + i]) or '0')
  res[3 + i] = c
  if c + tonumber(ARGV[a + 2]) > tonumber(ARGV[a + 1]) then
    refused = true
  end
end
if not refused then
  for i = 1, #KEYS - off do
    local a = 10 + (i - 1) * 3
    redis.call('INCRBY', KEYS[off + i], ARGV[a + 2])
    redis.call('PEXPIRE', KEYS[off + i], ARGV[a + 3])
  end
  return res
end
res[1] = 1
if off == 0 then
  return res
end
local maxr = tonumber(ARGV[3])
redis.call('LPUSH', KEYS[2], ARGV[1])
redis.call('LTRIM', KEYS[2], 0, maxr)
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if redis.call('LLEN', KEYS[2]) <= maxr or tonumber(redis.call('LINDEX', KEYS[2], -1)) <= tonumber(ARGV[4]) then
  return res
end
redis.call('SET', KEYS[1], ARGV[6], 'PX', ARGV[7])
redis.call('DEL', KEYS[2])
local bans = tonumber(ARGV[8])
redis.call('LPUSH', KEYS[3], ARGV[1])
redis.call('LTRIM', KEYS[3], 0, bans - 1)
redis.call('PEXPIRE', KEYS[3], ARGV[10])
res[1] = 3
res[2] = tonumber(ARGV[6])
if redis.call('LLEN', KEYS[3]) >= bans and tonumber(redis.call('LINDEX', KEYS[3], -1)) > tonumber(ARGV[9]) then
  res[3] = 1
end
return res
`

const (
	scriptFixedArgs = 10
	abuseKeyCount   = 3
)

// Redis is a Backend shared by all instances using the same prefix.
//
// With Redis Cluster the prefix must contain a hash tag (e.g. "{rl}") because
// one script touches keys of several subjects, which must share a slot.
type Redis struct {
	client redis.UniversalClient
	policy AbusePolicy
	prefix string
	now    func() time.Time
	script *redis.Script
}

var _ Backend = (*Redis)(nil)

// NewRedis returns a Redis backend. Keys are prefix:tier:subject:windowStart
// and prefix:!abuse:ip:*. now defaults to time.Now.
func NewRedis(client redis.UniversalClient, policy AbusePolicy, prefix string, now func() time.Time) *Redis {
	if now == nil {
		now = time.Now
	}
	return &Redis{
		client: client,
		policy: policy.withDefaults(),
		prefix: prefix,
		now:    now,
		script: redis.NewScript(allowScript),
	}
}

// Allow implements Backend with a single EVALSHA (EVAL once if the script
// cache was flushed).
func (r *Redis) Allow(ctx context.Context, abuseKey string, checks []Check) (Decision, error) {
	nowMs := r.now().UnixMilli()
	var pbuf [maxInline]planned
	plan, err := buildPlan(nowMs, checks, pbuf[:0])
	if err != nil {
		return Decision{}, err
	}
	if abuseKey == "" && len(plan) == 0 {
		return Decision{Allowed: true}, nil // nothing to check or record
	}

	p := r.policy
	keys := make([]string, 0, abuseKeyCount+len(plan))
	args := make([]any, 0, scriptFixedArgs+3*len(plan))
	abuseFlag := "0"
	if abuseKey != "" {
		abuseFlag = "1"
		base := r.prefix + ":!abuse:" + abuseKey
		keys = append(keys, base+":block", base+":refusals", base+":blocks")
	}
	args = append(args,
		nowMs,
		abuseFlag,
		p.RefusalsBeforeBlock,
		nowMs-p.RefusalWindow.Milliseconds(),
		p.RefusalWindow.Milliseconds(),
		nowMs+p.BlockFor.Milliseconds(),
		p.BlockFor.Milliseconds(),
		p.BanAfterBlocks,
		nowMs-p.BanWindow.Milliseconds(),
		p.BanWindow.Milliseconds(),
	)
	for _, c := range plan {
		keys = append(keys, r.prefix+":"+c.name+":"+c.subject+":"+strconv.FormatInt(c.start, 10))
		args = append(args, c.limit, c.cost, max(1, c.end()-nowMs))
	}

	res, err := r.script.Run(ctx, r.client, keys, args...).Int64Slice()
	if err != nil {
		return Decision{}, fmt.Errorf("limits: redis allow: %w", err)
	}
	if len(res) < 3 {
		return Decision{}, fmt.Errorf("limits: redis allow: short reply (%d values)", len(res))
	}
	o := outcome{status: res[0], blockUntil: res[1], banDue: res[2] == 1, counts: res[3:]}
	if (o.status == statusAllowed || o.status == statusRefused) && len(o.counts) != len(plan) {
		return Decision{}, fmt.Errorf("limits: redis allow: %d counts for %d checks", len(o.counts), len(plan))
	}
	return decide(nowMs, plan, o, p), nil
}
