package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// Quiet hours for broadcasts through each door, on both databases: a
// product broadcast holds the phone of a user inside their quiet hours
// (the job says held, running, and the phone gets nothing) while everyone
// else's devices are sent; an urgent one passes through; cancelling the
// held job sends nothing more. (Delivery at the end of the window is
// TestBroadcastHoldsQuietHours', with a clock the test moves.)
func TestBroadcastQuietHoursE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		const broadcastDoc = `mutation ($n: NotificationInput!, $u: Boolean) { sendNotificationToAll(notification: $n, category: "product", urgent: $u) { jobId totalRecipients } }`
		const jobDoc = `query ($id: ID!) { notificationJob(id: $id) { status sent held urgent } }`
		const cancelDoc = `mutation ($id: ID!) { cancelNotificationJob(id: $id) { status held } }`
		for i, dn := range doorNames {
			access, _ := newUserToken(t, h, dn, "quiet-all-"+dn+"@example.com")
			phone := dn + "-quiet-all-phone"
			mustRegister(t, h, dn, access, "android", phone, "")
			now := time.Now().UTC()
			start, end := now.Add(-time.Hour).Format("15:04"), now.Add(2*time.Hour).Format("15:04")
			expectOK(t, "set quiet hours", scheduleOp(t, h, dn, map[string]any{"timeZone": "UTC", "quietHours": map[string]any{"enabled": true, "start": start, "end": end}}, access), http.StatusOK)

			broadcast := func(urgent bool) (string, int) {
				t.Helper()
				n := notify("Tip", "A tip for everyone "+dn, nil)
				var b result
				if dn == graphQLDoor.name {
					b = gql(t, h, "sendNotificationToAll", broadcastDoc, map[string]any{"n": n, "u": urgent}, withBearer(f.admin))
				} else {
					b = restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "category": "product", "urgent": urgent}, withAPIKey(f.key))
				}
				expectOK(t, "a product broadcast", b, map[string]int{"rest": http.StatusAccepted, "graphql": http.StatusOK}[dn])
				id, _ := b.data.(map[string]any)["jobId"].(string)
				return id, asInt(t, jsonPath(b.data, "totalRecipients"))
			}
			job := func(id string) map[string]any {
				t.Helper()
				var r result
				if dn == graphQLDoor.name {
					r = gql(t, h, "notificationJob", jobDoc, map[string]any{"id": id}, withBearer(f.admin))
				} else {
					r = restCall(t, h, http.MethodGet, "/api/v1/notifications/broadcasts/"+id, nil, withAPIKey(f.key))
				}
				expectOK(t, "read the job", r, http.StatusOK)
				return r.data.(map[string]any)
			}

			// The quiet users of this door and the one before are held.
			held := i + 1
			before := f.fake.Delivered(phone)
			id, total := broadcast(false)
			var j map[string]any
			eventually(t, func() bool {
				j = job(id)
				return (asInt(t, j["held"]) == held && asInt(t, j["sent"]) == total-held) || j["status"] == "completed"
			}, "%s: the broadcast never held the %d quiet phones", dn, held)
			if j["status"] != "running" || asInt(t, j["held"]) != held || j["urgent"] != false || f.fake.Delivered(phone) != before {
				t.Fatalf("%s: a product broadcast inside the quiet hours = %v (the phone got %d), want running with the phone held", dn, j, f.fake.Delivered(phone)-before)
			}

			uid, utotal := broadcast(true)
			u := completedJob(t, h, uid, withAPIKey(f.key))
			if asInt(t, u["sent"]) != utotal || asInt(t, u["held"]) != 0 || u["urgent"] != true || f.fake.Delivered(phone) != before+1 {
				t.Fatalf("%s: an urgent broadcast = %v (the phone got %d), want all sent, none held", dn, u, f.fake.Delivered(phone)-before)
			}

			var c result
			if dn == graphQLDoor.name {
				c = gql(t, h, "cancelNotificationJob", cancelDoc, map[string]any{"id": id}, withBearer(f.admin))
			} else {
				c = restCall(t, h, http.MethodDelete, "/api/v1/notifications/broadcasts/"+id, nil, withAPIKey(f.key))
			}
			expectOK(t, "cancel the held broadcast", c, http.StatusOK)
			if jsonPath(c.data, "status") != "cancelled" {
				t.Fatalf("%s: cancel = %v", dn, c.data)
			}
			if j := job(id); j["status"] != "cancelled" || f.fake.Delivered(phone) != before+1 {
				t.Fatalf("%s: after the cancel %v (the phone got %d), want cancelled and the held phone not sent", dn, j, f.fake.Delivered(phone)-before)
			}
		}
	})
}

// sendAtLocal through each door, on both databases: a malformed time, or
// sendAt with it, is VALIDATION_ERROR naming the field; a good one makes
// one job, scheduled at the first zone's time and showing sendAtLocal.
// (Its deliveries zone by zone are TestBroadcastAtLocalTime's, with a
// clock the test moves.)
func TestBroadcastAtLocalTimeE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		const broadcastDoc = `mutation ($n: NotificationInput!, $l: LocalTimeInput, $at: Time) { sendNotificationToAll(notification: $n, sendAtLocal: $l, sendAt: $at) { jobId status } }`
		const jobDoc = `query ($id: ID!) { notificationJob(id: $id) { status sendAt sendAtLocal { date time } } }`
		date := time.Now().UTC().AddDate(0, 0, 3).Format(time.DateOnly)
		for _, dn := range doorNames {
			broadcast := func(local map[string]any, sendAt any) result {
				t.Helper()
				n := notify("Morning", "Good morning "+dn, nil)
				if dn == graphQLDoor.name {
					return gql(t, h, "sendNotificationToAll", broadcastDoc, map[string]any{"n": n, "l": local, "at": sendAt}, withBearer(f.admin))
				}
				return restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "sendAtLocal": local, "sendAt": sendAt}, withAPIKey(f.key))
			}
			for _, tc := range []struct {
				what   string
				local  map[string]any
				sendAt any
				field  string
			}{
				{"a malformed time", map[string]any{"date": date, "time": "9am"}, nil, "sendAtLocal.time"},
				{"a malformed date", map[string]any{"date": "24.12.2026", "time": "09:00"}, nil, "sendAtLocal.date"},
				{"a date past everywhere", map[string]any{"date": "2020-01-01", "time": "09:00"}, nil, "sendAtLocal"},
				{"both sendAt and sendAtLocal", map[string]any{"date": date, "time": "09:00"}, time.Now().UTC().Add(time.Hour).Format(time.RFC3339), "sendAtLocal"},
			} {
				r := broadcast(tc.local, tc.sendAt)
				expectError(t, dn+": "+tc.what, r, http.StatusBadRequest, "VALIDATION_ERROR")
				if r.details["field"] != tc.field {
					t.Fatalf("%s: %s: details %v, want field %s", dn, tc.what, r.details, tc.field)
				}
			}
			r := broadcast(map[string]any{"date": date, "time": "09:00"}, nil)
			expectOK(t, dn+": a broadcast at 09:00 local", r, map[string]int{"rest": http.StatusAccepted, "graphql": http.StatusOK}[dn])
			id, _ := jsonPath(r.data, "jobId").(string)
			var j result
			if dn == graphQLDoor.name {
				j = gql(t, h, "notificationJob", jobDoc, map[string]any{"id": id}, withBearer(f.admin))
			} else {
				j = restCall(t, h, http.MethodGet, "/api/v1/notifications/broadcasts/"+id, nil, withAPIKey(f.key))
			}
			expectOK(t, dn+": read the job", j, http.StatusOK)
			first, _ := time.Parse(time.DateOnly, date)
			first = first.Add(9*time.Hour - 14*time.Hour)
			at, _ := time.Parse(time.RFC3339, fmt.Sprint(jsonPath(j.data, "sendAt")))
			if jsonPath(j.data, "status") != "scheduled" || !at.Equal(first) || jsonPath(j.data, "sendAtLocal", "date") != date || jsonPath(j.data, "sendAtLocal", "time") != "09:00" {
				t.Fatalf("%s: job %v, want scheduled at %v with sendAtLocal %s 09:00", dn, j.data, first, date)
			}
		}
	})
}
