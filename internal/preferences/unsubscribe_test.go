package preferences_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/preferences"
)

// memStore is a preferences.Store in memory: no rollback, which the
// tests below do not need (a refused use writes nothing).
type memStore struct {
	settings map[string][]preferences.Setting
	used     map[string]bool
	accounts map[string]bool
}

func newMemStore(ids ...string) *memStore {
	s := &memStore{settings: map[string][]preferences.Setting{}, used: map[string]bool{}, accounts: map[string]bool{}}
	for _, id := range ids {
		s.accounts[id] = true
	}
	return s
}

func (s *memStore) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return fn(ctx)
}
func (s *memStore) TxTime(context.Context) time.Time { return time.Time{} }
func (s *memStore) NotificationSettings(_ context.Context, id string) ([]preferences.Setting, error) {
	return s.settings[id], nil
}
func (s *memStore) SetNotificationSettings(_ context.Context, id string, set []preferences.Setting) error {
	s.settings[id] = append(s.settings[id], set...)
	return nil
}
func (s *memStore) NotificationSchedule(context.Context, string) (preferences.Schedule, error) {
	return preferences.Schedule{}, nil
}
func (s *memStore) SetNotificationSchedule(context.Context, string, preferences.Schedule) error {
	return nil
}
func (s *memStore) AccountExists(_ context.Context, id string) (bool, error) {
	return s.accounts[id], nil
}
func (s *memStore) UseUnsubscribeLink(_ context.Context, tokenID, _ string) (bool, error) {
	if s.used[tokenID] {
		return false, nil
	}
	s.used[tokenID] = true
	return true, nil
}

func reasonOf(err error) any {
	if ae := apperr.As(err); ae != nil {
		return ae.Details["reason"]
	}
	return nil
}

// A link turns its category's email off once; a second use, a damaged,
// foreign or expired token, and a critical category are refused with
// their codes.
func TestUnsubscribe(t *testing.T) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	links := preferences.UnsubscribeLinks{Key: []byte("0123456789abcdef0123456789abcdef"), Now: clock}
	store := newMemStore("acct-1")
	svc := preferences.NewService(store, catalogue(t))
	svc.SetUnsubscribeLinks(links)
	ctx := t.Context()

	tok := links.Sign("acct-1", "product", preferences.ChannelEmail)
	u, err := svc.Unsubscribe(ctx, tok)
	if err != nil || u.AccountID != "acct-1" || u.Category != "product" || u.Channel != "email" {
		t.Fatalf("Unsubscribe = %+v, %v", u, err)
	}
	if c := catalogue(t); c.Allows(store.settings["acct-1"], "product", "email") || !c.Allows(store.settings["acct-1"], "product", "push") {
		t.Fatalf("after the link: settings %v, want product email off and push on", store.settings["acct-1"])
	}
	if _, err := svc.Unsubscribe(ctx, tok); !apperr.Is(err, apperr.UnsubscribeLinkUsed) {
		t.Fatalf("a second use: %v, want UNSUBSCRIBE_LINK_USED", err)
	}
	// Another link of the same category and account is a token of its own.
	if _, err := svc.Unsubscribe(ctx, links.Sign("acct-1", "product", preferences.ChannelEmail)); err != nil {
		t.Fatalf("a second link: %v", err)
	}

	other := preferences.UnsubscribeLinks{Key: []byte("another key"), Now: clock}
	late := preferences.UnsubscribeLinks{Key: links.Key, Now: func() time.Time { return now.Add(-preferences.UnsubscribeTTL) }}
	p64, mac, _ := strings.Cut(links.Sign("acct-1", "service", "email"), ".")
	for _, tc := range []struct {
		what, token, reason string
	}{
		{"empty", "", "format"},
		{"no MAC", p64, "format"},
		{"another key's", other.Sign("acct-1", "product", "email"), "signature"},
		{"a changed MAC", p64 + "." + strings.Repeat("A", len(mac)), "signature"},
		{"expired", late.Sign("acct-1", "product", "email"), "expired"},
		{"a critical category", links.Sign("acct-1", "billing", "email"), "category"},
		{"an unknown category", links.Sign("acct-1", "promotions", "email"), "category"},
		{"an unknown channel", links.Sign("acct-1", "product", "sms"), "format"},
		{"a gone account", links.Sign("acct-2", "product", "email"), "account"},
		{"an end-session token", accounts.SignLinkToken(links.Key, now.Add(time.Hour), "acct-1", "sess-1"), "format"},
	} {
		_, err := svc.Unsubscribe(ctx, tc.token)
		if !apperr.Is(err, apperr.UnsubscribeLinkInvalid) || reasonOf(err) != tc.reason {
			t.Errorf("%s: %v (reason %v), want UNSUBSCRIBE_LINK_INVALID, reason %s", tc.what, err, reasonOf(err), tc.reason)
		}
	}
	if n := len(store.settings["acct-1"]); n != 2 {
		t.Fatalf("%d settings written, want the two links' only: %v", n, store.settings["acct-1"])
	}

	// Without a key, nothing passes.
	bare := preferences.NewService(store, catalogue(t))
	if _, err := bare.Unsubscribe(ctx, links.Sign("acct-1", "service", "email")); !apperr.Is(err, apperr.UnsubscribeLinkInvalid) {
		t.Fatalf("a service without a key: %v", err)
	}
}

// FuzzParseUnsubscribe: any string parses or is UNSUBSCRIBE_LINK_INVALID
// with a reason, never a panic; what parses names four non-empty fields.
// (The link token underneath has its own fuzz target,
// accounts.FuzzParseCancelToken.)
func FuzzParseUnsubscribe(f *testing.F) {
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	links := preferences.UnsubscribeLinks{Key: []byte("fuzz key"), Now: func() time.Time { return now }}
	f.Add(links.Sign("acct", "product", "email"))
	f.Add("")
	f.Add("YQ.YQ")
	f.Add(accounts.SignLinkToken(links.Key, now.Add(time.Hour), "a", "b", "c"))
	f.Fuzz(func(t *testing.T, tok string) {
		u, err := links.Parse(tok)
		if err != nil {
			if !apperr.Is(err, apperr.UnsubscribeLinkInvalid) || reasonOf(err) == nil {
				t.Fatalf("%q: %v, want UNSUBSCRIBE_LINK_INVALID with a reason", tok, err)
			}
			return
		}
		if u.AccountID == "" || u.Category == "" || u.Channel == "" || u.TokenID == "" {
			t.Fatalf("%q parsed to %+v", tok, u)
		}
	})
}
