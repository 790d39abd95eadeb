package main

// Per-user, per-category caps (issue 26) end to end: with product capped
// at 3 a day, a user's 4th product send is skipped and counted on both
// doors while a security send passes, on both databases; a broadcast
// counts once against each user it reaches and skips the devices of users
// at the cap; a cap on a critical category is refused by `herald check`.

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

func TestNotificationCapsE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_NOTIFICATION_CATEGORIES": "product:3/day,offers:1/day"})
		h := f.h
		const sendDoc = `mutation ($id: ID!, $n: NotificationInput!, $c: String) {
  sendNotificationToUser(userId: $id, notification: $n, category: $c) { status message skipped { optedOut capped } outcomes { deviceId status } } }`

		// The categories show their caps.
		r := gql(t, h, "notificationCategories", `query { notificationCategories { name critical capPerDay } }`, nil, withBearer(f.admin))
		expectOK(t, "read the categories", r, http.StatusOK)
		caps := map[string]any{}
		for _, c := range r.data.([]any) {
			caps[jsonPath(c, "name").(string)] = jsonPath(c, "capPerDay")
		}
		if asInt(t, caps["product"]) != 3 || asInt(t, caps["offers"]) != 1 || caps["security"] != nil || caps["service"] != nil {
			t.Fatalf("categories' caps %v, want product 3, offers 1, the rest null", caps)
		}
		r = restCall(t, h, http.MethodGet, "/api/v1/notifications/categories", nil, withAPIKey(f.key))
		expectOK(t, "read the categories over REST", r, http.StatusOK)
		if c := r.data.([]any)[3]; jsonPath(c, "name") != "product" || asInt(t, jsonPath(c, "capPerDay")) != 3 {
			t.Fatalf("REST's product category %v, want capPerDay 3", c)
		}

		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "capped-"+dn+"@example.com")
				token := dn + "-capped-phone"
				mustRegister(t, h, dn, access, "android", token, "")
				send := func(category string) result {
					t.Helper()
					n := notify("News", "Something new", nil)
					var r result
					if dn == graphQLDoor.name {
						r = gql(t, h, "sendNotificationToUser", sendDoc, map[string]any{"id": userID, "n": n, "c": category}, withBearer(f.admin))
					} else {
						r = restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+userID, map[string]any{"notification": n, "category": category}, withAPIKey(f.key))
					}
					expectOK(t, "a "+category+" send", r, http.StatusOK)
					return r
				}
				for i := range 3 {
					r := send("product")
					if jsonPath(r.data, "status") != "sent" || asInt(t, jsonPath(r.data, "skipped", "capped")) != 0 {
						t.Fatalf("product send %d = %v, want sent", i+1, r.data)
					}
				}
				r := send("product")
				if jsonPath(r.data, "status") != "no_recipients" || asInt(t, jsonPath(r.data, "skipped", "capped")) != 1 || asInt(t, jsonPath(r.data, "skipped", "optedOut")) != 0 ||
					!strings.Contains(jsonPath(r.data, "message").(string), "cap") {
					t.Fatalf("the 4th product send = %v, want no_recipients, skipped.capped 1", r.data)
				}
				if got := f.fake.Delivered(token); got != 3 {
					t.Fatalf("the phone got %d product pushes, want 3", got)
				}
				r = send("security")
				if jsonPath(r.data, "status") != "sent" || asInt(t, jsonPath(r.data, "skipped", "capped")) != 0 || f.fake.Delivered(token) != 4 {
					t.Fatalf("a security send over the product cap = %v (the phone got %d), want sent", r.data, f.fake.Delivered(token))
				}
				// Each category has its own cap.
				if r := send("offers"); jsonPath(r.data, "status") != "sent" {
					t.Fatalf("the first offers send = %v, want sent", r.data)
				}
				if r := send("offers"); asInt(t, jsonPath(r.data, "skipped", "capped")) != 1 || f.fake.Delivered(token) != 5 {
					t.Fatalf("the second offers send = %v (the phone got %d), want capped", r.data, f.fake.Delivered(token))
				}
			})
		}
	})
}

// A broadcast of a capped category (offers, 1 a day), through each door:
// a user with two phones gets it on both and is counted once; a user who
// already had the day's offers send is skipped on every device, counted
// in the job's skipped.capped on the door that reads it; a user the
// first broadcast reached is capped for the second.
func TestBroadcastCapsE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_NOTIFICATION_CATEGORIES": "offers:1/day"})
		h := f.h
		const broadcastDoc = `mutation ($n: NotificationInput!) { sendNotificationToAll(notification: $n, category: "offers") { jobId totalRecipients } }`
		const jobDoc = `query ($id: ID!) { notificationJob(id: $id) { status sent skipped { optedOut capped } } }`
		for i, dn := range doorNames {
			access, _ := newUserToken(t, h, dn, "two-phones-"+dn+"@example.com")
			phones := []string{dn + "-phone-1", dn + "-phone-2"}
			for _, token := range phones {
				mustRegister(t, h, dn, access, "android", token, "")
			}
			capped, cappedID := newUserToken(t, h, dn, "had-one-"+dn+"@example.com")
			cappedPhone := dn + "-had-one-phone"
			mustRegister(t, h, dn, capped, "android", cappedPhone, "")
			r := restCall(t, h, http.MethodPost, "/api/v1/notifications/users/"+cappedID, map[string]any{"notification": notify("Offer", "Today only", nil), "category": "offers"}, withAPIKey(f.key))
			expectOK(t, "the day's offers send", r, http.StatusOK)

			n := notify("Offer", "For everyone "+dn, nil)
			var b result
			if dn == graphQLDoor.name {
				b = gql(t, h, "sendNotificationToAll", broadcastDoc, map[string]any{"n": n}, withBearer(f.admin))
			} else {
				b = restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "category": "offers"}, withAPIKey(f.key))
			}
			expectOK(t, "an offers broadcast", b, map[string]int{"rest": http.StatusAccepted, "graphql": http.StatusOK}[dn])
			jobID, _ := jsonPath(b.data, "jobId").(string)
			total := asInt(t, jsonPath(b.data, "totalRecipients"))
			job := completedJob(t, h, jobID, withAPIKey(f.key))
			if dn == graphQLDoor.name {
				g := gql(t, h, "notificationJob", jobDoc, map[string]any{"id": jobID}, withBearer(f.admin))
				expectOK(t, "read the job", g, http.StatusOK)
				job = g.data.(map[string]any)
			}
			// The new user's two phones are sent; so is the fixture's
			// reader the first time. Everyone else had the day's offer.
			sent := len(phones)
			if i == 0 {
				sent++
			}
			if job["status"] != "completed" || asInt(t, job["sent"]) != sent || asInt(t, jsonPath(job, "skipped", "capped")) != total-sent || asInt(t, jsonPath(job, "skipped", "optedOut")) != 0 {
				t.Fatalf("%s: offers broadcast %v of %d; want %d sent and the rest capped", dn, job, total, sent)
			}
			for _, token := range phones {
				if got := f.fake.Delivered(token); got != 1 {
					t.Errorf("%s: %s got %d pushes, want the broadcast", dn, token, got)
				}
			}
			if got := f.fake.Delivered(cappedPhone); got != 1 {
				t.Errorf("%s: the capped user's phone got %d pushes, want only the day's send", dn, got)
			}
			if got := f.fake.Delivered(f.token); got != 1 {
				t.Errorf("%s: the reader's phone got %d pushes, want the first broadcast only", dn, got)
			}
		}
	})
}

// A cap on a critical category, or a malformed cap, is a configuration
// error (exit status 2) naming the variable, at start and in `herald
// check`.
func TestCheckRefusesBadCaps(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"security:3/day", "product:0/day", "product:3/week", "product"} {
		stdout, _, err := runHerald(t, map[string]string{"HERALD_NOTIFICATION_CATEGORIES": v}, "", "check")
		var ce configError
		if !errors.As(err, &ce) || exitCode(err) != 2 {
			t.Fatalf("check with %q = %v, want a configuration error (exit 2)", v, err)
		}
		if !strings.HasPrefix(stdout, "error    configuration  HERALD_NOTIFICATION_CATEGORIES:") {
			t.Errorf("check with %q: stdout %q, want the variable named", v, stdout)
		}
	}
}
