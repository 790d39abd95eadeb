package main

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

var keyPattern = regexp.MustCompile(`^hk_([0-9a-f]{16})_[0-9A-Za-z]{43}$`)

var apiKeyDocs = map[string]string{
	"createApiKey": `mutation Create($input: CreateApiKeyInput!) {
  createApiKey(input: $input) { key apiKey { id name scopes rateLimit expiresAt createdAt lastUsedAt revokedAt } }
}`,
	"revokeApiKey":     `mutation Revoke($id: ID!) { revokeApiKey(id: $id) { id revokedAt } }`,
	"apiKeys":          `query { apiKeys { id name scopes rateLimit lastUsedAt revokedAt } }`,
	"notificationJobs": `query { notificationJobs(first: 1) { nodes { id } } }`,
}

// createKey creates an API key through the door with the admin's token and
// returns the key and its id.
func createKey(t *testing.T, h *herald, dn, admin string, in map[string]any) (key, id string) {
	t.Helper()
	var r result
	if dn == graphQLDoor.name {
		r = gql(t, h, "createApiKey", apiKeyDocs["createApiKey"], map[string]any{"input": in}, withBearer(admin))
		expectOK(t, "createApiKey", r, 200)
	} else {
		status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/api-keys", in, withBearer(admin))
		r = envelopeResult(t, "create API key", status, env, hdr)
		expectOK(t, "create API key", r, 201)
	}
	key, _ = jsonPath(r.data, "key").(string)
	m := keyPattern.FindStringSubmatch(key)
	if m == nil || jsonPath(r.data, "apiKey", "id") != m[1] || jsonPath(r.data, "apiKey", "name") != in["name"] {
		t.Fatalf("created key: %v", r.data)
	}
	return key, m[1]
}

// keyCall calls a key-scoped GraphQL operation with the key as X-API-Key.
func keyJobs(t *testing.T, h *herald, opts ...reqOption) result {
	t.Helper()
	return gql(t, h, "notificationJobs", apiKeyDocs["notificationJobs"], nil, opts...)
}

func TestAPIKeysE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, map[string]string{"HERALD_RATE_LIMIT_APIKEY": "50"})
		admin := newAdminToken(t, h, "ops@example.com")
		user, _ := newUserToken(t, h, restDoor.name, "someone@example.com")
		var secrets []string
		for _, dn := range []string{restDoor.name, graphQLDoor.name} {
			t.Run(dn, func(t *testing.T) {
				sender, senderID := createKey(t, h, dn, admin, map[string]any{"name": "sender-" + dn, "scopes": []string{"notifications:send"}, "rateLimit": 3})
				reader, readerID := createKey(t, h, dn, admin, map[string]any{"name": "reader-" + dn, "scopes": []string{"accounts:read"}})
				secrets = append(secrets, sender[20:], reader[20:])

				// Both ways of sending a key, charged to the key's own tier.
				for i, opt := range []reqOption{withHeader("X-API-Key", sender), withBearer(sender)} {
					r := keyJobs(t, h, opt)
					expectOK(t, "jobs with a key", r, 200)
					if got, want := r.header.Get("X-RateLimit-Limit"), "3"; got != want {
						t.Fatalf("X-RateLimit-Limit = %q, want the key's own %s", got, want)
					}
					if got, want := r.header.Get("X-RateLimit-Remaining"), fmt.Sprint(2-i); got != want {
						t.Fatalf("X-RateLimit-Remaining = %q, want %s", got, want)
					}
				}
				expectOK(t, "third call", keyJobs(t, h, withHeader("X-API-Key", sender)), 200)
				r := keyJobs(t, h, withHeader("X-API-Key", sender))
				expectError(t, "fourth call", r, 429, "RATE_LIMITED")
				if r.details["tier"] != "apikey" || asInt(t, r.details["limit"]) != 3 || r.header.Get("Retry-After") == "" {
					t.Fatalf("429 of a key: %v %v", r.details, r.header)
				}
				// Another key has its own counter.
				r = keyJobs(t, h, withHeader("X-API-Key", reader))
				expectError(t, "a key without the scope", r, 403, "INSUFFICIENT_PERMISSIONS")
				if r.details["scope"] != "notifications:send" {
					t.Fatalf("the refusal must name the scope: %v", r.details)
				}
				if r.header.Get("X-RateLimit-Limit") != "50" {
					t.Fatalf("the reader key's limit is the default 50: %v", r.header)
				}

				// A key is not a user, nor an admin.
				status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withHeader("X-API-Key", reader))
				expectError(t, "users/me with a key", envelopeResult(t, "me", status, env, hdr), 403, "INSUFFICIENT_PERMISSIONS")
				status, env, hdr = h.rest(t, http.MethodGet, "/api/v1/api-keys", nil, withBearer(reader))
				res := envelopeResult(t, "list keys with a key", status, env, hdr)
				expectError(t, "list keys with a key", res, 403, "INSUFFICIENT_PERMISSIONS")
				if res.details["scope"] != "admin" {
					t.Fatalf("details: %v", res.details)
				}
				// Nor is a plain user an admin.
				status, env, hdr = h.rest(t, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"accounts:read"}}, withBearer(user))
				expectError(t, "a user creating a key", envelopeResult(t, "create", status, env, hdr), 403, "INSUFFICIENT_PERMISSIONS")
				// Two credentials at once are refused.
				expectError(t, "two credentials", keyJobs(t, h, withHeader("X-API-Key", reader), withBearer(admin)), 401, "TOKEN_INVALID")
				// Invalid requests.
				status, env, hdr = h.rest(t, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "x", "scopes": []string{"admin"}}, withBearer(admin))
				res = envelopeResult(t, "admin scope on a key", status, env, hdr)
				expectError(t, "admin scope on a key", res, 400, "VALIDATION_ERROR")
				if res.details["field"] != "scopes" {
					t.Fatalf("details: %v", res.details)
				}

				// Revoke: refused at once, on both doors.
				if dn == graphQLDoor.name {
					r := gql(t, h, "revokeApiKey", apiKeyDocs["revokeApiKey"], map[string]any{"id": readerID}, withBearer(admin))
					expectOK(t, "revoke", r, 200)
				} else {
					status, env, hdr := h.rest(t, http.MethodDelete, "/api/v1/api-keys/"+readerID, nil, withBearer(admin))
					expectOK(t, "revoke", envelopeResult(t, "revoke", status, env, hdr), 200)
					status, env, hdr = h.rest(t, http.MethodDelete, "/api/v1/api-keys/0000000000000000", nil, withBearer(admin))
					expectError(t, "revoke unknown", envelopeResult(t, "revoke unknown", status, env, hdr), 404, "NOT_FOUND")
				}
				expectError(t, "revoked key", keyJobs(t, h, withHeader("X-API-Key", reader)), 401, "TOKEN_INVALID")
				status, env, hdr = h.rest(t, http.MethodGet, "/api/v1/users/me", nil, withBearer(reader))
				expectError(t, "revoked key on REST", envelopeResult(t, "me", status, env, hdr), 401, "TOKEN_INVALID")

				// Expiry.
				soon := time.Now().UTC().Add(3 * time.Second).Truncate(time.Second)
				short, _ := createKey(t, h, dn, admin, map[string]any{"name": "short-" + dn, "scopes": []string{"notifications:send"}, "expiresAt": soon.Format(time.RFC3339)})
				secrets = append(secrets, short[20:])
				expectOK(t, "a key before its expiry", keyJobs(t, h, withHeader("X-API-Key", short)), 200)
				// The server shares this machine's clock: once it has passed
				// the expiry, one request must be refused.
				time.Sleep(time.Until(soon.Add(100 * time.Millisecond)))
				expectError(t, "a key past its expiry", keyJobs(t, h, withHeader("X-API-Key", short)), 401, "TOKEN_INVALID")

				// The listing shows use and revocation, never a secret.
				r = gql(t, h, "apiKeys", apiKeyDocs["apiKeys"], nil, withBearer(admin))
				expectOK(t, "list", r, 200)
				list, _ := r.data.([]any)
				seen := map[string]map[string]any{}
				for _, k := range list {
					m, _ := k.(map[string]any)
					seen[fmt.Sprint(m["id"])] = m
				}
				if seen[senderID]["lastUsedAt"] == nil || seen[senderID]["revokedAt"] != nil || asInt(t, seen[senderID]["rateLimit"]) != 3 {
					t.Fatalf("sender key listed as %v", seen[senderID])
				}
				if seen[readerID]["revokedAt"] == nil || asInt(t, seen[readerID]["rateLimit"]) != 50 {
					t.Fatalf("reader key listed as %v", seen[readerID])
				}
				if strings.Contains(fmt.Sprint(list), sender[20:]) {
					t.Fatal("the listing shows a secret")
				}
			})
		}

		// The CLI manages the same keys.
		out, stderr, err := runHerald(t, h.Env, "", "apikeys", "create", "--name", "billing", "--scopes", "notifications:send,accounts:write", "--rate-limit", "10")
		key := strings.TrimSpace(out)
		m := keyPattern.FindStringSubmatch(key)
		if err != nil || m == nil {
			t.Fatalf("apikeys create: %q %v\n%s", out, err, stderr)
		}
		secrets = append(secrets, key[20:])
		expectOK(t, "CLI key", keyJobs(t, h, withHeader("X-API-Key", key)), 200)
		out, _, err = runHerald(t, h.Env, "", "apikeys", "list")
		if err != nil || !strings.Contains(out, m[1]) || !strings.Contains(out, "billing") || strings.Contains(out, key[20:]) {
			t.Fatalf("apikeys list: %v\n%s", err, out)
		}
		if out, stderr, err := runHerald(t, h.Env, "", "apikeys", "revoke", m[1]); err != nil {
			t.Fatalf("apikeys revoke: %v\n%s%s", err, out, stderr)
		}
		expectError(t, "CLI-revoked key", keyJobs(t, h, withHeader("X-API-Key", key)), 401, "TOKEN_INVALID")
		if _, _, err := runHerald(t, h.Env, "", "apikeys", "create", "--name", "x", "--scopes", "admin"); err == nil {
			t.Fatal("apikeys create with the admin scope must fail")
		}

		// No secret is ever logged.
		logs := h.logs()
		for _, s := range secrets {
			if strings.Contains(logs, s) {
				t.Fatalf("a key's secret is in the logs")
			}
		}
		if !strings.Contains(logs, "API key created") {
			t.Fatal("key creation is not logged at all; the secret check above proves nothing")
		}
	})
}

// The audit of API keys: one made or revoked at the command line is an
// entry of the operators' log (no account, actor cli), read by admins on
// both doors, with its security.api_key_* webhook (userId null); one made
// by an admin user is in that user's log (actor user), not the
// operators'. An API key cannot make or revoke keys (the admin scope,
// which no key holds), so it leaves no entry.
func TestAPIKeyAuditE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		rcv := newHookReceiver(t, nil)
		h := startHerald(t, d, webhooksEnv(nil))
		admin := newAdminToken(t, h, "ops@example.com")
		hooks, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "hooks", "scopes": []string{"webhooks:manage"}})
		_, secret := createHook(t, h, hooks, rcv.srv.URL+"/keys", []string{"security.api_key_created", "security.api_key_revoked"})
		every, everyID := createKey(t, h, restDoor.name, admin, map[string]any{"name": "every scope", "scopes": auth.KeyScopes})

		operatorLog := func(dn string, opts ...reqOption) result {
			t.Helper()
			if dn == graphQLDoor.name {
				return gql(t, h, "operatorSecurityLog", `query { operatorSecurityLog(first: 10) { nodes { id kind outcome actor detail } pageInfo { hasNextPage } } }`, nil, opts...)
			}
			status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/admin/security-log?first=10", nil, opts...)
			return envelopeResult(t, "operator security log", status, env, hdr)
		}
		entries := func(dn string) []string {
			t.Helper()
			r := operatorLog(dn, withBearer(admin))
			expectOK(t, "the operators' log", r, http.StatusOK)
			var out []string
			for _, n := range asList(jsonPath(r.data, "nodes")) {
				out = append(out, fmt.Sprint(jsonPath(n, "kind"), " ", jsonPath(n, "actor"), " ", jsonPath(n, "detail", "keyId")))
			}
			return out
		}

		// A key with every scope is refused, and leaves nothing.
		status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/api-keys", map[string]any{"name": "by a key", "scopes": []string{"accounts:read"}}, withHeader("X-API-Key", every))
		expectError(t, "a key creating a key", envelopeResult(t, "create", status, env, hdr), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		status, env, hdr = h.rest(t, http.MethodDelete, "/api/v1/api-keys/"+everyID, nil, withHeader("X-API-Key", every))
		expectError(t, "a key revoking a key", envelopeResult(t, "revoke", status, env, hdr), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		for _, dn := range doorNames {
			if got := entries(dn); len(got) != 0 {
				t.Fatalf("%s: the operators' log after the admin's keys and a key's refusals: %v", dn, got)
			}
			expectError(t, "the operators' log read with a key", operatorLog(dn, withHeader("X-API-Key", every)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		}
		// The admin's own keys are in the admin's log.
		adminID := jwtSub(t, admin)
		made := sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT actor FROM security_events WHERE kind = 'api_key_created' AND account_id = '`+adminID+`'`)
		if !slices.Equal(made, []string{"user", "user"}) {
			t.Fatalf("the admin's api_key_created entries: %v", made)
		}

		// The command line: an entry of the operators' log each, actor cli.
		out, stderr, err := runHerald(t, h.Env, "", "apikeys", "create", "--name", "cli", "--scopes", "accounts:read")
		m := keyPattern.FindStringSubmatch(strings.TrimSpace(out))
		if err != nil || m == nil {
			t.Fatalf("apikeys create: %q %v\n%s", out, err, stderr)
		}
		if out, stderr, err := runHerald(t, h.Env, "", "apikeys", "revoke", m[1]); err != nil {
			t.Fatalf("apikeys revoke: %v\n%s%s", err, out, stderr)
		}
		want := []string{"api_key_revoked cli " + m[1], "api_key_created cli " + m[1]}
		for _, dn := range doorNames {
			if got := entries(dn); !slices.Equal(got, want) {
				t.Errorf("%s: the operators' log %v, want %v", dn, got, want)
			}
		}
		if got := sqlstoretest.RawColumn(t, h.Env["HERALD_DATABASE_URL"], `SELECT actor FROM security_events WHERE actor = 'cli' AND account_id IS NOT NULL`); len(got) != 0 {
			t.Errorf("a command line entry in an account's log: %v", got)
		}
		for _, typ := range []string{"security.api_key_created", "security.api_key_revoked"} {
			ds := rcv.waitFor(t, "/keys", func(ds []hookDelivery) bool {
				return slices.ContainsFunc(ofType(ds, typ), func(dl hookDelivery) bool { return strings.Contains(string(dl.body), `"cli"`) })
			}, typ+" of the command line")
			for _, dl := range ofType(ds, typ) {
				data := verifyHook(t, secret, dl)["data"].(map[string]any)
				if data["actor"] != "cli" {
					continue
				}
				if v, ok := data["userId"]; !ok || v != nil || jsonPath(data, "detail", "keyId") != m[1] {
					t.Errorf("%s of the command line: %v, want userId null and keyId %s", typ, data, m[1])
				}
			}
		}
	})
}
