package main

// Targeted and scheduled sends (issue 14) end to end: the REST doors of the
// notification and messenger operations, sends to a user, idempotent
// sends, push options at the fake providers, audiences and scheduled
// broadcasts. Every REST exchange is also checked against apidoc/openapi.yaml
// by the harness.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// restCall sends one REST request and reduces the envelope.
func restCall(t testing.TB, h *herald, method, path string, body any, opts ...reqOption) result {
	t.Helper()
	status, env, hdr := h.rest(t, method, path, body, opts...)
	return envelopeResult(t, method+" "+path, status, env, hdr)
}

func withAPIKey(key string) reqOption { return withHeader("X-API-Key", key) }

// sendsFixture is a server with a fake FCM, an admin, an API key holding
// notifications:send and a user with one Android device.
type sendsFixture struct {
	h        *herald
	fake     *fcmtest.Server
	admin    string
	key      string // notifications:send
	userID   string
	access   string // the user's token
	deviceID string
	token    string // the device's push token
}

func newSendsFixture(t *testing.T, d sqlstoretest.Dialect, extra map[string]string, fcmOpts ...fcmtest.Option) *sendsFixture {
	t.Helper()
	f := &sendsFixture{fake: fcmtest.NewServer(t, append([]fcmtest.Option{fcmtest.PlainHTTP()}, fcmOpts...)...)}
	env := map[string]string{"HERALD_PUSH_RATE": "0", "HERALD_RATE_LIMIT_APIKEY": "100000"}
	maps.Copy(env, extra)
	f.h = startHerald(t, d, pushEnv(t, f.fake, f.fake.URL, env))
	f.admin = newAdminToken(t, f.h, "ops@example.com")
	f.key, _ = createKey(t, f.h, restDoor.name, f.admin, map[string]any{"name": "sender", "scopes": []string{"notifications:send"}})
	f.access, f.userID = newUserToken(t, f.h, restDoor.name, "reader@example.com")
	f.token = "reader-phone"
	f.deviceID = mustRegister(t, f.h, restDoor.name, f.access, "android", f.token, "phone")["deviceId"].(string)
	return f
}

// completedJob waits, bounded, for broadcast jobID to complete and
// answers it as GET /api/v1/notifications/broadcasts/{id} shows it.
func completedJob(t testing.TB, h *herald, jobID string, cred reqOption) map[string]any {
	t.Helper()
	var job map[string]any
	eventually(t, func() bool {
		r := restCall(t, h, "GET", "/api/v1/notifications/broadcasts/"+jobID, nil, cred)
		expectOK(t, "get job", r, http.StatusOK)
		job = r.data.(map[string]any)
		return job["status"] == "completed"
	}, "broadcast %s never completed", jobID)
	return job
}

// broadcastToPlatform broadcasts to the audience of platform through each
// door and checks each job: one live device per door (reached counts
// the provider's messages of a body), and the late device's token, dead
// at the first broadcast, counted invalid, marked, and left out of the
// second; none of it reaches the fixture's FCM.
func broadcastToPlatform(t *testing.T, f *sendsFixture, platform, lateAccess, lateID string, reached func(body string) int) {
	t.Helper()
	const allDoc = `mutation All($n: NotificationInput!, $a: AudienceInput) { sendNotificationToAll(notification: $n, audience: $a) { status totalRecipients jobId } }`
	h := f.h
	before := f.fake.TotalDelivered()
	audience := map[string]any{"platforms": []string{platform}}
	for i, dn := range doorNames {
		body := "For " + platform + " devices " + dn
		n := notify("News", body, nil)
		var r result
		if dn == graphQLDoor.name {
			r = gql(t, h, "sendNotificationToAll", allDoc, map[string]any{"n": n, "a": audience}, withBearer(f.admin))
			expectOK(t, "broadcast to "+platform+" over GraphQL", r, http.StatusOK)
		} else {
			r = restCall(t, h, "POST", "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "audience": audience}, withAPIKey(f.key))
			expectOK(t, "broadcast to "+platform+" over REST", r, http.StatusAccepted)
		}
		jobID, _ := jsonPath(r.data, "jobId").(string)
		job := completedJob(t, h, jobID, withAPIKey(f.key))
		if i == 0 {
			expectFinishedJob(t, job, "completed", len(doorNames)+1, len(doorNames), 0, 1)
		} else {
			expectFinishedJob(t, job, "completed", len(doorNames), len(doorNames), 0, 0)
		}
		if got := reached(body); got != len(doorNames) {
			t.Fatalf("the %s broadcast reached %d %s devices, want %d", dn, got, platform, len(doorNames))
		}
	}
	if f.fake.TotalDelivered() != before {
		t.Fatalf("the %s broadcasts reached %d android phones", platform, f.fake.TotalDelivered()-before)
	}
	if ds := listDevices(t, h, restDoor.name, lateAccess); len(ds) != 1 || ds[0]["deviceId"] != lateID || ds[0]["pushTokenStatus"] != "invalid" {
		t.Fatalf("the late %s device %v, want it invalid", platform, ds)
	}
}

// TestNotificationRESTDoorsE2E: the REST doors of the notification and
// messenger operations answer as their GraphQL fields do, in the envelope,
// under the scope of the route table (an API key with the scope passes,
// one without is refused, a user token is refused).
func TestNotificationRESTDoorsE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h, key := f.h, withAPIKey(f.key)
		n := map[string]any{"notification": notify("Hello", "From REST", testData)}

		r := restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, key)
		expectOK(t, "send to device", r, http.StatusOK)
		if jsonPath(r.data, "status") != "sent" || f.fake.Delivered(f.token) != 1 {
			t.Fatalf("send to device = %v, the fake got %d", r.data, f.fake.Delivered(f.token))
		}
		if m := f.fake.MessagesFor(f.token)[0]; m.Title != "Hello" || !maps.Equal(m.Data, fcmData) {
			t.Fatalf("FCM got %+v, want title Hello and data %v", m, fcmData)
		}
		expectError(t, "unknown device", restCall(t, h, "POST", "/api/v1/notifications/devices/0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", n, key), 404, "DEVICE_NOT_FOUND")
		r = restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, map[string]any{"notification": map[string]any{"subject": "", "content": "x"}}, key)
		expectError(t, "blank subject", r, 400, "INVALID_INPUT")
		if r.details["field"] != "subject" {
			t.Errorf("blank subject: details %v, want field subject", r.details)
		}
		expectError(t, "a user's token", restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withBearer(f.access)), 403, "INSUFFICIENT_PERMISSIONS")
		expectError(t, "no credential", restCall(t, h, "GET", "/api/v1/notifications/broadcasts", nil), 401, "AUTH_REQUIRED")
		// Without HERALD_VAPID_* there is no Web Push key to give.
		expectError(t, "VAPID key unconfigured", restCall(t, h, "GET", "/api/v1/push/vapid-public-key", nil), 404, "NOT_FOUND")
		status, body := h.graphql(t, `query { vapidPublicKey }`, nil)
		if data, ok := body["data"].(map[string]any); status != http.StatusOK || body["errors"] != nil || !ok || data["vapidPublicKey"] != nil {
			t.Fatalf("vapidPublicKey unconfigured = %d %v, want data.vapidPublicKey null", status, body)
		} else if _, present := data["vapidPublicKey"]; !present {
			t.Fatalf("vapidPublicKey unconfigured = %v, want the field present and null", body)
		}

		// A broadcast keeps its push options with the job.
		withOptions := notify("Hello", "From REST", testData)
		withOptions["options"] = map[string]any{"priority": "high", "channelId": "news", "ttl": 600}
		r = restCall(t, h, "POST", "/api/v1/notifications/broadcasts", map[string]any{"notification": withOptions}, key)
		expectOK(t, "broadcast", r, http.StatusAccepted)
		jobID, _ := jsonPath(r.data, "jobId").(string)
		if jsonPath(r.data, "status") != "queued" || asInt(t, jsonPath(r.data, "totalRecipients")) != 1 || jobID == "" {
			t.Fatalf("broadcast = %v", r.data)
		}
		job := completedJob(t, h, jobID, key)
		expectFinishedJob(t, job, "completed", 1, 1, 0, 0)
		if f.fake.Delivered(f.token) != 2 {
			t.Fatalf("the device got %d pushes, want 2", f.fake.Delivered(f.token))
		}
		if raw := f.fake.MessagesFor(f.token)[1].Raw; jsonPath(raw, "android", "priority") != "HIGH" || jsonPath(raw, "android", "ttl") != "600s" ||
			jsonPath(raw, "android", "notification", "channel_id") != "news" {
			t.Fatalf("the broadcast's FCM message %v lacks its options", raw)
		}

		r = restCall(t, h, "GET", "/api/v1/notifications/broadcasts?first=1", nil, withBearer(f.admin))
		expectOK(t, "list jobs", r, http.StatusOK)
		if nodes := jsonPath(r.data, "nodes").([]any); len(nodes) != 1 || jsonPath(nodes[0], "id") != jobID || jsonPath(r.data, "pageInfo", "hasNextPage") != false {
			t.Fatalf("list jobs = %v", r.data)
		}
		expectError(t, "first out of range", restCall(t, h, "GET", "/api/v1/notifications/broadcasts?first=1000", nil, key), 400, "VALIDATION_ERROR")

		r = restCall(t, h, "DELETE", "/api/v1/notifications/broadcasts/"+jobID, nil, key)
		expectOK(t, "cancel a finished job", r, http.StatusOK)
		if jsonPath(r.data, "status") != "completed" {
			t.Fatalf("cancel of a finished job = %v, want it unchanged", r.data)
		}
		expectError(t, "unknown job", restCall(t, h, "GET", "/api/v1/notifications/broadcasts/nope", nil, key), 404, "JOB_NOT_FOUND")
		expectError(t, "cancel unknown job", restCall(t, h, "DELETE", "/api/v1/notifications/broadcasts/nope", nil, key), 404, "JOB_NOT_FOUND")

		msg := map[string]any{"chatId": "12345", "message": "*hi*"}
		expectError(t, "messenger without the scope", restCall(t, h, "POST", "/api/v1/messenger/messages", msg, key), 403, "INSUFFICIENT_PERMISSIONS")
		expectError(t, "messenger without a bot", restCall(t, h, "POST", "/api/v1/messenger/messages", msg, withBearer(f.admin)), 503, "MESSENGER_NOT_CONNECTED")
	})
}

const sendToUserDoc = `mutation ToUser($id: ID!, $n: NotificationInput!, $channels: [String!]) {
  sendNotificationToUser(userId: $id, notification: $n, channels: $channels) { userId status message outcomes { deviceId platform channel status error } }
}`

// sendToUser sends through the door: REST with the API key, GraphQL with
// the admin's token.
func (f *sendsFixture) sendToUser(t testing.TB, dn, userID string, body map[string]any, opts ...reqOption) result {
	t.Helper()
	if dn == graphQLDoor.name {
		vars := map[string]any{"id": userID, "n": body["notification"], "channels": body["channels"]}
		return gql(t, f.h, "sendNotificationToUser", sendToUserDoc, vars, append([]reqOption{withBearer(f.admin)}, opts...)...)
	}
	return restCall(t, f.h, "POST", "/api/v1/notifications/users/"+userID, body, append([]reqOption{withAPIKey(f.key)}, opts...)...)
}

// outcomesByDevice maps each outcome's deviceId to its status (and error).
func outcomesByDevice(t testing.TB, data any) map[string]string {
	t.Helper()
	list, ok := jsonPath(data, "outcomes").([]any)
	if !ok {
		t.Fatalf("no outcomes array in %v", data)
	}
	out := map[string]string{}
	for _, o := range list {
		s, _ := jsonPath(o, "status").(string)
		if e, _ := jsonPath(o, "error").(string); e != "" {
			s += " " + e
		}
		out[jsonPath(o, "deviceId").(string)] = s
	}
	return out
}

// TestSendToUserE2E: a send to a user reaches every active device with a
// valid token, one outcome each (sent, invalid_token, failed); a device
// found dead is left out of the next send; a user without devices is
// no_recipients; an unknown user USER_NOT_FOUND; the telegram channel is
// refused until chats can be linked.
func TestSendToUserE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_PLAN_DEVICE_LIMITS": "trial=10"})
		h := f.h
		n := map[string]any{"notification": notify("Renewal", "Your plan renews tomorrow", nil)}
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				access, userID := newUserToken(t, h, dn, "many-"+dn+"@example.com")
				ok, dead, broken := dn+"-ok", dn+"-dead", dn+"-broken"
				f.fake.Fail(dead, -1, fcmtest.Unregistered())
				f.fake.Fail(broken, -1, fcmtest.ThirdPartyAuth())
				ids := map[string]string{}
				for _, tok := range []string{ok, dead, broken, dn + "-removed"} {
					ids[tok] = mustRegister(t, h, dn, access, "android", tok, "")["deviceId"].(string)
				}
				expectOK(t, "remove", removeDevice(t, h, dn, access, ids[dn+"-removed"]), http.StatusOK)

				r := f.sendToUser(t, dn, userID, n)
				expectOK(t, "send to user", r, http.StatusOK)
				want := map[string]string{ids[ok]: "sent", ids[dead]: "invalid_token INVALID_PUSH_TOKEN", ids[broken]: "failed UPSTREAM_ERROR"}
				if got := outcomesByDevice(t, r.data); !maps.Equal(got, want) || jsonPath(r.data, "status") != "partial" || jsonPath(r.data, "userId") != userID {
					t.Fatalf("send to user = %v, want status partial and outcomes %v", r.data, want)
				}
				if f.fake.Delivered(ok) != 1 || f.fake.Attempts(dn+"-removed") != 0 {
					t.Fatalf("the fake delivered %d to the good device and was asked %d times for the removed one", f.fake.Delivered(ok), f.fake.Attempts(dn+"-removed"))
				}

				// The dead token is now known: the next send leaves it out.
				f.fake.Fail(broken, 0, fcmtest.Fault{})
				r = f.sendToUser(t, dn, userID, n)
				want = map[string]string{ids[ok]: "sent", ids[broken]: "sent"}
				if got := outcomesByDevice(t, r.data); !maps.Equal(got, want) || jsonPath(r.data, "status") != "sent" {
					t.Fatalf("second send to user = %v, want status sent and outcomes %v", r.data, want)
				}
				if f.fake.Attempts(dead) != 1 {
					t.Errorf("the dead token was tried %d times, want once", f.fake.Attempts(dead))
				}

				_, lonely := newUserToken(t, h, dn, "lonely-"+dn+"@example.com")
				r = f.sendToUser(t, dn, lonely, n)
				expectOK(t, "send to a user without devices", r, http.StatusOK)
				if jsonPath(r.data, "status") != "no_recipients" || len(jsonPath(r.data, "outcomes").([]any)) != 0 {
					t.Fatalf("send to a user without devices = %v, want no_recipients and no outcome", r.data)
				}

				expectError(t, "unknown user", f.sendToUser(t, dn, "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", n), 404, "USER_NOT_FOUND")
				r = f.sendToUser(t, dn, userID, map[string]any{"notification": n["notification"], "channels": []string{"push", "sms"}})
				expectError(t, "unknown channel", r, 400, "INVALID_INPUT")
				if r.details["field"] != "channels" {
					t.Errorf("unknown channel: details %v, want field channels", r.details)
				}
				// Telegram alone, and no linked chat: nobody to reach.
				r = f.sendToUser(t, dn, userID, map[string]any{"notification": n["notification"], "channels": []string{"telegram"}})
				expectOK(t, "telegram channel without a linked chat", r, http.StatusOK)
				if jsonPath(r.data, "status") != "no_recipients" {
					t.Fatalf("telegram channel without a linked chat = %v, want no_recipients", r.data)
				}
			})
		}
	})
}

// TestIdempotentSendsE2E: through both doors, the same key with the same
// request answers the first answer and sends nothing again; with another
// request it is IDEMPOTENCY_KEY_REUSED; keys are per caller; a malformed
// key is a VALIDATION_ERROR; a send that failed can be retried with its
// key.
func TestIdempotentSendsE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		n := map[string]any{"notification": notify("Once", "Only once", nil)}
		other := map[string]any{"notification": notify("Twice", "Another one", nil)}
		idem := func(k string) reqOption { return withHeader("Idempotency-Key", k) }

		// REST, the device send.
		first := restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withAPIKey(f.key), idem("dev-1"))
		expectOK(t, "first send", first, http.StatusOK)
		again := restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withAPIKey(f.key), idem("dev-1"))
		expectOK(t, "repeated send", again, http.StatusOK)
		if !reflect.DeepEqual(first.data, again.data) || f.fake.Delivered(f.token) != 1 {
			t.Fatalf("repeat answered %v (first %v); the device got %d pushes, want 1", again.data, first.data, f.fake.Delivered(f.token))
		}
		expectError(t, "same key, other request", restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, other, withAPIKey(f.key), idem("dev-1")), 409, "IDEMPOTENCY_KEY_REUSED")
		expectError(t, "same key, other operation", restCall(t, h, "POST", "/api/v1/notifications/users/"+f.userID, n, withAPIKey(f.key), idem("dev-1")), 409, "IDEMPOTENCY_KEY_REUSED")
		// Another caller's key of the same name is its own.
		expectOK(t, "another caller", restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withBearer(f.admin), idem("dev-1")), http.StatusOK)
		if f.fake.Delivered(f.token) != 2 {
			t.Fatalf("another caller's key: the device got %d pushes, want 2", f.fake.Delivered(f.token))
		}
		r := restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withAPIKey(f.key), idem("has space"))
		expectError(t, "malformed key", r, 400, "VALIDATION_ERROR")
		if r.details["field"] != "Idempotency-Key" {
			t.Errorf("malformed key: details %v, want field Idempotency-Key", r.details)
		}

		// A failure keeps nothing: the retry with the key sends.
		f.fake.Fail(f.token, 1, fcmtest.ThirdPartyAuth())
		expectError(t, "failed send", restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withAPIKey(f.key), idem("dev-2")), 502, "UPSTREAM_ERROR")
		expectOK(t, "retried send", restCall(t, h, "POST", "/api/v1/notifications/devices/"+f.deviceID, n, withAPIKey(f.key), idem("dev-2")), http.StatusOK)
		if f.fake.Delivered(f.token) != 3 {
			t.Fatalf("after a failure and a retry: %d pushes, want 3", f.fake.Delivered(f.token))
		}

		// GraphQL, the broadcast: one job, the first answer twice.
		doc := `mutation All($n: NotificationInput!, $k: String) { sendNotificationToAll(notification: $n, idempotencyKey: $k) { status message totalRecipients jobId } }`
		vars := map[string]any{"n": n["notification"], "k": "bc-1"}
		b1 := gql(t, h, "sendNotificationToAll", doc, vars, withBearer(f.admin))
		expectOK(t, "broadcast", b1, http.StatusOK)
		b2 := gql(t, h, "sendNotificationToAll", doc, vars, withBearer(f.admin))
		expectOK(t, "repeated broadcast", b2, http.StatusOK)
		if !reflect.DeepEqual(b1.data, b2.data) {
			t.Fatalf("repeated broadcast answered %v, first %v", b2.data, b1.data)
		}
		jobs := restCall(t, h, "GET", "/api/v1/notifications/broadcasts", nil, withBearer(f.admin))
		if n := len(jsonPath(jobs.data, "nodes").([]any)); n != 1 {
			t.Fatalf("%d broadcast jobs, want 1", n)
		}
		vars["n"] = other["notification"]
		expectError(t, "broadcast key reused", gql(t, h, "sendNotificationToAll", doc, vars, withBearer(f.admin)), 409, "IDEMPOTENCY_KEY_REUSED")
	})
}

// TestIdempotencyConcurrentReplicasE2E: the same key sent many times at
// once, spread over two servers sharing one database (PostgreSQL; one
// server on SQLite, which is single-process), sends once, and every
// request answers the same.
func TestIdempotencyConcurrentReplicasE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		// A slow provider keeps the first send in flight while the others
		// arrive (the claim is taken before the send either way).
		f := newSendsFixture(t, d, nil, fcmtest.Latency(200*time.Millisecond, 300*time.Millisecond))
		servers := []*herald{f.h}
		if d == "postgres" {
			servers = append(servers, startHerald(t, d, pushEnv(t, f.fake, f.fake.URL, map[string]string{"HERALD_PUSH_RATE": "0", "HERALD_DATABASE_URL": f.h.DBURL})))
		}
		const requests = 8
		body := map[string]any{"notification": notify("Together", "At once", nil)}
		answers := make([]answer, requests)
		var wg sync.WaitGroup
		for i := range requests {
			wg.Go(func() {
				answers[i] = rawDo(servers[i%len(servers)], "POST", "/api/v1/notifications/users/"+f.userID, body,
					withAPIKey(f.key), withHeader("Idempotency-Key", "together"))
			})
		}
		wg.Wait()
		for i, a := range answers {
			if a.err != nil {
				t.Fatalf("request %d: %v", i, a.err)
			}
			if a.status != http.StatusOK || string(a.raw) != string(answers[0].raw) {
				t.Fatalf("request %d answered %d %s; request 0 answered %s", i, a.status, a.raw, answers[0].raw)
			}
		}
		if got := f.fake.Delivered(f.token); got != 1 {
			t.Fatalf("%d concurrent requests with one key over %d servers: the device got %d pushes, want 1", requests, len(servers), got)
		}
	})
}

// riverJobState is the state of the River job of broadcast jobID, read
// from the server's database.
func riverJobState(t testing.TB, h *herald, d sqlstoretest.Dialect, jobID string) string {
	t.Helper()
	db := h.store(t)
	var state string
	var err error
	if d == "postgres" {
		err = db.Pool().QueryRow(context.Background(), `SELECT state FROM river_job WHERE args->>'job_id' = $1 ORDER BY id LIMIT 1`, jobID).Scan(&state)
	} else {
		err = db.SQL().QueryRowContext(context.Background(), `SELECT state FROM river_job WHERE json_extract(args, '$.job_id') = ? ORDER BY id LIMIT 1`, jobID).Scan(&state)
	}
	if err != nil {
		t.Fatalf("the River job of broadcast %s: %v", jobID, err)
	}
	return state
}

// TestScheduledBroadcastE2E: a broadcast with sendAt is scheduled, starts
// at that time (not before) and completes; one cancelled before its time
// sends nothing when its time comes; a sendAt too far ahead or in the
// past is refused.
func TestScheduledBroadcastE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h, key := f.h, withAPIKey(f.key)
		n := notify("Later", "Scheduled", nil)
		schedule := func(at time.Time) result {
			t.Helper()
			return restCall(t, h, "POST", "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "sendAt": at.UTC().Format(time.RFC3339Nano)}, key)
		}

		sendAt := time.Now().Add(2 * time.Second)
		r := schedule(sendAt)
		expectOK(t, "schedule", r, http.StatusAccepted)
		jobID, _ := jsonPath(r.data, "jobId").(string)
		if jsonPath(r.data, "status") != "scheduled" || asInt(t, jsonPath(r.data, "totalRecipients")) != 1 {
			t.Fatalf("schedule = %v, want status scheduled for 1 device", r.data)
		}
		job := restCall(t, h, "GET", "/api/v1/notifications/broadcasts/"+jobID, nil, key).data.(map[string]any)
		if job["sendAt"] != sendAt.UTC().Truncate(time.Second).Format(time.RFC3339) {
			t.Fatalf("job sendAt %v, want %s", job["sendAt"], sendAt.UTC().Truncate(time.Second).Format(time.RFC3339))
		}
		eventually(t, func() bool {
			r := restCall(t, h, "GET", "/api/v1/notifications/broadcasts/"+jobID, nil, key)
			expectOK(t, "get scheduled job", r, http.StatusOK)
			job = r.data.(map[string]any)
			return job["status"] == "completed"
		}, "scheduled broadcast %s never completed", jobID)
		expectFinishedJob(t, job, "completed", 1, 1, 0, 0)
		started, _ := time.Parse(time.RFC3339, job["startedAt"].(string))
		if started.Before(sendAt.Truncate(time.Second)) {
			t.Fatalf("the job started at %v, before its sendAt %v", started, sendAt)
		}
		// GraphQL shows the same.
		g := gql(t, h, "notificationJob", `query J($id: ID!) { notificationJob(id: $id) { status sendAt } }`, map[string]any{"id": jobID}, withBearer(f.admin))
		if jsonPath(g.data, "sendAt") != job["sendAt"] {
			t.Fatalf("GraphQL sendAt %v, REST %v", jsonPath(g.data, "sendAt"), job["sendAt"])
		}

		// Cancelled before its time: when the time comes, nothing is sent.
		before := f.fake.Delivered(f.token)
		r = schedule(time.Now().Add(2 * time.Second))
		cancelID, _ := jsonPath(r.data, "jobId").(string)
		c := restCall(t, h, "DELETE", "/api/v1/notifications/broadcasts/"+cancelID, nil, key)
		expectOK(t, "cancel scheduled", c, http.StatusOK)
		if jsonPath(c.data, "status") != "cancelled" {
			t.Fatalf("cancel of a scheduled job = %v", c.data)
		}
		eventually(t, func() bool { return riverJobState(t, h, d, cancelID) == "completed" }, "the cancelled job's River job never ran")
		if got := f.fake.Delivered(f.token); got != before {
			t.Fatalf("a cancelled scheduled broadcast sent %d pushes", got-before)
		}
		if j := restCall(t, h, "GET", "/api/v1/notifications/broadcasts/"+cancelID, nil, key).data; jsonPath(j, "status") != "cancelled" || jsonPath(j, "startedAt") != nil {
			t.Fatalf("cancelled scheduled job = %v", j)
		}

		for what, at := range map[string]time.Time{"31 days ahead": time.Now().Add(31 * 24 * time.Hour), "an hour ago": time.Now().Add(-time.Hour)} {
			r := schedule(at)
			expectError(t, what, r, 400, "VALIDATION_ERROR")
			if r.details["field"] != "sendAt" {
				t.Errorf("%s: details %v, want field sendAt", what, r.details)
			}
		}
	})
}

// TestSendByTokenE2E: an admin pushes to a bare token (no device record);
// a dead token is INVALID_PUSH_TOKEN; a bad platform VALIDATION_ERROR; an
// API key with notifications:send is refused (admin only).
func TestSendByTokenE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		doc := `mutation T($p: String!, $t: String!, $n: NotificationInput!) { sendNotificationByToken(platform: $p, pushToken: $t, notification: $n) { status message } }`
		call := func(platform, token string, opts ...reqOption) result {
			t.Helper()
			return gql(t, f.h, "sendNotificationByToken", doc, map[string]any{"p": platform, "t": token, "n": notify("Test", "A token test", nil)}, opts...)
		}
		r := call("android", "bare-token", withBearer(f.admin))
		expectOK(t, "send by token", r, http.StatusOK)
		if jsonPath(r.data, "status") != "sent" || f.fake.Delivered("bare-token") != 1 {
			t.Fatalf("send by token = %v; the fake got %d", r.data, f.fake.Delivered("bare-token"))
		}
		f.fake.Fail("bare-dead", -1, fcmtest.Unregistered())
		expectError(t, "dead token", call("android", "bare-dead", withBearer(f.admin)), 422, "INVALID_PUSH_TOKEN")
		expectError(t, "bad platform", call("windows", "bare-token", withBearer(f.admin)), 400, "VALIDATION_ERROR")
		expectError(t, "an API key", call("android", "bare-token", withAPIKey(f.key)), 403, "INSUFFICIENT_PERMISSIONS")
	})
}

// TestBroadcastAudienceE2E: an audience narrows a broadcast by platform,
// plan and subscription status; totalRecipients counts it and only its
// devices get the push.
func TestBroadcastAudienceE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, map[string]string{"HERALD_PLAN_DEVICE_LIMITS": "trial=10,premium=10"})
		h := f.h
		access, _ := newUserToken(t, h, restDoor.name, "premium@example.com")
		if _, _, err := runHerald(t, h.Env, "", "users", "set-plan", "--email", "premium@example.com", "--plan", "premium", "--expires", "720h"); err != nil {
			t.Fatal(err)
		}
		mustRegister(t, h, restDoor.name, access, "ios", "premium-ios", "")
		mustRegister(t, h, restDoor.name, access, "android", "premium-android", "")
		doc := `mutation All($n: NotificationInput!, $a: AudienceInput) { sendNotificationToAll(notification: $n, audience: $a) { status totalRecipients jobId } }`
		cases := []struct {
			name     string
			audience map[string]any
			tokens   []string // who gets it
		}{
			{"ios only", map[string]any{"platforms": []string{"ios"}}, []string{"premium-ios"}},
			{"premium plan", map[string]any{"plans": []string{"premium"}}, []string{"premium-ios", "premium-android"}},
			{"android on trial", map[string]any{"platforms": []string{"android"}, "plans": []string{"trial"}, "subscriptionStatus": "active"}, []string{f.token}},
			{"expired", map[string]any{"subscriptionStatus": "expired"}, nil},
			{"everyone", map[string]any{}, []string{f.token, "premium-ios", "premium-android"}},
		}
		for i, c := range cases {
			before := map[string]int{}
			for _, tok := range []string{f.token, "premium-ios", "premium-android"} {
				before[tok] = f.fake.Delivered(tok)
			}
			n := notify("Segment", fmt.Sprint("case ", i), nil)
			var r result
			if i%2 == 0 {
				r = gql(t, h, "sendNotificationToAll", doc, map[string]any{"n": n, "a": c.audience}, withBearer(f.admin))
				expectOK(t, c.name, r, http.StatusOK)
			} else {
				r = restCall(t, h, "POST", "/api/v1/notifications/broadcasts", map[string]any{"notification": n, "audience": c.audience}, withAPIKey(f.key))
				expectOK(t, c.name, r, http.StatusAccepted)
			}
			if got := asInt(t, jsonPath(r.data, "totalRecipients")); got != len(c.tokens) {
				t.Fatalf("%s: totalRecipients %d, want %d", c.name, got, len(c.tokens))
			}
			jobID := jsonPath(r.data, "jobId").(string)
			j := waitJob(t, h, f.admin, jobID, jobWait, func(j map[string]any) bool { return j["status"] == "completed" }, "completed")
			expectFinishedJob(t, j, "completed", len(c.tokens), len(c.tokens), 0, 0)
			for tok, n := range before {
				want := n
				if slices.Contains(c.tokens, tok) {
					want++
				}
				if got := f.fake.Delivered(tok); got != want {
					t.Errorf("%s: %s got %d pushes in all, want %d", c.name, tok, got, want)
				}
			}
		}
		r := restCall(t, h, "POST", "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("x", "y", nil), "audience": map[string]any{"subscriptionStatus": "lapsed"}}, withAPIKey(f.key))
		expectError(t, "bad status", r, 400, "VALIDATION_ERROR")
		r = gql(t, h, "sendNotificationToAll", doc, map[string]any{"n": notify("x", "y", nil), "a": map[string]any{"platforms": []string{"windows"}}}, withBearer(f.admin))
		expectError(t, "bad platform", r, 400, "VALIDATION_ERROR")
		if r.details["field"] != "audience.platforms" {
			t.Errorf("bad platform: details %v", r.details)
		}
	})
}

// TestScheduledBroadcastOtherReplicaE2E: a broadcast scheduled on one
// server is started at its time by another sharing the database, the first
// having stopped meanwhile (PostgreSQL: replicas).
func TestScheduledBroadcastOtherReplicaE2E(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	t.Parallel()
	f := newSendsFixture(t, "postgres", nil)
	other := startHerald(t, "postgres", pushEnv(t, f.fake, f.fake.URL, map[string]string{"HERALD_PUSH_RATE": "0", "HERALD_RATE_LIMIT_APIKEY": "100000", "HERALD_DATABASE_URL": f.h.DBURL}))
	r := restCall(t, f.h, "POST", "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("Later", "Elsewhere", nil), "sendAt": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)}, withAPIKey(f.key))
	expectOK(t, "schedule", r, http.StatusAccepted)
	jobID, _ := jsonPath(r.data, "jobId").(string)
	if err := f.h.stop(); err != nil {
		t.Fatalf("stopping the first server: %v", err)
	}
	var job map[string]any
	eventually(t, func() bool {
		r := restCall(t, other, "GET", "/api/v1/notifications/broadcasts/"+jobID, nil, withAPIKey(f.key))
		expectOK(t, "get job on the other server", r, http.StatusOK)
		job = r.data.(map[string]any)
		return job["status"] == "completed"
	}, "the other server never ran scheduled broadcast %s", jobID)
	expectFinishedJob(t, job, "completed", 1, 1, 0, 0)
	if f.fake.Delivered(f.token) != 1 {
		t.Fatalf("the device got %d pushes, want 1", f.fake.Delivered(f.token))
	}
}
