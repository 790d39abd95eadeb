package main

// The in-app inbox (issue 26) end to end: sends that keep items, the
// listing and its pages, the counts, the marks on one item and on all,
// another user's item refused, a broadcast's items, expiry, and live
// events over graphql-ws and SSE from another replica.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const inboxItemFields = `id title body data category createdAt seenAt readAt archivedAt expiresAt`

var inboxDocs = map[string]string{
	"myInbox": `query ($first: Int, $after: String, $archived: Boolean, $unread: Boolean) {
  myInbox(first: $first, after: $after, archived: $archived, unreadOnly: $unread) { nodes { ` + inboxItemFields + ` } pageInfo { endCursor hasNextPage } } }`,
	"myInboxCounts": `query { myInboxCounts { unseen unread } }`,
	"markInboxItem": `mutation ($id: ID!, $mark: InboxMark!) { markInboxItem(id: $id, mark: $mark) { ` + inboxItemFields + ` } }`,
	"markAllInbox":  `mutation ($mark: InboxMark!, $upTo: ID) { markAllInbox(mark: $mark, upTo: $upTo) { unseen unread } }`,
	"sendNotificationToUser": `mutation ($id: ID!, $n: NotificationInput!, $c: String, $inbox: Boolean) {
  sendNotificationToUser(userId: $id, notification: $n, category: $c, inbox: $inbox) { userId status message skipped { optedOut } outcomes { deviceId platform channel status } } }`,
	"sendNotificationToAll": `mutation ($n: NotificationInput!, $c: String, $inbox: Boolean) { sendNotificationToAll(notification: $n, category: $c, inbox: $inbox) { jobId status totalRecipients } }`,
}

const inboxChangedDoc = `subscription { inboxChanged { unseen unread item { id title body category data } } }`

// inboxList lists the caller's inbox through door dn.
func inboxList(t *testing.T, h *herald, dn, token string, first int, after string, archived, unread bool) result {
	t.Helper()
	if dn == graphQLDoor.name {
		vars := map[string]any{"archived": archived, "unread": unread}
		if first > 0 {
			vars["first"] = first
		}
		if after != "" {
			vars["after"] = after
		}
		return gql(t, h, "myInbox", inboxDocs["myInbox"], vars, withBearer(token))
	}
	q := fmt.Sprintf("?archived=%v&unread=%v", archived, unread)
	if first > 0 {
		q += fmt.Sprintf("&first=%d", first)
	}
	if after != "" {
		q += "&after=" + after
	}
	return restCall(t, h, http.MethodGet, "/api/v1/users/me/inbox"+q, nil, withBearer(token))
}

// inboxTitles are the titles of a listing's nodes, in order.
func inboxTitles(t *testing.T, r result) string {
	t.Helper()
	nodes, ok := jsonPath(r.data, "nodes").([]any)
	if !ok {
		t.Fatalf("a listing without nodes: %v", r.data)
	}
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprint(jsonPath(n, "title")))
	}
	return strings.Join(out, ",")
}

func inboxIDs(r result) []string {
	nodes, _ := jsonPath(r.data, "nodes").([]any)
	var out []string
	for _, n := range nodes {
		out = append(out, fmt.Sprint(jsonPath(n, "id")))
	}
	return out
}

// inboxCounts reads the caller's counts through door dn as "unseen/unread".
func inboxCounts(t *testing.T, h *herald, dn, token string) string {
	t.Helper()
	var r result
	if dn == graphQLDoor.name {
		r = gql(t, h, "myInboxCounts", inboxDocs["myInboxCounts"], nil, withBearer(token))
	} else {
		r = restCall(t, h, http.MethodGet, "/api/v1/users/me/inbox/counts", nil, withBearer(token))
	}
	expectOK(t, "counts", r, http.StatusOK)
	return fmt.Sprintf("%d/%d", asInt(t, jsonPath(r.data, "unseen")), asInt(t, jsonPath(r.data, "unread")))
}

// markPaths are the REST path words of the marks.
var markPaths = map[string]string{"seen": "seen", "read": "read", "archived": "archive"}

// inboxMark marks one item (id != "") or all (up to upTo) through door dn.
func inboxMark(t *testing.T, h *herald, dn, token, mark, id, upTo string) result {
	t.Helper()
	if dn == graphQLDoor.name {
		if id != "" {
			return gql(t, h, "markInboxItem", inboxDocs["markInboxItem"], map[string]any{"id": id, "mark": mark}, withBearer(token))
		}
		vars := map[string]any{"mark": mark}
		if upTo != "" {
			vars["upTo"] = upTo
		}
		return gql(t, h, "markAllInbox", inboxDocs["markAllInbox"], vars, withBearer(token))
	}
	if id != "" {
		return restCall(t, h, http.MethodPost, "/api/v1/users/me/inbox/"+id+"/"+markPaths[mark], nil, withBearer(token))
	}
	body := map[string]any{}
	if upTo != "" {
		body["upTo"] = upTo
	}
	return restCall(t, h, http.MethodPost, "/api/v1/users/me/inbox/"+markPaths[mark], body, withBearer(token))
}

// inboxSend sends to userID with inbox through door dn, as an operator.
func inboxSend(t *testing.T, f *sendsFixture, dn, userID, subject, category string, inbox bool) result {
	t.Helper()
	n := notify(subject, "Body of "+subject, map[string]any{"ref": subject})
	if dn == graphQLDoor.name {
		return gql(t, f.h, "sendNotificationToUser", inboxDocs["sendNotificationToUser"], map[string]any{"id": userID, "n": n, "c": category, "inbox": inbox}, withBearer(f.admin))
	}
	return restCall(t, f.h, http.MethodPost, "/api/v1/notifications/users/"+userID, map[string]any{"notification": n, "category": category, "inbox": inbox}, withAPIKey(f.key))
}

func TestInboxE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				// A user with no device at all.
				access, userID := newUserToken(t, h, dn, "inbox-"+dn+"@example.com")
				other, _ := newUserToken(t, h, dn, "inbox-other-"+dn+"@example.com")
				if c := inboxCounts(t, h, dn, access); c != "0/0" {
					t.Fatalf("counts of an empty inbox %s", c)
				}
				// A send without inbox keeps nothing, and reaches no one.
				r := inboxSend(t, f, dn, userID, "Nothing", "service", false)
				expectOK(t, "a send without inbox", r, http.StatusOK)
				if jsonPath(r.data, "status") != "no_recipients" {
					t.Fatalf("a send without inbox to a user without a device: %v", r.data)
				}
				// Three sends with inbox: each is "sent", its one outcome the inbox.
				for _, s := range []string{"One", "Two", "Three"} {
					r := inboxSend(t, f, dn, userID, s, "product", true)
					expectOK(t, "send "+s, r, http.StatusOK)
					outcomes, _ := jsonPath(r.data, "outcomes").([]any)
					if jsonPath(r.data, "status") != "sent" || jsonPath(r.data, "message") != "Kept in the user's inbox; no other recipient on the channels asked." || len(outcomes) != 1 || jsonPath(outcomes[0], "channel") != "inbox" ||
						jsonPath(outcomes[0], "platform") != "inbox" || jsonPath(outcomes[0], "status") != "sent" {
						t.Fatalf("send %s with inbox to a user without a device: %v", s, r.data)
					}
				}
				r = inboxList(t, h, dn, access, 0, "", false, false)
				expectOK(t, "list", r, http.StatusOK)
				if got := inboxTitles(t, r); got != "Three,Two,One" {
					t.Fatalf("inbox %s, want the newest first", got)
				}
				first := jsonPath(r.data, "nodes").([]any)[0]
				if jsonPath(first, "body") != "Body of Three" || jsonPath(first, "category") != "product" || jsonPath(first, "data", "ref") != "Three" ||
					jsonPath(first, "seenAt") != nil || jsonPath(first, "readAt") != nil || jsonPath(first, "archivedAt") != nil || jsonPath(first, "expiresAt") == nil {
					t.Fatalf("item %v", first)
				}
				ids := inboxIDs(r) // Three, Two, One
				if c := inboxCounts(t, h, dn, access); c != "3/3" {
					t.Fatalf("counts %s, want 3 unseen, 3 unread", c)
				}
				// Pages of two.
				p1 := inboxList(t, h, dn, access, 2, "", false, false)
				expectOK(t, "page 1", p1, http.StatusOK)
				end, _ := jsonPath(p1.data, "pageInfo", "endCursor").(string)
				if inboxTitles(t, p1) != "Three,Two" || jsonPath(p1.data, "pageInfo", "hasNextPage") != true || end == "" {
					t.Fatalf("page 1 %v", p1.data)
				}
				p2 := inboxList(t, h, dn, access, 2, end, false, false)
				expectOK(t, "page 2", p2, http.StatusOK)
				if inboxTitles(t, p2) != "One" || jsonPath(p2.data, "pageInfo", "hasNextPage") != false {
					t.Fatalf("page 2 %v", p2.data)
				}
				expectError(t, "a page of 101", inboxList(t, h, dn, access, 101, "", false, false), http.StatusBadRequest, "VALIDATION_ERROR")
				expectError(t, "a made-up cursor", inboxList(t, h, dn, access, 2, "nonsense", false, false), http.StatusBadRequest, "VALIDATION_ERROR")

				// Marks on one item.
				r = inboxMark(t, h, dn, access, "seen", ids[2], "")
				expectOK(t, "mark One seen", r, http.StatusOK)
				if jsonPath(r.data, "seenAt") == nil || jsonPath(r.data, "readAt") != nil || jsonPath(r.data, "title") != "One" {
					t.Fatalf("seen: %v", r.data)
				}
				if c := inboxCounts(t, h, dn, access); c != "2/3" {
					t.Fatalf("counts after one seen %s", c)
				}
				r = inboxMark(t, h, dn, access, "read", ids[1], "")
				expectOK(t, "mark Two read", r, http.StatusOK)
				if jsonPath(r.data, "seenAt") == nil || jsonPath(r.data, "readAt") == nil {
					t.Fatalf("read: %v", r.data)
				}
				if c := inboxCounts(t, h, dn, access); c != "1/2" {
					t.Fatalf("counts after one read %s", c)
				}
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", false, true)); got != "Three,One" {
					t.Fatalf("unread only %s", got)
				}
				// Another user's item, an unknown id and a bad mark are refused.
				expectError(t, "another user's item", inboxMark(t, h, dn, other, "read", ids[0], ""), http.StatusNotFound, "INBOX_ITEM_NOT_FOUND")
				expectError(t, "an unknown item", inboxMark(t, h, dn, access, "read", "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", ""), http.StatusNotFound, "INBOX_ITEM_NOT_FOUND")
				if dn == graphQLDoor.name {
					// mark is the enum InboxMark: a value that is none is
					// refused before execution, as is a string literal;
					// the enum literal is what a document writes.
					expectError(t, "a mark that is none", inboxMark(t, h, dn, access, "liked", ids[0], ""), http.StatusUnprocessableEntity, "GRAPHQL_VALIDATION_FAILED")
					expectError(t, "a mark as a string literal", gql(t, h, "markInboxItem", `mutation ($id: ID!) { markInboxItem(id: $id, mark: "seen") { id } }`, map[string]any{"id": ids[0]}, withBearer(access)),
						http.StatusUnprocessableEntity, "GRAPHQL_VALIDATION_FAILED")
					r := gql(t, h, "markInboxItem", `mutation ($id: ID!) { markInboxItem(id: $id, mark: seen) { title seenAt readAt } }`, map[string]any{"id": ids[2]}, withBearer(access))
					expectOK(t, "One marked seen with the enum literal", r, http.StatusOK)
					if jsonPath(r.data, "title") != "One" || jsonPath(r.data, "seenAt") == nil || jsonPath(r.data, "readAt") != nil {
						t.Fatalf("One marked seen with the enum literal: %v", r.data)
					}
				}
				if c := inboxCounts(t, h, dn, other); c != "0/0" {
					t.Fatalf("the other user's counts %s", c)
				}
				// All seen up to Two: Three stays unseen; then all read.
				r = inboxMark(t, h, dn, access, "seen", "", ids[1])
				expectOK(t, "all seen up to Two", r, http.StatusOK)
				if got := fmt.Sprintf("%d/%d", asInt(t, jsonPath(r.data, "unseen")), asInt(t, jsonPath(r.data, "unread"))); got != "1/2" {
					t.Fatalf("all seen up to Two answered %s", got)
				}
				r = inboxMark(t, h, dn, access, "read", "", "")
				expectOK(t, "all read", r, http.StatusOK)
				if c := inboxCounts(t, h, dn, access); c != "0/0" {
					t.Fatalf("counts after all read %s", c)
				}
				// Archived: out of the inbox, in the archive; then all.
				expectOK(t, "archive One", inboxMark(t, h, dn, access, "archived", ids[2], ""), http.StatusOK)
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", false, false)); got != "Three,Two" {
					t.Fatalf("inbox after archiving One: %s", got)
				}
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", true, false)); got != "One" {
					t.Fatalf("archive %s", got)
				}
				expectOK(t, "archive all", inboxMark(t, h, dn, access, "archived", "", ""), http.StatusOK)
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", false, false)); got != "" {
					t.Fatalf("inbox after archiving all: %s", got)
				}

				// The user turns product off on the inbox: nothing kept, counted.
				expectOK(t, "inbox off", preferencesOp(t, h, dn, "updateMyNotificationPreferences", "", []map[string]any{setting("product", "inbox", false)}, access), http.StatusOK)
				r = inboxSend(t, f, dn, userID, "Muted", "product", true)
				expectOK(t, "a send to a muted inbox", r, http.StatusOK)
				if jsonPath(r.data, "status") != "no_recipients" || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 1 {
					t.Fatalf("a product send with inbox to a user who turned it off: %v", r.data)
				}
				// A critical category cannot be turned off: kept.
				expectOK(t, "a security send", inboxSend(t, f, dn, userID, "Alert", "security", true), http.StatusOK)
				if got := inboxTitles(t, inboxList(t, h, dn, access, 0, "", false, false)); got != "Alert" {
					t.Fatalf("inbox after the muted and the security send: %s", got)
				}
			})
		}

		// A broadcast with inbox: one item per account in its audience, none
		// for an account that turned the category off on the inbox, none for
		// one without a device (not in the audience).
		withPhone := func(email, token string) (string, string) {
			access, id := newUserToken(t, h, restDoor.name, email)
			mustRegister(t, h, restDoor.name, access, "android", token, "")
			return access, id
		}
		a1, _ := withPhone("b1@example.com", "b1-phone")
		a2, _ := withPhone("b2@example.com", "b2-phone")
		expectOK(t, "inbox off", preferencesOp(t, h, restDoor.name, "updateMyNotificationPreferences", "", []map[string]any{setting("messages", "inbox", false)}, a2), http.StatusOK)
		a3, _ := newUserToken(t, h, restDoor.name, "b3@example.com")
		for i, dn := range doorNames {
			subject := "Broadcast " + dn
			var b result
			if dn == graphQLDoor.name {
				b = gql(t, h, "sendNotificationToAll", inboxDocs["sendNotificationToAll"], map[string]any{"n": notify(subject, "To all", nil), "c": "messages", "inbox": true}, withBearer(f.admin))
			} else {
				b = restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify(subject, "To all", nil), "category": "messages", "inbox": true}, withAPIKey(f.key))
			}
			expectOK(t, "a broadcast with inbox", b, map[string]int{"rest": http.StatusAccepted, "graphql": http.StatusOK}[dn])
			jobID, _ := jsonPath(b.data, "jobId").(string)
			job := completedJob(t, h, jobID, withAPIKey(f.key))
			// b1 and the fixture's reader; b2 turned messages off on the inbox.
			if jsonPath(job, "inbox") != true || asInt(t, jsonPath(job, "inboxItems")) != 2 {
				t.Fatalf("job %v, want inbox true and 2 inbox items", job)
			}
			for _, c := range []struct {
				who, token string
				want       int
			}{{"b1", a1, i + 1}, {"b2 (inbox off)", a2, 0}, {"b3 (no device)", a3, 0}, {"the fixture's reader", f.access, i + 1}} {
				r := inboxList(t, h, restDoor.name, c.token, 0, "", false, false)
				expectOK(t, "list "+c.who, r, http.StatusOK)
				if n := len(inboxIDs(r)); n != c.want {
					t.Fatalf("%s has %d items after %d broadcasts, want %d: %s", c.who, n, i+1, c.want, inboxTitles(t, r))
				}
				if c.want > 0 && !strings.HasPrefix(inboxTitles(t, r), subject) {
					t.Fatalf("%s: newest item %s, want %s", c.who, inboxTitles(t, r), subject)
				}
			}
		}
	})
}

// Items expire after HERALD_INBOX_RETENTION: no longer listed, counted or
// marked.
func TestInboxExpiryE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_INBOX_RETENTION": "2s"})
		expectOK(t, "send", inboxSend(t, f, restDoor.name, f.userID, "Soon gone", "service", true), http.StatusOK)
		r := inboxList(t, f.h, restDoor.name, f.access, 0, "", false, false)
		expectOK(t, "list", r, http.StatusOK)
		ids := inboxIDs(r)
		if len(ids) != 1 {
			t.Fatalf("before expiry: %s", inboxTitles(t, r))
		}
		eventually(t, func() bool {
			return len(inboxIDs(inboxList(t, f.h, restDoor.name, f.access, 0, "", false, false))) == 0
		}, "the item was still listed after its retention of 2s")
		if c := inboxCounts(t, f.h, restDoor.name, f.access); c != "0/0" {
			t.Fatalf("an expired item counted: %s", c)
		}
		expectError(t, "an expired item", inboxMark(t, f.h, restDoor.name, f.access, "read", ids[0], ""), http.StatusNotFound, "INBOX_ITEM_NOT_FOUND")
	})
}

// nextEvent is the stream's next event; the end of the stream fails.
func (s *sseStream) nextEvent(what string) sseEvent {
	s.t.Helper()
	e, ok := s.next()
	if !ok {
		s.t.Fatalf("%s: the stream ended", what)
	}
	return e
}

// nextInbox is the next inboxChanged result of subscription id.
func (w *wsClient) nextInbox(id, what string) map[string]any {
	w.t.Helper()
	m := w.next()
	if m.code != 0 || m.Type != "next" || m.ID != id {
		w.t.Fatalf("%s: %+v %s", what, m, m.Payload)
	}
	var p struct {
		Data   map[string]map[string]any `json:"data"`
		Errors []any                     `json:"errors"`
	}
	if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Errors) > 0 {
		w.t.Fatalf("%s: %s %v", what, m.Payload, err)
	}
	return p.Data["inboxChanged"]
}

// inboxUntil reads inboxChanged results of subscription id until want
// holds, at most five: a replica whose listener (re)connects sends the
// counts read again first, without an item (the live broker's resync).
// Any item on the way must be want's.
func (w *wsClient) inboxUntil(id, what string, want func(map[string]any) bool) map[string]any {
	w.t.Helper()
	for range 5 {
		e := w.nextInbox(id, what)
		if want(e) {
			return e
		}
		if e["item"] != nil {
			w.t.Fatalf("%s: an item not expected: %v", what, e)
		}
	}
	w.t.Fatalf("%s: five events, none the one expected", what)
	return nil
}

// settle reads inboxChanged results of subscription id until want holds,
// whatever comes before (at most five).
func (w *wsClient) settle(id, what string, want func(map[string]any) bool) {
	w.t.Helper()
	for range 5 {
		if want(w.nextInbox(id, what)) {
			return
		}
	}
	w.t.Fatalf("%s: five events, none the one expected", what)
}

// settle is wsClient.settle over SSE.
func (s *sseStream) settle(what string, want func(map[string]any) bool) {
	s.t.Helper()
	for range 5 {
		if want(s.nextEvent(what).data) {
			return
		}
	}
	s.t.Fatalf("%s: five events, none the one expected", what)
}

// inboxUntil is wsClient.inboxUntil over SSE.
func (s *sseStream) inboxUntil(what string, want func(map[string]any) bool) map[string]any {
	s.t.Helper()
	for range 5 {
		e := s.nextEvent(what)
		if e.event != "inbox" {
			s.t.Fatalf("%s: event %+v", what, e)
		}
		if want(e.data) {
			return e.data
		}
		if e.data["item"] != nil {
			s.t.Fatalf("%s: an item not expected: %v", what, e.data)
		}
	}
	s.t.Fatalf("%s: five events, none the one expected", what)
	return nil
}

// counts is an inbox event's counts as "unseen/unread".
func eventCounts(t testing.TB, e map[string]any) string {
	t.Helper()
	return fmt.Sprintf("%d/%d", asInt(t, e["unseen"]), asInt(t, e["unread"]))
}

// A user follows the inbox on one server, over graphql-ws and SSE, while
// another server, sharing the PostgreSQL database, keeps items and marks
// them: every change arrives, only the user's own. On SQLite, one server
// alone (it has no other replica).
func TestInboxLiveFromAnotherServer(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) { testInboxLive(t, d) })
}

func testInboxLive(t *testing.T, d sqlstoretest.Dialect) {
	f := newSendsFixture(t, d, map[string]string{"HERALD_SSE_HEARTBEAT": "200ms"})
	sender := f.h
	// The fixture's reader has a phone; another user's events must not
	// reach it. (Signed up before the second server starts: its code
	// email could be sent by either, each with its own SMTP server.)
	access := f.access
	_, otherID := newUserToken(t, sender, restDoor.name, "live-other@example.com")
	watcher := sender
	if d == "postgres" {
		watcher = startHerald(t, d, pushEnv(t, f.fake, f.fake.URL, map[string]string{"HERALD_DATABASE_URL": sender.DBURL, "HERALD_PUSH_RATE": "0",
			"HERALD_SSE_HEARTBEAT": "200ms"}))
	}

	ws := dialWS(t, watcher, "graphql-transport-ws")
	ws.init(map[string]any{"token": access})
	ws.subscribe("i", inboxChangedDoc, nil)
	if e := ws.nextInbox("i", "the first event"); eventCounts(t, e) != "0/0" || e["item"] != nil {
		t.Fatalf("first event %v, want the counts alone", e)
	}
	sse := openSSE(t, watcher, "/api/v1/users/me/inbox/events", withBearer(access))
	if e := sse.nextEvent("the first SSE event"); e.event != "inbox" || eventCounts(t, e.data) != "0/0" {
		t.Fatalf("first SSE event %+v", e)
	}

	counts := func(want string) func(map[string]any) bool {
		return func(e map[string]any) bool { return eventCounts(t, e) == want }
	}
	// A warm-up: the watcher's listener may connect after the first
	// NOTIFY (it then reads the counts again, but an item published
	// before it is not sent). Any event after the first shows it is
	// listening: a probe item, then the probe archived.
	expectOK(t, "probe", inboxSend(t, f, restDoor.name, f.userID, "Probe", "service", true), http.StatusOK)
	ws.settle("i", "the probe", counts("1/1"))
	sse.settle("the probe over SSE", counts("1/1"))
	probe := inboxList(t, sender, restDoor.name, access, 0, "", false, false)
	expectOK(t, "archive the probe", inboxMark(t, sender, restDoor.name, access, "archived", inboxIDs(probe)[0], ""), http.StatusOK)
	ws.settle("i", "the probe archived", counts("0/0"))
	sse.settle("the probe archived over SSE", counts("0/0"))

	// Another user's item: nothing for this subscriber. Then the user's own.
	expectOK(t, "send to another", inboxSend(t, f, restDoor.name, otherID, "Not yours", "service", true), http.StatusOK)
	expectOK(t, "send", inboxSend(t, f, restDoor.name, f.userID, "Live", "service", true), http.StatusOK)
	hasItem := func(e map[string]any) bool { return e["item"] != nil }
	e := ws.inboxUntil("i", "the new item", hasItem)
	if eventCounts(t, e) != "1/1" || jsonPath(e, "item", "title") != "Live" || jsonPath(e, "item", "body") != "Body of Live" || jsonPath(e, "item", "data", "ref") != "Live" {
		t.Fatalf("graphql-ws event for the new item %v (another user's item must not come)", e)
	}
	se := sse.inboxUntil("the new item over SSE", hasItem)
	if eventCounts(t, se) != "1/1" || jsonPath(se, "item", "title") != "Live" {
		t.Fatalf("SSE event for the new item %v", se)
	}
	itemID := fmt.Sprint(jsonPath(e, "item", "id"))

	// Marked read on the sending server: the counts change on the watcher.
	expectOK(t, "read", inboxMark(t, sender, restDoor.name, access, "read", itemID, ""), http.StatusOK)
	ws.inboxUntil("i", "after read", counts("0/0"))
	sse.inboxUntil("after read over SSE", counts("0/0"))

	// A broadcast with inbox: the counts are read again. Its job runs on
	// either server (they share River's queue); the send and the mark
	// above are the ones that surely came from the other.
	b := restCall(t, sender, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("To all", "live", nil), "inbox": true}, withAPIKey(f.key))
	expectOK(t, "broadcast", b, http.StatusAccepted)
	ws.inboxUntil("i", "after the broadcast", counts("1/1"))
	sse.inboxUntil("after the broadcast over SSE", counts("1/1"))
	// The stream is the credential's: signing out on the other server
	// ends it within a heartbeat, with an error event.
	expectOK(t, "logout", call(t, sender, restDoor.name, opLogout, nil, withBearer(access)), http.StatusOK)
	if last := sse.expectEnd("the stream after logout"); last.event != "error" || last.data["code"] == nil {
		t.Fatalf("last event %+v, want an error event", last)
	}
	// No credential, or an API key (the inbox is a signed-in user's), is refused.
	status, hdr, raw := watcher.do(t, http.MethodGet, "/api/v1/users/me/inbox/events", nil)
	if env := restEnvelope(t, "no credential", hdr, raw); status != http.StatusUnauthorized || jsonPath(env, "error", "code") != "AUTH_REQUIRED" {
		t.Fatalf("no credential: %d %s", status, raw)
	}
	status, hdr, raw = watcher.do(t, http.MethodGet, "/api/v1/users/me/inbox/events", nil, withAPIKey(f.key))
	if env := restEnvelope(t, "an API key", hdr, raw); status != http.StatusForbidden || jsonPath(env, "error", "code") != "INSUFFICIENT_PERMISSIONS" {
		t.Fatalf("an API key: %d %s", status, raw)
	}
}
