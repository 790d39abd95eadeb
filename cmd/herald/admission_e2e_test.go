package main

import (
	"net/http"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A banned address is refused before its credential is looked at: a valid
// API key from it gets BANNED on both doors, and the key's lastUsedAt does
// not move (the refused request wrote nothing). The same key from another
// address is admitted and recorded.
func TestBannedAddressWithAValidKeyE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, limitsEnv(map[string]string{"HERALD_TRUSTED_PROXIES": "127.0.0.1/32"}))
		admin := newAdminToken(t, h, "ops@example.com")
		key, keyID := createKey(t, h, restDoor.name, admin, map[string]any{"name": "billing", "scopes": []string{"accounts:read", "notifications:send"}})
		lastUsed := func() any {
			t.Helper()
			status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/api-keys", nil, withBearer(admin))
			r := envelopeResult(t, "list keys", status, env, hdr)
			expectOK(t, "list keys", r, http.StatusOK)
			for _, k := range r.data.([]any) {
				if k := k.(map[string]any); k["id"] == keyID {
					return k["lastUsedAt"]
				}
			}
			t.Fatalf("key %s not listed: %v", keyID, r.data)
			return nil
		}

		ip := clientIPs()
		status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/admin/bans", map[string]any{"ip": ip, "reason": "test"}, withBearer(admin))
		expectOK(t, "ban", envelopeResult(t, "ban", status, env, hdr), http.StatusCreated)
		// Bans are re-read every 2 s; an anonymous request shows when it holds.
		eventually(t, func() bool { return versionQuery(t, h, from(ip)).code == "BANNED" }, "the ban of %s never held", ip)
		if got := lastUsed(); got != nil {
			t.Fatalf("lastUsedAt %v before any use of the key", got)
		}

		for _, c := range []struct {
			name string
			call func() result
		}{
			{"REST, X-API-Key", func() result {
				status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/admin/users", nil, withHeader("X-API-Key", key), from(ip))
				return envelopeResult(t, "users", status, env, hdr)
			}},
			{"REST, bearer", func() result {
				status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/admin/users", nil, withBearer(key), from(ip))
				return envelopeResult(t, "users", status, env, hdr)
			}},
			{"GraphQL, X-API-Key", func() result { return keyJobs(t, h, withHeader("X-API-Key", key), from(ip)) }},
		} {
			expectError(t, c.name+" from a banned address", c.call(), http.StatusForbidden, "BANNED")
		}
		if got := lastUsed(); got != nil {
			t.Fatalf("lastUsedAt = %v after requests refused as BANNED, want it unset", got)
		}

		// From an address that is not banned: admitted, and the use recorded.
		expectOK(t, "the key from another address", keyJobs(t, h, withHeader("X-API-Key", key), from(clientIPs())), http.StatusOK)
		if got := lastUsed(); got == nil {
			t.Fatal("lastUsedAt unset after an admitted request")
		}
	})
}
