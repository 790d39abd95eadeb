package main

// Operators cannot be locked out (issue 21): an API key, whatever its
// scopes, cannot disable, enable, delete or end the sessions of an account
// holding admin; the last enabled admin can be neither disabled nor
// deleted, nor lose its scope, by either door, by deleting itself or by
// the CLI; and `herald users enable` lets a disabled account in again.

import (
	"net/http"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

func TestOperatorsCannotBeLockedOutE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		h := startHerald(t, d, sessionEnv(nil))
		ops := newAdminToken(t, h, "ops@example.com")
		opsID := h.account(t, "ops@example.com").ID
		writer, _ := createKey(t, h, restDoor.name, ops, map[string]any{"name": "billing", "scopes": []string{"accounts:read", "accounts:write"}})

		// Keys are refused on an admin's account, on both doors; nothing
		// happens to it.
		for _, dn := range doorNames {
			for _, op := range []string{"disableUser", "enableUser", "revokeSessions", "deleteUser"} {
				r := adminOp(t, h, dn, op, map[string]any{"userId": opsID, "reason": "takeover"}, key(writer))
				expectError(t, dn+" "+op+" of an admin with a key", r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				if r.details["scope"] != "admin" {
					t.Fatalf("%s %s of an admin with a key: the refusal must name admin: %v", dn, op, r.details)
				}
			}
		}
		expectOK(t, "the admin's token after the keys' attempts", me(t, h, restDoor.name, ops), http.StatusOK)
		if a := h.account(t, "ops@example.com"); a.Disabled() || !a.HasScope("admin") {
			t.Fatalf("the admin after the keys' attempts: %+v", a)
		}
		// The same key still manages a plain user.
		_, userID := newUserToken(t, h, restDoor.name, "ann@example.com")
		expectOK(t, "disable a user with the key", adminOp(t, h, graphQLDoor.name, "disableUser", map[string]any{"userId": userID}, key(writer)), http.StatusOK)

		// The last enabled admin, by every door and by itself.
		for _, dn := range doorNames {
			for _, op := range []string{"disableUser", "deleteUser"} {
				expectError(t, dn+" "+op+" of the last admin", adminOp(t, h, dn, op, map[string]any{"userId": opsID}, withBearer(ops)), http.StatusConflict, "LAST_ADMIN")
			}
			expectError(t, dn+" the last admin deleting itself", adminOp(t, h, dn, "deleteAccount", map[string]any{"password": testPassword}, withBearer(ops)), http.StatusConflict, "LAST_ADMIN")
		}
		// ... and by the CLI.
		_, stderr, err := runHerald(t, h.Env, "", "admin", "revoke", "--email", "ops@example.com")
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "LAST_ADMIN") {
			t.Fatalf("admin revoke of the last admin: %v (exit %d)\n%s", err, exitCode(err), stderr)
		}
		expectOK(t, "the last admin's token after every attempt", me(t, h, restDoor.name, ops), http.StatusOK)
		if a := h.account(t, "ops@example.com"); a.Disabled() || !a.HasScope("admin") {
			t.Fatalf("the last admin after every attempt: %+v", a)
		}

		// With a second admin, one may go; then the other is the last.
		second := newAdminToken(t, h, "ops2@example.com")
		secondID := h.account(t, "ops2@example.com").ID
		// Two enabled admins: a key is refused for holding no admin, not
		// because one would be the last.
		for _, op := range []string{"disableUser", "deleteUser", "revokeSessions"} {
			expectError(t, op+" of one of two admins with a key", adminOp(t, h, restDoor.name, op, map[string]any{"userId": secondID}, key(writer)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
		}
		expectOK(t, "the second admin's token after the key's attempts", me(t, h, graphQLDoor.name, second), http.StatusOK)
		if rec := record(t, h, restDoor.name, "disableUser", map[string]any{"userId": secondID}, withBearer(ops)); rec["disabled"] != true {
			t.Fatalf("disabling the second admin: %v", rec)
		}
		expectError(t, "the disabled admin's token", me(t, h, restDoor.name, second), http.StatusUnauthorized, "TOKEN_INVALID")
		expectError(t, "the first admin, now the only enabled one", adminOp(t, h, graphQLDoor.name, "disableUser", map[string]any{"userId": opsID}, withBearer(ops)), http.StatusConflict, "LAST_ADMIN")

		// herald users enable lets the second admin in again.
		stdout, stderr, err := runHerald(t, h.Env, "", "users", "enable", "--email", "OPS2@example.com")
		if err != nil || !strings.Contains(stdout, "ops2@example.com") || !strings.Contains(stdout, secondID) {
			t.Fatalf("users enable: %v\n%s%s", err, stdout, stderr)
		}
		second = login(t, h, graphQLDoor.name, "ops2@example.com", testPassword).access
		// Now the first may lose its scope by the CLI, and the second is
		// the last.
		if _, stderr, err := runHerald(t, h.Env, "", "admin", "revoke", "--email", "ops@example.com"); err != nil {
			t.Fatalf("admin revoke with another admin left: %v\n%s", err, stderr)
		}
		expectError(t, "the second admin, now the last", adminOp(t, h, restDoor.name, "deleteAccount", map[string]any{"password": testPassword}, withBearer(second)), http.StatusConflict, "LAST_ADMIN")

		// users enable of a plain user, of an enabled one (no change), of
		// nobody.
		expectError(t, "the disabled user's login", call(t, h, restDoor.name, opLogin, map[string]any{"email": "ann@example.com", "password": testPassword}), http.StatusForbidden, "ACCOUNT_DISABLED")
		for range 2 {
			if stdout, stderr, err := runHerald(t, h.Env, "", "users", "enable", "--email", "ann@example.com"); err != nil || !strings.Contains(stdout, "ann@example.com") {
				t.Fatalf("users enable of a user: %v\n%s%s", err, stdout, stderr)
			}
		}
		login(t, h, restDoor.name, "ann@example.com", testPassword)
		if rec := record(t, h, restDoor.name, "user", map[string]any{"id": userID}, key(writer)); rec["disabled"] != false || rec["disabledAt"] != nil {
			t.Fatalf("the user's record after users enable: %v", rec)
		}
		_, _, err = runHerald(t, h.Env, "", "users", "enable", "--email", "nobody@example.com")
		if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "USER_NOT_FOUND") {
			t.Fatalf("users enable of nobody: %v", err)
		}
	})
}
