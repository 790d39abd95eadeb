package main

// An account's locale (issue 21, finding 9): its owner reads and changes
// it on both doors, the admin API shows and sets it, a malformed tag is
// VALIDATION_ERROR, and the next email speaks the new language.

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

var localeDocs = map[string]string{
	"me":            `query { me { id email locale } }`,
	"setLocale":     `mutation SetLocale($locale: String!) { setLocale(locale: $locale) { id email locale } }`,
	"setUserLocale": `mutation SetUserLocale($userId: ID!, $locale: String!) { setUserLocale(userId: $userId, locale: $locale) { ` + recordFields + ` locale } }`,
	"user":          `query User($id: ID) { user(id: $id) { id locale } }`,
}

// localeOp runs a locale operation through the door: me, setLocale (the
// caller's), setUserLocale and user (the admin API's).
func localeOp(t testing.TB, h *herald, dn, op string, args map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, op, localeDocs[op], args, opts...)
	}
	str := func(k string) string { s, _ := args[k].(string); return s }
	var status int
	var env map[string]any
	var hdr http.Header
	switch op {
	case "me":
		status, env, hdr = h.rest(t, http.MethodGet, "/api/v1/users/me", nil, opts...)
	case "setLocale":
		status, env, hdr = h.rest(t, http.MethodPut, "/api/v1/users/me/locale", map[string]any{"locale": args["locale"]}, opts...)
	case "setUserLocale":
		status, env, hdr = h.rest(t, http.MethodPut, "/api/v1/admin/users/"+url.PathEscape(str("userId"))+"/locale", map[string]any{"locale": args["locale"]}, opts...)
	case "user":
		status, env, hdr = h.rest(t, http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(str("id")), nil, opts...)
	default:
		t.Fatalf("no REST route for %s", op)
	}
	return envelopeResult(t, op, status, env, hdr)
}

// expectLocale runs op and checks the locale it answers (nil: null).
func expectLocale(t testing.TB, h *herald, dn, op string, args map[string]any, want any, opts ...reqOption) {
	t.Helper()
	r := localeOp(t, h, dn, op, args, opts...)
	expectOK(t, dn+" "+op, r, http.StatusOK)
	m, ok := r.data.(map[string]any)
	if !ok {
		t.Fatalf("%s %s: %v", dn, op, r.data)
	}
	if got, has := m["locale"]; !has || got != want {
		t.Fatalf("%s %s: locale %v (present %v), want %v", dn, op, got, has, want)
	}
}

func TestLocaleE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, brandEnv(map[string]string{"HERALD_RESEND_COOLDOWN": "1us"}))
		admin := newAdminToken(t, h, "ops@example.com")
		reader, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "support", "scopes": []string{"accounts:read"}})
		writer, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "crm", "scopes": []string{"accounts:write", "accounts:read"}})
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				email := dn + "-lena@example.com"
				access, id := newUserToken(t, h, dn, email)
				owner := withBearer(access)

				// The owner: none given at signup, then one, canonical.
				expectLocale(t, h, dn, "me", nil, nil, owner)
				expectLocale(t, h, dn, "setLocale", map[string]any{"locale": "pt_br"}, "pt-BR", owner)
				expectLocale(t, h, dn, "me", nil, "pt-BR", owner)
				for _, bad := range []string{"not a language", "", "de;q=0.8", "und"} {
					r := localeOp(t, h, dn, "setLocale", map[string]any{"locale": bad}, owner)
					expectError(t, dn+" setLocale "+bad, r, http.StatusBadRequest, "VALIDATION_ERROR")
					if r.details["field"] != "locale" {
						t.Fatalf("%s setLocale %q: details %v, want field locale", dn, bad, r.details)
					}
				}
				expectLocale(t, h, dn, "me", nil, "pt-BR", owner)
				expectError(t, dn+" setLocale with a key", localeOp(t, h, dn, "setLocale", map[string]any{"locale": "de"}, key(writer)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, dn+" setLocale without a token", localeOp(t, h, dn, "setLocale", map[string]any{"locale": "de"}), http.StatusUnauthorized, "AUTH_REQUIRED")

				// The admin API: the record shows it, accounts:write sets it.
				expectLocale(t, h, dn, "user", map[string]any{"id": id}, "pt-BR", key(reader))
				r := localeOp(t, h, dn, "setUserLocale", map[string]any{"userId": id, "locale": "de"}, key(reader))
				expectError(t, dn+" setUserLocale with a read key", r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				if r.details["scope"] != "accounts:write" {
					t.Fatalf("%s setUserLocale with a read key: details %v", dn, r.details)
				}
				expectError(t, dn+" setUserLocale as the owner", localeOp(t, h, dn, "setUserLocale", map[string]any{"userId": id, "locale": "de"}, owner), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, dn+" setUserLocale malformed", localeOp(t, h, dn, "setUserLocale", map[string]any{"userId": id, "locale": "deutsch!"}, key(writer)), http.StatusBadRequest, "VALIDATION_ERROR")
				expectError(t, dn+" setUserLocale of nobody", localeOp(t, h, dn, "setUserLocale", map[string]any{"userId": "nobody", "locale": "de"}, key(writer)), http.StatusNotFound, "USER_NOT_FOUND")
				expectLocale(t, h, dn, "setUserLocale", map[string]any{"userId": id, "locale": "DE"}, "de", key(writer))
				expectLocale(t, h, dn, "me", nil, "de", owner)

				// The next email speaks the new language; the owner's change
				// back to English, the one after.
				resetEmail := func() {
					t.Helper()
					expectOK(t, "password reset", call(t, h, dn, opRequestReset, map[string]any{"email": email}), http.StatusOK)
				}
				resetEmail()
				expectEmail(t, h, email, 2, "Setzen Sie Ihr Passwort für Acme VPN zurück", "de", "Passwort")
				expectLocale(t, h, dn, "setLocale", map[string]any{"locale": "en-GB"}, "en-GB", owner)
				resetEmail()
				expectEmail(t, h, email, 3, "Reset your Acme VPN password", "en", "reset your Acme VPN password")
				expectLocale(t, h, dn, "setUserLocale", map[string]any{"userId": id, "locale": "de-CH"}, "de-CH", withBearer(admin))
				resetEmail()
				expectEmail(t, h, email, 4, "Setzen Sie Ihr Passwort für Acme VPN zurück", "de", "Passwort")
			})
		}
	})
}
