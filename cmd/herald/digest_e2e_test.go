package main

import (
	"fmt"
	"github.com/herald-vpn/herald/internal/testsupport"
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// A category with a digest (HERALD_NOTIFICATION_DIGESTS) folds a user's
// sends on both doors: each answered digested with the digest's time, the
// phone gets nothing until the window ends, and then one notification
// saying how many; a security send passes through at once.
func TestDigestE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_NOTIFICATION_DIGESTS": "messages=1m"})
		h := f.h
		send := func(dn, subject, category string) result {
			n := notify(subject, "Hi", nil)
			if dn == graphQLDoor.name {
				return gql(t, h, "sendNotificationToUser", preferenceDocs["sendNotificationToUser"], map[string]any{"id": f.userID, "n": n, "c": category, "u": false}, withBearer(f.admin))
			}
			return restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+f.userID, map[string]any{"notification": n, "category": category}, withAPIKey(f.key))
		}
		before := time.Now().UTC()
		var due string
		for i, dn := range []string{restDoor.name, graphQLDoor.name, restDoor.name} {
			r := send(dn, fmt.Sprintf("Message %d", i+1), "messages")
			expectOK(t, "a messages send on "+dn, r, http.StatusOK)
			at, err := time.Parse(time.RFC3339, fmt.Sprint(jsonPath(r.data, "heldUntil")))
			if jsonPath(r.data, "status") != "digested" || err != nil || at.Before(before.Add(time.Minute-time.Second)) || at.After(time.Now().Add(time.Minute)) {
				t.Fatalf("a messages send on %s = %v, want digested about a minute from now", dn, r.data)
			}
			if due == "" {
				due = fmt.Sprint(jsonPath(r.data, "heldUntil"))
			} else if got := fmt.Sprint(jsonPath(r.data, "heldUntil")); got != due {
				t.Fatalf("send %d joined a digest due at %s, the first one's is %s", i+1, got, due)
			}
		}
		if got := f.fake.Delivered(f.token); got != 0 {
			t.Fatalf("the phone got %d pushes inside the window, want none", got)
		}
		r := send(restDoor.name, "New sign-in", "security")
		if jsonPath(r.data, "status") != "sent" || f.fake.Delivered(f.token) != 1 {
			t.Fatalf("a security send = %v (the phone got %d), want sent at once", r.data, f.fake.Delivered(f.token))
		}
		// The window ends (a minute of real time: River holds the job).
		testsupport.Eventually(t, 2*time.Minute, func() bool { return f.fake.Delivered(f.token) == 2 }, "the digest never reached the phone (due %s)", due)
		msgs := f.fake.MessagesFor(f.token)
		if last := msgs[len(msgs)-1]; last.Title != "3 new notifications" || last.Body != "Message 3\nMessage 2\nMessage 1" || last.Data["digest"] != "3" {
			t.Fatalf("the digest = %q / %q / %v", last.Title, last.Body, last.Data)
		}
	})
}
