package main

// A user's in-app inbox through the admin API (issue 26): an operator
// lists it (pages, filters), reads its counts and archives one item or all
// (up to one), without marking them seen; the refusals (a key without the
// scope, a user's own token, an unknown user, another user's item, a bad
// cursor or page size).

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

var inboxAdminDocs = map[string]string{
	"userInbox": `query ($id: ID!, $first: Int, $after: String, $archived: Boolean, $unread: Boolean) {
  userInbox(userId: $id, first: $first, after: $after, archived: $archived, unreadOnly: $unread) { nodes { ` + inboxItemFields + ` } pageInfo { endCursor hasNextPage } } }`,
	"userInboxCounts":      `query ($id: ID!) { userInboxCounts(userId: $id) { unseen unread } }`,
	"archiveUserInboxItem": `mutation ($id: ID!, $item: ID!) { archiveUserInboxItem(userId: $id, id: $item) { ` + inboxItemFields + ` } }`,
	"archiveUserInbox":     `mutation ($id: ID!, $upTo: ID) { archiveUserInbox(userId: $id, upTo: $upTo) { unseen unread } }`,
}

// adminInboxList lists userID's inbox through door dn with cred.
func adminInboxList(t *testing.T, h *herald, dn, userID string, first int, after string, archived, unread bool, cred reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		vars := map[string]any{"id": userID, "archived": archived, "unread": unread}
		if first != 0 {
			vars["first"] = first
		}
		if after != "" {
			vars["after"] = after
		}
		return gql(t, h, "userInbox", inboxAdminDocs["userInbox"], vars, cred)
	}
	q := url.Values{"archived": {fmt.Sprint(archived)}, "unread": {fmt.Sprint(unread)}}
	if first != 0 {
		q.Set("first", fmt.Sprint(first))
	}
	if after != "" {
		q.Set("after", after)
	}
	return restCall(t, h, http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(userID)+"/inbox?"+q.Encode(), nil, cred)
}

// adminInboxCounts reads userID's counts through door dn with cred.
func adminInboxCounts(t *testing.T, h *herald, dn, userID string, cred reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, "userInboxCounts", inboxAdminDocs["userInboxCounts"], map[string]any{"id": userID}, cred)
	}
	return restCall(t, h, http.MethodGet, "/api/v1/admin/users/"+url.PathEscape(userID)+"/inbox/counts", nil, cred)
}

// adminInboxArchive archives userID's item (itemID != "") or all, up to
// upTo, through door dn with cred.
func adminInboxArchive(t *testing.T, h *herald, dn, userID, itemID, upTo string, cred reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		if itemID != "" {
			return gql(t, h, "archiveUserInboxItem", inboxAdminDocs["archiveUserInboxItem"], map[string]any{"id": userID, "item": itemID}, cred)
		}
		vars := map[string]any{"id": userID}
		if upTo != "" {
			vars["upTo"] = upTo
		}
		return gql(t, h, "archiveUserInbox", inboxAdminDocs["archiveUserInbox"], vars, cred)
	}
	base := "/api/v1/admin/users/" + url.PathEscape(userID) + "/inbox/"
	if itemID != "" {
		return restCall(t, h, http.MethodPost, base+url.PathEscape(itemID)+"/archive", nil, cred)
	}
	body := map[string]any{}
	if upTo != "" {
		body["upTo"] = upTo
	}
	return restCall(t, h, http.MethodPost, base+"archive", body, cred)
}

// countsOf is an answer's counts as "unseen/unread".
func countsOf(t *testing.T, r result) string {
	t.Helper()
	return fmt.Sprintf("%d/%d", asInt(t, jsonPath(r.data, "unseen")), asInt(t, jsonPath(r.data, "unread")))
}

func TestInboxAdminE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		readKey, _ := createKey(t, h, restDoor.name, f.admin, map[string]any{"name": "support", "scopes": []string{"accounts:read"}})
		writeKey, _ := createKey(t, h, restDoor.name, f.admin, map[string]any{"name": "support-write", "scopes": []string{"accounts:write"}})
		reader, writer := withAPIKey(readKey), withAPIKey(writeKey)
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "inbox-admin-"+dn+"@example.com")
				_, otherID := newUserToken(t, h, dn, "inbox-admin-other-"+dn+"@example.com")
				for _, s := range []string{"One", "Two", "Three"} {
					expectOK(t, "send "+s, inboxSend(t, f, dn, userID, s, "product", true), http.StatusOK)
				}
				expectOK(t, "the other user's item", inboxSend(t, f, dn, otherID, "Other", "product", true), http.StatusOK)
				ids := inboxIDs(inboxList(t, h, dn, access, 0, "", false, false)) // Three, Two, One
				if len(ids) != 3 {
					t.Fatalf("the user's inbox has %d items", len(ids))
				}
				// The user reads One: the operator sees it read.
				expectOK(t, "the user reads One", inboxMark(t, h, dn, access, "read", ids[2], ""), http.StatusOK)

				// Listing: the same items and cursor as the user's door.
				p1 := adminInboxList(t, h, dn, userID, 2, "", false, false, reader)
				expectOK(t, "page 1", p1, http.StatusOK)
				end, _ := jsonPath(p1.data, "pageInfo", "endCursor").(string)
				if inboxTitles(t, p1) != "Three,Two" || jsonPath(p1.data, "pageInfo", "hasNextPage") != true || end == "" {
					t.Fatalf("page 1 %v", p1.data)
				}
				first := jsonPath(p1.data, "nodes").([]any)[0]
				if jsonPath(first, "id") != ids[0] || jsonPath(first, "body") != "Body of Three" || jsonPath(first, "category") != "product" ||
					jsonPath(first, "data", "ref") != "Three" || jsonPath(first, "seenAt") != nil || jsonPath(first, "expiresAt") == nil {
					t.Fatalf("item %v", first)
				}
				p2 := adminInboxList(t, h, dn, userID, 2, end, false, false, reader)
				expectOK(t, "page 2", p2, http.StatusOK)
				one := jsonPath(p2.data, "nodes").([]any)
				if inboxTitles(t, p2) != "One" || jsonPath(p2.data, "pageInfo", "hasNextPage") != false || jsonPath(one[0], "readAt") == nil || jsonPath(one[0], "seenAt") == nil {
					t.Fatalf("page 2 %v", p2.data)
				}
				if got := inboxTitles(t, adminInboxList(t, h, dn, userID, 0, "", false, true, reader)); got != "Three,Two" {
					t.Fatalf("unread only %s", got)
				}
				r := adminInboxCounts(t, h, dn, userID, reader)
				expectOK(t, "counts", r, http.StatusOK)
				if c := countsOf(t, r); c != "2/2" {
					t.Fatalf("counts %s, want 2 unseen, 2 unread", c)
				}
				// An admin's own session reads it too.
				expectOK(t, "an admin's session", adminInboxCounts(t, h, dn, userID, withBearer(f.admin)), http.StatusOK)

				// Refusals.
				const unknown = "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b"
				sender := withAPIKey(f.key) // notifications:send only
				expectError(t, "a key without accounts:read lists", adminInboxList(t, h, dn, userID, 0, "", false, false, sender), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "a key without accounts:read counts", adminInboxCounts(t, h, dn, userID, sender), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "the user's own token", adminInboxList(t, h, dn, userID, 0, "", false, false, withBearer(access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "a key without accounts:write archives", adminInboxArchive(t, h, dn, userID, ids[0], "", reader), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "a key without accounts:write archives all", adminInboxArchive(t, h, dn, userID, "", "", reader), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
				expectError(t, "an unknown user's inbox", adminInboxList(t, h, dn, unknown, 0, "", false, false, reader), http.StatusNotFound, "USER_NOT_FOUND")
				expectError(t, "an unknown user's counts", adminInboxCounts(t, h, dn, unknown, reader), http.StatusNotFound, "USER_NOT_FOUND")
				expectError(t, "an unknown user's item archived", adminInboxArchive(t, h, dn, unknown, ids[0], "", writer), http.StatusNotFound, "USER_NOT_FOUND")
				expectError(t, "an unknown user's inbox archived", adminInboxArchive(t, h, dn, unknown, "", "", writer), http.StatusNotFound, "USER_NOT_FOUND")
				expectError(t, "another user's item", adminInboxArchive(t, h, dn, otherID, ids[0], "", writer), http.StatusNotFound, "INBOX_ITEM_NOT_FOUND")
				expectError(t, "an unknown item", adminInboxArchive(t, h, dn, userID, unknown, "", writer), http.StatusNotFound, "INBOX_ITEM_NOT_FOUND")
				expectError(t, "a made-up cursor", adminInboxList(t, h, dn, userID, 2, "nonsense", false, false, reader), http.StatusBadRequest, "VALIDATION_ERROR")
				expectError(t, "a page of 101", adminInboxList(t, h, dn, userID, 101, "", false, false, reader), http.StatusBadRequest, "VALIDATION_ERROR")

				// Archive Three: out of the inbox, into the archive, not seen.
				r = adminInboxArchive(t, h, dn, userID, ids[0], "", writer)
				expectOK(t, "archive Three", r, http.StatusOK)
				if jsonPath(r.data, "id") != ids[0] || jsonPath(r.data, "archivedAt") == nil || jsonPath(r.data, "seenAt") != nil || jsonPath(r.data, "readAt") != nil {
					t.Fatalf("archived %v: want archivedAt set, seenAt and readAt null", r.data)
				}
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", false, false)); got != "Two,One" {
					t.Fatalf("the user's inbox after the archive: %s", got)
				}
				if c := inboxCounts(t, h, dn, access); c != "1/1" {
					t.Fatalf("the user's counts after the archive: %s", c)
				}
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", true, false)); got != "Three" {
					t.Fatalf("the user's archive: %s", got)
				}
				// A fourth item arrives; all archived up to Two leaves it.
				expectOK(t, "send Four", inboxSend(t, f, dn, userID, "Four", "product", true), http.StatusOK)
				r = adminInboxArchive(t, h, dn, userID, "", ids[1], writer)
				expectOK(t, "archive all up to Two", r, http.StatusOK)
				if c := countsOf(t, r); c != "1/1" {
					t.Fatalf("archive all up to Two answered %s, want Four's 1/1", c)
				}
				if got := inboxTitles(t, adminInboxList(t, h, dn, userID, 0, "", false, false, reader)); got != "Four" {
					t.Fatalf("the inbox after archiving up to Two: %s", got)
				}
				arch := adminInboxList(t, h, dn, userID, 0, "", true, false, reader)
				expectOK(t, "the archive", arch, http.StatusOK)
				if got := inboxTitles(t, arch); got != "Three,Two,One" {
					t.Fatalf("the archive %s", got)
				}
				for _, n := range jsonPath(arch.data, "nodes").([]any) {
					userRead := jsonPath(n, "title") == "One"
					if jsonPath(n, "archivedAt") == nil || (jsonPath(n, "seenAt") != nil) != userRead || (jsonPath(n, "readAt") != nil) != userRead {
						t.Fatalf("archived item %v: only One, which the user read, is seen and read", n)
					}
				}
				r = adminInboxArchive(t, h, dn, userID, "", "", writer)
				expectOK(t, "archive all", r, http.StatusOK)
				if c := countsOf(t, r); c != "0/0" {
					t.Fatalf("archive all answered %s", c)
				}
				if c := inboxCounts(t, h, dn, access); c != "0/0" {
					t.Fatalf("the user's counts after archiving all: %s", c)
				}
				// The other user's inbox is untouched.
				if got := inboxTitles(t, adminInboxList(t, h, dn, otherID, 0, "", false, false, reader)); got != "Other" {
					t.Fatalf("the other user's inbox: %s", got)
				}
			})
		}
	})
}
