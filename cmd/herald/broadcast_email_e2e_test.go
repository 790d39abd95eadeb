package main

// Email as a broadcast channel (issue 26) end to end, on both databases
// and both doors: a product broadcast on push and email to an audience of
// a user with one phone, a user with two, a guest, an unverified account
// and a user who turned product email off. Each account with a verified
// real address gets one email (the fake SMTP server, with the
// List-Unsubscribe headers), however many phones it has; the guest and
// the unverified account are counted in email.noEmailAddress, the
// opted-out user in email.optedOut (and still pushed); the one-click
// link of the first broadcast's email turns product email off, so the
// second broadcast skips that user; a walk resumed after the job looked
// finished queues no second email; an unknown channel is INVALID_INPUT.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	emailBroadcastDoc = `mutation ($n: NotificationInput!, $ch: [String!]) {
  sendNotificationToAll(notification: $n, category: "product", channels: $ch) { jobId status totalRecipients } }`
	emailJobDoc = `query ($id: ID!) { notificationJob(id: $id) { status totalRecipients sent channels skipped { optedOut capped } email { queued optedOut capped noEmailAddress } } }`
)

// broadcastEmailJobs answers the account ids of the notification_email
// jobs broadcast jobID queued, read from the server's database.
func broadcastEmailJobs(t *testing.T, h *herald, d sqlstoretest.Dialect, jobID string) []string {
	t.Helper()
	db := h.store(t)
	var args []string
	if d == "postgres" {
		rows, err := db.Pool().Query(context.Background(), `SELECT args::text FROM river_job WHERE kind = 'notification_email' AND args->>'broadcast_id' = $1 ORDER BY id`, jobID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			args = append(args, s)
		}
	} else {
		rows, err := db.SQL().QueryContext(context.Background(), `SELECT json(args) FROM river_job WHERE kind = 'notification_email' AND json_extract(args, '$.broadcast_id') = ? ORDER BY id`, jobID)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = rows.Close() }()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			args = append(args, s)
		}
	}
	var ids []string
	for _, a := range args {
		var e struct {
			AccountID string `json:"account_id"`
		}
		if err := json.Unmarshal([]byte(a), &e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.AccountID)
	}
	return ids
}

// execSQL runs a statement without parameters on the server's database.
func execSQL(t *testing.T, h *herald, d sqlstoretest.Dialect, q string) {
	t.Helper()
	db := h.store(t)
	var err error
	if d == "postgres" {
		_, err = db.Pool().Exec(context.Background(), q)
	} else {
		_, err = db.SQL().ExecContext(context.Background(), q)
	}
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func TestBroadcastEmailE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_PUBLIC_URL": emailPublicURL, "HERALD_PUSH_LEASE_TTL": "2s"})
		h := f.h
		const (
			twoPhones = "two-phones@example.com"
			optedOut  = "no-product-email@example.com"
			notYet    = "not-verified@example.com"
		)
		twoAccess, twoID := newUserToken(t, h, restDoor.name, twoPhones)
		mustRegister(t, h, restDoor.name, twoAccess, "android", "two-1", "")
		mustRegister(t, h, graphQLDoor.name, twoAccess, "android", "two-2", "")
		outAccess, _ := newUserToken(t, h, restDoor.name, optedOut)
		mustRegister(t, h, restDoor.name, outAccess, "android", "out-1", "")
		expectOK(t, "turn product email off", preferencesOp(t, h, restDoor.name, "updateMyNotificationPreferences", "", []map[string]any{setting("product", "email", false)}, outAccess), http.StatusOK)
		notYetAccess, notYetID := newUserToken(t, h, graphQLDoor.name, notYet)
		mustRegister(t, h, graphQLDoor.name, notYetAccess, "android", "not-yet-1", "")
		execSQL(t, h, d, `UPDATE accounts SET email_verified_at = NULL WHERE id = '`+notYetID+`'`) // an address not verified
		guest := guestSignIn(t, h, restDoor.name, "install-broadcast-email", true)
		_, guestClaims := jwtParts(t, guest.access)
		guestID := guestClaims["sub"].(string)
		mustRegister(t, h, restDoor.name, guest.access, "android", "guest-1", "")
		placeholder := placeholderOf(t, h, guestID)

		before := map[string]int{}
		for _, a := range []string{"reader@example.com", twoPhones, optedOut, notYet, placeholder} {
			before[a] = h.SMTP.Count(a)
		}

		// An unknown channel is the user send's INVALID_INPUT, on both doors.
		for _, dn := range doorNames {
			var r result
			if dn == graphQLDoor.name {
				r = gql(t, h, "sendNotificationToAll", emailBroadcastDoc, map[string]any{"n": notify("x", "y", nil), "ch": []string{"email", "telegram"}}, withBearer(f.admin))
			} else {
				r = restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("x", "y", nil), "channels": []string{"sms"}}, withAPIKey(f.key))
			}
			expectError(t, dn+": an unknown channel", r, http.StatusBadRequest, "INVALID_INPUT")
			if r.details["field"] != "channels" {
				t.Fatalf("%s: an unknown channel: details %v, want field channels", dn, r.details)
			}
		}

		var lastJob string
		for i, dn := range doorNames {
			subject := "Winter sale " + dn
			n := notify(subject, "Half price", nil)
			var b result
			if dn == graphQLDoor.name {
				b = gql(t, h, "sendNotificationToAll", emailBroadcastDoc, map[string]any{"n": n, "ch": []string{"push", "email"}}, withBearer(f.admin))
			} else {
				b = restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "category": "product", "channels": []string{"email", "push"}}, withAPIKey(f.key))
			}
			expectOK(t, dn+": a broadcast on push and email", b, map[string]int{"rest": http.StatusAccepted, "graphql": http.StatusOK}[dn])
			jobID := jsonPath(b.data, "jobId").(string)
			lastJob = jobID
			completedJob(t, h, jobID, withAPIKey(f.key))
			var job map[string]any
			if dn == graphQLDoor.name {
				g := gql(t, h, "notificationJob", emailJobDoc, map[string]any{"id": jobID}, withBearer(f.admin))
				expectOK(t, "read the job", g, http.StatusOK)
				job = g.data.(map[string]any)
			} else {
				r := restCall(t, h, http.MethodGet, "/api/v1/notifications/broadcasts/"+jobID, nil, withAPIKey(f.key))
				expectOK(t, "read the job", r, http.StatusOK)
				job = r.data.(map[string]any)
			}
			// Six phones: the reader's, two, the opted-out user's (push is
			// still on), the unverified account's and the guest's. Emails:
			// the reader and the two-phone user; the second broadcast
			// only the reader (the other unsubscribed by the first's link).
			emailed, opted := 2, 1
			if i == 1 {
				emailed, opted = 1, 2
			}
			chans, _ := job["channels"].([]any)
			if job["status"] != "completed" || asInt(t, job["totalRecipients"]) != 6 || asInt(t, job["sent"]) != 6 || len(chans) != 2 || chans[0] != "push" || chans[1] != "email" ||
				asInt(t, jsonPath(job, "email", "queued")) != emailed || asInt(t, jsonPath(job, "email", "noEmailAddress")) != 2 ||
				asInt(t, jsonPath(job, "email", "optedOut")) != opted || asInt(t, jsonPath(job, "email", "capped")) != 0 ||
				asInt(t, jsonPath(job, "skipped", "optedOut")) != 0 || asInt(t, jsonPath(job, "skipped", "capped")) != 0 {
				t.Fatalf("%s: job %v; want completed, 6 sent of 6, channels [push email], email queued %d, noEmailAddress 2 (guest, unverified), optedOut %d, no device skipped", dn, job, emailed, opted)
			}
			want := []string{f.userID, twoID}
			if i == 1 {
				want = []string{f.userID}
			}
			if got := broadcastEmailJobs(t, h, d, jobID); !sameSet(got, want) {
				t.Fatalf("%s: email jobs for %v, want one each for %v", dn, got, want)
			}
			// The reader's email arrives with the headers.
			m := h.SMTP.WaitForMessages(t, "reader@example.com", before["reader@example.com"]+i+1, mailWait)[before["reader@example.com"]+i]
			if m.Subject != subject || !strings.Contains(m.Text, "Half price") || m.Header.Get("List-Unsubscribe-Post") != "List-Unsubscribe=One-Click" ||
				!strings.HasPrefix(m.Header.Get("List-Unsubscribe"), "<"+emailPublicURL+"/api/v1/notifications/unsubscribe?token=") {
				t.Fatalf("%s: the reader's email: %q, headers %v", dn, m.Subject, m.Header)
			}
			if i == 0 {
				// The two-phone user gets one email, and unsubscribes
				// with its one-click link.
				m := h.SMTP.WaitForMessages(t, twoPhones, before[twoPhones]+1, mailWait)[before[twoPhones]]
				link := unsubscribeLink.FindString(m.Text)
				if m.Subject != subject || link == "" || m.Header.Get("List-Unsubscribe") != "<"+link+">" {
					t.Fatalf("the two-phone user's email: %q, List-Unsubscribe %q, link %q", m.Subject, m.Header.Get("List-Unsubscribe"), link)
				}
				r := oneClick(t, h, link)
				expectOK(t, "one-click unsubscribe from the broadcast's email", r, http.StatusOK)
				if jsonPath(r.data, "category") != "product" || jsonPath(r.data, "channel") != "email" || jsonPath(r.data, "enabled") != false {
					t.Fatalf("one-click unsubscribe = %v", r.data)
				}
			}
		}

		// The last job's walk is taken up again as after a crash (running,
		// its lease gone, the email walk not marked done): the run that
		// takes it over finds every account behind the cursor and queues
		// no second email.
		execSQL(t, h, d, `UPDATE notification_jobs SET status = 'running', finished_at = NULL, email_done = FALSE, lease_owner = NULL, lease_until = NULL, requeued_at = NULL WHERE id = '`+lastJob+`'`)
		job := completedJob(t, h, lastJob, withAPIKey(f.key))
		if asInt(t, jsonPath(job, "email", "queued")) != 1 || asInt(t, job["sent"]) != 6 {
			t.Fatalf("the resumed job %v; want email.queued 1 and sent 6 still", job)
		}
		if got := broadcastEmailJobs(t, h, d, lastJob); len(got) != 1 || got[0] != f.userID {
			t.Fatalf("the resumed job's email jobs %v, want the reader's alone", got)
		}

		// Exactly the emails counted reached the SMTP server: one per
		// broadcast per eligible account, none to the others. The reader's
		// last is the last queued; the jobs above are all there are.
		h.SMTP.WaitForMessages(t, twoPhones, before[twoPhones]+1, mailWait)
		for a, want := range map[string]int{"reader@example.com": 2, twoPhones: 1, optedOut: 0, notYet: 0, placeholder: 0} {
			if got := h.SMTP.Count(a) - before[a]; got != want {
				t.Errorf("%s got %d broadcast emails, want %d", a, got, want)
			}
		}
	})
}

// sameSet reports whether a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		if seen[s] != 1 {
			return false
		}
		seen[s]--
	}
	return true
}
