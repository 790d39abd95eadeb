package server

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/policy"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// verifiers accept every credential and count what admission asked of
// them: token checks (a signature check and a session read), key lookups
// and recorded key uses (a write).
type verifiers struct {
	mu                        sync.Mutex
	tokens, keys, recordedUse int
}

func (v *verifiers) VerifyAccessToken(context.Context, string) (auth.Principal, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.tokens++
	return auth.Principal{Kind: auth.User, AccountID: "u1", SessionID: "s1", Scopes: []string{auth.ScopeAdmin}}, nil
}

func (v *verifiers) VerifyAPIKey(context.Context, string) (auth.Principal, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.keys++
	return auth.Principal{Kind: auth.APIKey, KeyID: "k1", RateLimit: 2, Scopes: []string{auth.ScopeAccountsRead}}, nil
}

func (v *verifiers) RecordUse(context.Context, auth.Principal) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.recordedUse++
}

func (v *verifiers) counts() [3]int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return [3]int{v.tokens, v.keys, v.recordedUse}
}

// bans is a ban store in memory.
type bans struct {
	mu   sync.Mutex
	list []limits.Ban
}

func (b *bans) ListBans(context.Context) ([]limits.Ban, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]limits.Ban(nil), b.list...), nil
}

func (b *bans) AddBan(_ context.Context, ban limits.Ban) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.list = append(b.list, ban)
	return nil
}

// Admission decides the address first: a banned, blocked or over-the-limit
// address is refused before its credential is looked at (no token check,
// no key lookup) and records no key use; a request refused by its key's
// own tier was authenticated (the key's limit is the key's) but records no
// use either. Both credentials, through the one admission of both doors.
func TestAdmissionDecidesTheAddressBeforeTheCredential(t *testing.T) {
	const (
		banned  = "192.0.2.1"
		blocked = "192.0.2.2"
		busy    = "192.0.2.3"
		fine    = "192.0.2.4"
		v6      = "2001:db8:7:7::1"
	)
	store := &bans{list: []limits.Ban{{IP: banned, Reason: "test"}, {IP: limits.Subject(netip.MustParseAddr(v6)), Reason: "test"}}}
	clk := testsupport.NewClock(time.Date(2030, 1, 1, 12, 0, 15, 0, time.UTC))
	mem := limits.NewMemory(limits.AbusePolicy{RefusalsBeforeBlock: 1, BanAfterBlocks: 100}, clk.Now)
	t.Cleanup(func() { mem.Close() })
	// global 3 per address, protected 100 per user; the key's own limit is 2.
	gate := limits.NewGate(mem, limits.PerWindow(time.Minute, 3, 1, 100, 100, 100), store, slog.New(slog.DiscardHandler), time.Hour)
	v := &verifiers{}
	adm := admission{gate: gate, authn: auth.NewAuthenticator(v, v)}

	key := auth.Credential{APIKey: "hk_0123456789abcdef_x"}
	token := auth.Credential{Present: true, Bearer: "a.b.c"}
	readUsers := []auth.Rule{auth.Scoped(auth.ScopeAccountsRead)}
	me := []auth.Rule{auth.Protected}
	login := []auth.Rule{auth.ForAuthTier}

	steps := []struct {
		name  string
		ip    string
		cred  auth.Credential
		rules []auth.Rule
		code  apperr.Code // "" admitted
		tier  string      // of a RATE_LIMITED refusal
		// what the request asked of the verifiers: token checks, key
		// lookups, recorded uses
		want [3]int
	}{
		{"banned address, valid key", banned, key, readUsers, apperr.Banned, "", [3]int{}},
		{"banned address, valid token", banned, token, me, apperr.Banned, "", [3]int{}},
		{"banned IPv6 /64, valid key", "2001:db8:7:7:abcd::2", key, readUsers, apperr.Banned, "", [3]int{}},

		{"over the auth tier", blocked, auth.Credential{}, login, "", "", [3]int{}},
		{"refused by the auth tier", blocked, auth.Credential{}, login, apperr.RateLimited, policy.TierAuth, [3]int{}},
		{"refused again: blocked", blocked, auth.Credential{}, login, apperr.RateLimited, limits.TierBlocked, [3]int{}},
		{"blocked address, valid key", blocked, key, readUsers, apperr.RateLimited, limits.TierBlocked, [3]int{}},
		{"blocked address, valid token", blocked, token, me, apperr.RateLimited, limits.TierBlocked, [3]int{}},

		{"first of three", busy, token, me, "", "", [3]int{1, 0, 0}},
		{"second of three", busy, token, me, "", "", [3]int{1, 0, 0}},
		{"third of three", busy, key, readUsers, "", "", [3]int{0, 1, 1}},
		{"over the global tier, valid key", busy, key, readUsers, apperr.RateLimited, policy.TierGlobal, [3]int{}},
		{"refused again (blocked), valid token", busy, token, me, apperr.RateLimited, limits.TierBlocked, [3]int{}},

		{"the key's second call", fine, key, readUsers, "", "", [3]int{0, 1, 1}},
		{"the key over its own limit", fine, key, readUsers, apperr.RateLimited, policy.TierAPIKey, [3]int{0, 1, 0}},
	}
	for _, s := range steps {
		before := v.counts()
		ctx := api.WithInfo(context.Background(), &api.RequestInfo{ClientIP: netip.MustParseAddr(s.ip), Credential: s.cred})
		_, err := adm.Admit(ctx, httptest.NewRecorder(), s.rules)
		switch {
		case s.code == "" && err != nil:
			t.Fatalf("%s: refused: %v", s.name, err)
		case s.code != "" && !apperr.Is(err, s.code):
			t.Fatalf("%s: %v, want %s", s.name, err, s.code)
		case s.tier != "" && apperr.As(err).Details["tier"] != s.tier:
			t.Fatalf("%s: %v, want tier %s", s.name, apperr.As(err).Details, s.tier)
		}
		after := v.counts()
		got := [3]int{after[0] - before[0], after[1] - before[1], after[2] - before[2]}
		if got != s.want {
			t.Fatalf("%s: %d token checks, %d key lookups, %d recorded uses; want %v", s.name, got[0], got[1], got[2], s.want)
		}
	}
}
