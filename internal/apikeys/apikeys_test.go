package apikeys_test

// The service is tested over the real SQL store (SQLite, and PostgreSQL
// when HERALD_TEST_POSTGRES_URL is set); only the clock is ours.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

func newService(t *testing.T, url string) (*apikeys.Service, *sqlstore.DB, *testsupport.Clock) {
	t.Helper()
	db, _ := jobstest.Open(t, url, jobs.Config{})
	clk := testsupport.NewClock(time.Now().UTC().Truncate(time.Second))
	db.Now = clk.Now
	s, err := apikeys.NewService(context.Background(), db, apikeys.Config{DefaultRateLimit: 60, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, db, clk
}

func codeOf(err error) apperr.Code {
	var e *apperr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestKeyLifecycle(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := context.Background()
		s, db, clk := newService(t, url)
		limit := 5
		expires := clk.Now().Add(time.Hour)
		k, key, err := s.Create(ctx, auth.Principal{}, apikeys.NewKey{Name: " billing ", Scopes: []string{auth.ScopeAccountsWrite, auth.ScopeAccountsRead, auth.ScopeAccountsWrite}, RateLimit: &limit, ExpiresAt: &expires})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(key, "hk_"+k.ID+"_") || len(key) != len("hk_")+16+1+43 {
			t.Fatalf("key %q of id %s is not hk_<16 hex>_<43 base62>", key, k.ID)
		}
		if k.Name != "billing" || strings.Join(k.Scopes, " ") != "accounts:read accounts:write" || s.RateLimitOf(k) != 5 {
			t.Fatalf("created %+v", k)
		}
		stored, err := db.APIKeyByID(ctx, k.ID)
		if err != nil {
			t.Fatal(err)
		}
		_, secret, _ := apikeys.Parse(key)
		if strings.Contains(string(stored.SecretHash), secret) || len(stored.SecretHash) != 32 {
			t.Fatalf("the store must hold a 32-byte HMAC, not the secret: %x", stored.SecretHash)
		}

		p, err := s.VerifyAPIKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if p.Kind != auth.APIKey || p.KeyID != k.ID || p.RateLimit != 5 || !p.Has(auth.ScopeAccountsWrite) || p.Has(auth.ScopeNotificationsSend) || p.Has(auth.ScopeAdmin) || !p.ExpiresAt.Equal(expires) {
			t.Fatalf("principal %+v", p)
		}

		// Verifying writes nothing; a recorded use writes lastUsedAt, at
		// most once a minute.
		if got := lastUsed(t, db, k.ID); got != nil {
			t.Fatalf("lastUsedAt after a verification alone = %v, want unset", got)
		}
		use := func() {
			t.Helper()
			p, err := s.VerifyAPIKey(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			s.RecordUse(ctx, p)
		}
		s.RecordUse(ctx, p)
		first := lastUsed(t, db, k.ID)
		if first == nil || !first.Equal(clk.Now()) {
			t.Fatalf("lastUsedAt after first use = %v, want %v", first, clk.Now())
		}
		clk.Advance(30 * time.Second)
		use()
		if got := lastUsed(t, db, k.ID); !got.Equal(*first) {
			t.Fatalf("lastUsedAt rewritten within a minute: %v", got)
		}
		clk.Advance(31 * time.Second)
		use()
		if got := lastUsed(t, db, k.ID); !got.Equal(clk.Now()) {
			t.Fatalf("lastUsedAt after a minute = %v, want %v", got, clk.Now())
		}

		// A wrong secret with the right id is refused.
		wrong := key[:len(key)-1] + map[bool]string{true: "b", false: "a"}[strings.HasSuffix(key, "a")]
		if _, err := s.VerifyAPIKey(ctx, wrong); codeOf(err) != apperr.TokenInvalid {
			t.Fatalf("wrong secret: %v", err)
		}

		revoked, err := s.Revoke(ctx, k.ID)
		if err != nil || revoked.RevokedAt == nil {
			t.Fatalf("revoke: %+v %v", revoked, err)
		}
		if _, err := s.VerifyAPIKey(ctx, key); codeOf(err) != apperr.TokenInvalid {
			t.Fatalf("revoked key: %v", err)
		}
		clk.Advance(time.Minute)
		again, err := s.Revoke(ctx, k.ID)
		if err != nil || !again.RevokedAt.Equal(*revoked.RevokedAt) {
			t.Fatalf("revoking twice must keep the first time: %v %v", again.RevokedAt, err)
		}
		if _, err := s.Revoke(ctx, "0123456789abcdef"); codeOf(err) != apperr.NotFound {
			t.Fatalf("unknown id: %v", err)
		}

		// Expiry.
		soon := clk.Now().Add(time.Minute)
		e, ekey, err := s.Create(ctx, auth.Principal{}, apikeys.NewKey{Name: "support", Scopes: []string{auth.ScopeAccountsRead}, ExpiresAt: &soon})
		if err != nil {
			t.Fatal(err)
		}
		if p, err := s.VerifyAPIKey(ctx, ekey); err != nil || p.RateLimit != 0 || s.RateLimitOf(e) != 60 {
			t.Fatalf("fresh key: %+v %v (default limit %d)", p, err, s.RateLimitOf(e))
		}
		clk.Advance(time.Minute)
		if _, err := s.VerifyAPIKey(ctx, ekey); codeOf(err) != apperr.TokenInvalid {
			t.Fatalf("expired key: %v", err)
		}

		list, err := s.List(ctx)
		if err != nil || len(list) != 2 || list[0].ID != e.ID || list[1].ID != k.ID {
			t.Fatalf("list newest first: %+v %v", list, err)
		}
	})
}

func lastUsed(t *testing.T, db *sqlstore.DB, id string) *time.Time {
	t.Helper()
	k, err := db.APIKeyByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return k.LastUsedAt
}

func TestValidate(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	past, future := now.Add(-time.Second), now.Add(time.Hour)
	zero, big, ok := 0, apikeys.MaxRateLimit+1, 100
	cases := []struct {
		name  string
		in    apikeys.NewKey
		field string // "" when valid
	}{
		{"valid", apikeys.NewKey{Name: "billing", Scopes: []string{"accounts:write"}, RateLimit: &ok, ExpiresAt: &future}, ""},
		{"every key scope", apikeys.NewKey{Name: "all", Scopes: auth.KeyScopes}, ""},
		{"no name", apikeys.NewKey{Name: "  ", Scopes: []string{"accounts:read"}}, "name"},
		{"long name", apikeys.NewKey{Name: strings.Repeat("é", 101), Scopes: []string{"accounts:read"}}, "name"},
		{"no scopes", apikeys.NewKey{Name: "x"}, "scopes"},
		{"unknown scope", apikeys.NewKey{Name: "x", Scopes: []string{"accounts:delete"}}, "scopes"},
		{"admin is not a key scope", apikeys.NewKey{Name: "x", Scopes: []string{"admin"}}, "scopes"},
		{"zero rate limit", apikeys.NewKey{Name: "x", Scopes: []string{"accounts:read"}, RateLimit: &zero}, "rateLimit"},
		{"huge rate limit", apikeys.NewKey{Name: "x", Scopes: []string{"accounts:read"}, RateLimit: &big}, "rateLimit"},
		{"expiry in the past", apikeys.NewKey{Name: "x", Scopes: []string{"accounts:read"}, ExpiresAt: &past}, "expiresAt"},
	}
	for _, c := range cases {
		err := apikeys.Validate(c.in, now)
		if c.field == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.ValidationError || e.Details["field"] != c.field {
			t.Errorf("%s: got %v, want VALIDATION_ERROR on %s", c.name, err, c.field)
		}
	}
}

func TestParse(t *testing.T) {
	id, secret := "0123456789abcdef", strings.Repeat("aZ9", 14)+"x"
	cases := []struct {
		name, raw string
		ok        bool
	}{
		{"valid", "hk_" + id + "_" + secret, true},
		{"no prefix", id + "_" + secret, false},
		{"other prefix", "hx_" + id + "_" + secret, false},
		{"short id", "hk_" + id[1:] + "_" + secret, false},
		{"uppercase id", "hk_" + strings.ToUpper(id) + "_" + secret, false},
		{"short secret", "hk_" + id + "_" + secret[1:], false},
		{"long secret", "hk_" + id + "_" + secret + "a", false},
		{"secret with underscore", "hk_" + id + "_" + secret[1:] + "_", false},
		{"no separator", "hk_" + id + secret, false},
		{"empty", "", false},
		{"a JWT", "eyJhbGciOiJFZERTQSJ9.e30.sig", false},
	}
	for _, c := range cases {
		gotID, gotSecret, ok := apikeys.Parse(c.raw)
		if ok != c.ok || (ok && (gotID != id || gotSecret != secret)) {
			t.Errorf("%s: Parse(%q) = %q %q %v", c.name, c.raw, gotID, gotSecret, ok)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("hk_0123456789abcdef_" + strings.Repeat("a", 43))
	f.Add("hk__")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, raw string) {
		id, secret, ok := apikeys.Parse(raw)
		if !ok {
			return
		}
		if apikeys.Format(id, secret) != raw {
			t.Fatalf("Parse(%q) = %q %q does not format back", raw, id, secret)
		}
		if len(id) != 16 || len(secret) != 43 {
			t.Fatalf("Parse(%q) accepted lengths %d %d", raw, len(id), len(secret))
		}
	})
}
