package main

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

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
