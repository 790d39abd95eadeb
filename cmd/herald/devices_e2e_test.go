package main

// Devices and push notifications end to end (issue 5), through the real
// server (harness_test.go) on every dialect, with a fake FCM (fcmtest, plain
// HTTP: an in-process server cannot be made to trust the fake's TLS root;
// APNs and FCM over TLS are in broadcast_kill_test.go, through the binary):
// device management through both doors, plan limits and an expired plan,
// the admins' listing, single sends and every provider answer, input and
// authentication errors, `herald devices import`, and broadcasts (10,000
// devices, cancel, the job listing).

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

const (
	fcmProject  = "herald-e2e"
	upgradeURL  = "https://vpn.example.test/upgrade"
	renewURL    = "https://vpn.example.test/renew"
	jobWait     = 120 * time.Second // a 10,000-device broadcast finishes (under -race)
	pushSubject = "Maintenance"
	pushContent = "Tonight 02:00 UTC"
)

// pushEnv is sessionEnv (no rate limits) with FCM configured: credentials
// of fake in a file, and endpoint as the FCM server (the fake itself, or a
// proxy in front of it).
func pushEnv(t testing.TB, fake *fcmtest.Server, endpoint string, extra map[string]string) map[string]string {
	t.Helper()
	creds := filepath.Join(t.TempDir(), "fcm.json")
	if err := os.WriteFile(creds, fake.CredentialsJSON(fcmProject), 0o600); err != nil {
		t.Fatal(err)
	}
	env := sessionEnv(map[string]string{
		"HERALD_FCM_CREDENTIALS_FILE": creds,
		"HERALD_FCM_ENDPOINT":         endpoint,
		"HERALD_UPGRADE_URL":          upgradeURL,
		"HERALD_RENEW_URL":            renewURL,
	})
	maps.Copy(env, extra)
	return env
}

// gql runs one GraphQL operation whose single root field is op and reduces
// the answer (graphqlResult checks its shape).
func gql(t testing.TB, h *herald, op, doc string, vars map[string]any, opts ...reqOption) result {
	t.Helper()
	status, body, hdr := h.graphqlHeader(t, doc, vars, opts...)
	return graphqlResult(t, op, status, body, hdr)
}

// maxPages bounds walkPages: a listing that never ends fails instead of
// looping.
const maxPages = 1000

// walkPages walks the GraphQL connection op (a root field with nodes and
// pageInfo { endCursor hasNextPage }, taking first and after) in pages of
// first, with the other variables vars, and returns every node. It checks
// the paging: no page longer than first, only full pages before the last,
// an endCursor whenever hasNextPage, and at most maxPages pages.
func walkPages(t testing.TB, h *herald, op, doc string, vars map[string]any, first int, opts ...reqOption) []map[string]any {
	t.Helper()
	var out []map[string]any
	after := ""
	for page := 1; ; page++ {
		if page > maxPages {
			t.Fatalf("%s: still more after %d pages of %d", op, maxPages, first)
		}
		v := maps.Clone(vars)
		if v == nil {
			v = map[string]any{}
		}
		v["first"] = first
		if after != "" {
			v["after"] = after
		}
		r := gql(t, h, op, doc, v, opts...)
		expectOK(t, fmt.Sprintf("%s page %d", op, page), r, http.StatusOK)
		nodes, ok := jsonPath(r.data, "nodes").([]any)
		if !ok {
			t.Fatalf("%s page %d: nodes is not an array: %v", op, page, r.data)
		}
		if len(nodes) > first {
			t.Fatalf("%s page %d: %d nodes, asked for %d", op, page, len(nodes), first)
		}
		for i, n := range nodes {
			m, ok := n.(map[string]any)
			if !ok {
				t.Fatalf("%s page %d: node %d is not an object: %v", op, page, i, n)
			}
			out = append(out, m)
		}
		if jsonPath(r.data, "pageInfo", "hasNextPage") != true {
			return out
		}
		end, _ := jsonPath(r.data, "pageInfo", "endCursor").(string)
		if end == "" || len(nodes) != first {
			t.Fatalf("%s page %d: hasNextPage with endCursor %q and %d nodes (asked for %d)", op, page, end, len(nodes), first)
		}
		after = end
	}
}

// newAdminToken creates an operator account with `herald admin create`
// through run() and logs it in.
func newAdminToken(t testing.TB, h *herald, email string) string {
	t.Helper()
	if _, stderr, err := runHerald(t, h.Env, "", "admin", "create", "--email", email, "--password", testPassword); err != nil {
		t.Fatalf("admin create %s: %v\n%s", email, err, stderr)
	}
	return login(t, h, restDoor.name, email, testPassword).access
}

// newUserToken signs up and verifies a user through the door and returns
// an access token and the account id.
func newUserToken(t testing.TB, h *herald, dn, email string) (access, id string) {
	t.Helper()
	newVerifiedUser(t, h, dn, email)
	access = login(t, h, dn, email, testPassword).access
	_, claims := jwtParts(t, access)
	return access, fmt.Sprint(claims["sub"])
}

const deviceFields = `deviceId userId platform name pushToken active pushTokenStatus createdAt lastSeenAt`

var deviceDocs = map[string]string{
	"devices": `query Devices($userId: ID, $first: Int, $after: String) {
  devices(userId: $userId, first: $first, after: $after) { nodes { ` + deviceFields + ` } pageInfo { endCursor hasNextPage } }
}`,
	"registerDevice":  `mutation Register($input: RegisterDeviceInput!) { registerDevice(input: $input) { ` + deviceFields + ` } }`,
	"updatePushToken": `mutation Update($id: String!, $token: String!) { updatePushToken(deviceId: $id, pushToken: $token) { ` + deviceFields + ` } }`,
	"removeDevice":    `mutation Remove($id: String!) { removeDevice(deviceId: $id) }`,
}

// registerDevice registers a device through the door; name "" is left out.
func registerDevice(t testing.TB, h *herald, dn, access, platform, pushToken, name string) result {
	t.Helper()
	in := map[string]any{"platform": platform, "pushToken": pushToken}
	if name != "" {
		in["name"] = name
	}
	if dn == graphQLDoor.name {
		return gql(t, h, "registerDevice", deviceDocs["registerDevice"], map[string]any{"input": in}, withBearer(access))
	}
	status, env, hdr := h.rest(t, http.MethodPost, "/api/v1/devices", in, withBearer(access))
	return envelopeResult(t, "registerDevice", status, env, hdr)
}

// mustRegister registers a device and returns it, checking its shape.
func mustRegister(t testing.TB, h *herald, dn, access, platform, pushToken, name string) map[string]any {
	t.Helper()
	r := registerDevice(t, h, dn, access, platform, pushToken, name)
	expectOK(t, "register "+pushToken, r, map[string]int{"graphql": 200, "rest": 201}[dn])
	d := checkDevice(t, dn, "registered device", r.data)
	if d["platform"] != platform || d["pushToken"] != pushToken || d["active"] != true || d["pushTokenStatus"] != "valid" {
		t.Fatalf("registered device %v, want platform %s, token %s, active and valid", d, platform, pushToken)
	}
	return d
}

func updatePushToken(t testing.TB, h *herald, dn, access, id, pushToken string) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, "updatePushToken", deviceDocs["updatePushToken"], map[string]any{"id": id, "token": pushToken}, withBearer(access))
	}
	status, env, hdr := h.rest(t, http.MethodPut, "/api/v1/devices/"+id+"/push-token", map[string]any{"pushToken": pushToken}, withBearer(access))
	return envelopeResult(t, "updatePushToken", status, env, hdr)
}

func removeDevice(t testing.TB, h *herald, dn, access, id string) result {
	t.Helper()
	if dn == graphQLDoor.name {
		return gql(t, h, "removeDevice", deviceDocs["removeDevice"], map[string]any{"id": id}, withBearer(access))
	}
	status, env, hdr := h.rest(t, http.MethodDelete, "/api/v1/devices/"+id, nil, withBearer(access))
	return envelopeResult(t, "removeDevice", status, env, hdr)
}

// listDevices is the caller's own devices through the door.
func listDevices(t testing.TB, h *herald, dn, access string) []map[string]any {
	t.Helper()
	var r result
	if dn == graphQLDoor.name {
		r = gql(t, h, "devices", deviceDocs["devices"], nil, withBearer(access))
		expectOK(t, "devices", r, http.StatusOK)
		if jsonPath(r.data, "pageInfo", "hasNextPage") != false {
			t.Errorf("a user's device list has a next page: %v", r.data)
		}
		r.data = jsonPath(r.data, "nodes")
	} else {
		status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/devices", nil, withBearer(access))
		r = envelopeResult(t, "devices", status, env, hdr)
		expectOK(t, "GET /api/v1/devices", r, http.StatusOK)
	}
	arr, ok := r.data.([]any)
	if !ok {
		t.Fatalf("device list %v is not an array", r.data)
	}
	out := make([]map[string]any, len(arr))
	for i, v := range arr {
		out[i] = checkDevice(t, dn, "listed device", v)
	}
	return out
}

// checkDevice checks the device record's shape (the REST one has no
// userId) and returns it.
func checkDevice(t testing.TB, dn, what string, v any) map[string]any {
	t.Helper()
	d, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: %v is not an object", what, v)
	}
	want := []string{"deviceId", "platform", "name", "pushToken", "active", "pushTokenStatus", "createdAt", "lastSeenAt"}
	if dn == graphQLDoor.name {
		want = append(want, "userId")
	}
	if len(d) != len(want) {
		t.Errorf("%s: fields %v, want exactly %v", what, slices.Sorted(maps.Keys(d)), want)
	}
	for _, k := range want {
		if _, has := d[k]; !has {
			t.Fatalf("%s: no %s in %v", what, k, d)
		}
	}
	for _, k := range []string{"createdAt", "lastSeenAt"} {
		if s, _ := d[k].(string); !isoUTC.MatchString(s) {
			t.Errorf("%s: %s %q is not ISO 8601 UTC", what, k, d[k])
		}
	}
	if id, _ := d["deviceId"].(string); id == "" {
		t.Fatalf("%s: empty deviceId in %v", what, d)
	}
	return d
}

// findDevice returns the device with the id from a list, nil when absent.
func findDevice(list []map[string]any, id string) map[string]any {
	for _, d := range list {
		if d["deviceId"] == id {
			return d
		}
	}
	return nil
}

// Notification operations (GraphQL only, scope admin).
const (
	opSendOne   = "sendNotificationByDeviceId"
	opSendAll   = "sendNotificationToAll"
	opJob       = "notificationJob"
	opJobs      = "notificationJobs"
	opCancelJob = "cancelNotificationJob"
	jobFields   = `id status subject totalRecipients sent failed invalidTokens createdAt startedAt finishedAt error`
)

var notificationDocs = map[string]string{
	opSendOne: `mutation SendOne($id: String!, $n: NotificationInput!) { sendNotificationByDeviceId(deviceId: $id, notification: $n) { status message } }`,
	opSendAll: `mutation SendAll($n: NotificationInput!) { sendNotificationToAll(notification: $n) { status message totalRecipients jobId } }`,
	opJob:     `query Job($id: ID!) { notificationJob(id: $id) { ` + jobFields + ` } }`,
	opJobs: `query Jobs($first: Int, $after: String) {
  notificationJobs(first: $first, after: $after) { nodes { ` + jobFields + ` } pageInfo { endCursor hasNextPage } }
}`,
	opCancelJob: `mutation Cancel($id: ID!) { cancelNotificationJob(id: $id) { ` + jobFields + ` } }`,
}

func notify(subject, content string, data map[string]any) map[string]any {
	n := map[string]any{"subject": subject, "content": content}
	if data != nil {
		n["data"] = data
	}
	return n
}

func sendOne(t testing.TB, h *herald, admin, deviceID string, n map[string]any) result {
	t.Helper()
	return gql(t, h, opSendOne, notificationDocs[opSendOne], map[string]any{"id": deviceID, "n": n}, withBearer(admin))
}

// broadcast queues a broadcast and returns its job id and recipients.
func broadcast(t testing.TB, h *herald, admin string, n map[string]any) (jobID string, total int) {
	t.Helper()
	r := gql(t, h, opSendAll, notificationDocs[opSendAll], map[string]any{"n": n}, withBearer(admin))
	expectOK(t, "sendNotificationToAll", r, http.StatusOK)
	m, _ := r.data.(map[string]any)
	jobID, _ = m["jobId"].(string)
	total = asInt(t, m["totalRecipients"])
	if m["status"] != "queued" || jobID == "" || m["message"] == "" {
		t.Fatalf("sendNotificationToAll = %v, want status queued, a jobId and a message", m)
	}
	return jobID, total
}

func notificationJob(t testing.TB, h *herald, admin, id string) map[string]any {
	t.Helper()
	r := gql(t, h, opJob, notificationDocs[opJob], map[string]any{"id": id}, withBearer(admin))
	expectOK(t, "notificationJob "+id, r, http.StatusOK)
	return r.data.(map[string]any)
}

// waitJob polls notificationJob until cond holds, failing after limit.
func waitJob(t testing.TB, h *herald, admin, id string, limit time.Duration, cond func(job map[string]any) bool, what string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		j := notificationJob(t, h, admin, id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: job %s never %s; last %v", limit, id, what, j)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func jobStatusIs(status string) func(map[string]any) bool {
	return func(j map[string]any) bool { return j["status"] == status }
}

// expectFinishedJob checks the counters and times of a finished job.
func expectFinishedJob(t testing.TB, j map[string]any, status string, total, sent, failed, invalid int) {
	t.Helper()
	got := [4]int{asInt(t, j["totalRecipients"]), asInt(t, j["sent"]), asInt(t, j["failed"]), asInt(t, j["invalidTokens"])}
	if j["status"] != status || got != [4]int{total, sent, failed, invalid} {
		t.Fatalf("job %v: want status %s, totalRecipients %d, sent %d, failed %d, invalidTokens %d", j, status, total, sent, failed, invalid)
	}
	var times []time.Time
	for _, k := range []string{"createdAt", "startedAt", "finishedAt"} {
		s, _ := j[k].(string)
		if !isoUTC.MatchString(s) {
			t.Fatalf("job %s %v is not ISO 8601 UTC: %v", k, j[k], j)
		}
		at, _ := time.Parse(time.RFC3339, s)
		times = append(times, at)
	}
	if !slices.IsSortedFunc(times, func(a, b time.Time) int { return a.Compare(b) }) {
		t.Errorf("job times out of order: createdAt %v startedAt %v finishedAt %v", times[0], times[1], times[2])
	}
}

// fcmData is the data FCM must receive for testData: strings as they are,
// everything else as JSON text.
var (
	testData = map[string]any{"screen": "status", "n": 42, "urgent": true, "nested": map[string]any{"a": []any{1, "x"}, "b": nil}}
	fcmData  = map[string]string{"screen": "status", "n": "42", "urgent": "true", "nested": `{"a":[1,"x"],"b":null}`}
)

func TestDevicesE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		h := startHerald(t, d, pushEnv(t, fake, fake.URL, map[string]string{"HERALD_PLAN_DEVICE_LIMITS": "trial=2,basic=3,premium=10"}))
		admin := newAdminToken(t, h, "ops@example.com")
		for _, dn := range doorNames {
			t.Run(dn, func(t *testing.T) {
				t.Run("Manage", func(t *testing.T) { testManageDevices(t, h, dn, admin) })
				t.Run("TokenMoves", func(t *testing.T) { testTokenMoves(t, h, dn, admin) })
				t.Run("PlanLimits", func(t *testing.T) { testPlanLimits(t, h, dn) })
				t.Run("ExpiredPlan", func(t *testing.T) { testExpiredPlan(t, h, dn) })
			})
		}
		t.Run("AdminListing", func(t *testing.T) { testAdminDeviceListing(t, h, admin) })
		t.Run("SendAuth", func(t *testing.T) { testSendAuth(t, h) })
		t.Run("InvalidInput", func(t *testing.T) { testNotificationInput(t, h, admin) })
		t.Run("SendOne", func(t *testing.T) { testSendOne(t, h, fake, admin) })
		t.Run("Import", func(t *testing.T) { testImport(t, h, admin) })
	})
}

// register (201 on REST) → list → a second registration of the same token
// is the same device → a new token → remove (the envelope confirms; the
// device is inactive, gone from the list, and sends find no device).
func testManageDevices(t *testing.T, h *herald, dn, admin string) {
	access, userID := newUserToken(t, h, dn, "manage-"+dn+"@example.com")
	if got := listDevices(t, h, dn, access); len(got) != 0 {
		t.Fatalf("a new user has devices: %v", got)
	}
	phone := mustRegister(t, h, dn, access, "android", "manage-"+dn+"-phone", "Pixel 9")
	tablet := mustRegister(t, h, dn, access, "ios", "manage-"+dn+"-tablet", "")
	if phone["name"] != "Pixel 9" || tablet["name"] != "iOS device" {
		t.Errorf("names %v and %v, want Pixel 9 and the default iOS device", phone["name"], tablet["name"])
	}
	if dn == graphQLDoor.name && (phone["userId"] != userID || tablet["userId"] != userID) {
		t.Errorf("userId %v/%v, want %s", phone["userId"], tablet["userId"], userID)
	}
	list := listDevices(t, h, dn, access)
	if len(list) != 2 || findDevice(list, phone["deviceId"].(string)) == nil || findDevice(list, tablet["deviceId"].(string)) == nil {
		t.Fatalf("list %v, want the two devices", list)
	}
	// The app registering its token again (every start) is the same device
	// and does not use up the plan (trial allows 2 here).
	again := registerDevice(t, h, dn, access, "android", "manage-"+dn+"-phone", "")
	expectOK(t, "registering the same token again", again, map[string]int{"graphql": 200, "rest": 201}[dn])
	if jsonPath(again.data, "deviceId") != phone["deviceId"] || jsonPath(again.data, "name") != "Pixel 9" {
		t.Fatalf("re-registration gave %v, want device %v unchanged", again.data, phone["deviceId"])
	}

	r := updatePushToken(t, h, dn, access, phone["deviceId"].(string), "manage-"+dn+"-phone-2")
	expectOK(t, "update push token", r, http.StatusOK)
	if jsonPath(r.data, "pushToken") != "manage-"+dn+"-phone-2" || jsonPath(r.data, "pushTokenStatus") != "valid" {
		t.Fatalf("updated device %v", r.data)
	}

	r = removeDevice(t, h, dn, access, tablet["deviceId"].(string))
	expectOK(t, "remove", r, http.StatusOK)
	if dn == graphQLDoor.name {
		if r.data != true {
			t.Fatalf("removeDevice = %v, want true", r.data)
		}
	} else if jsonPath(r.data, "deviceId") != tablet["deviceId"] || jsonPath(r.data, "removed") != true {
		t.Fatalf("DELETE envelope data %v, want the device id and removed: true", r.data)
	}
	list = listDevices(t, h, dn, access)
	if len(list) != 1 || list[0]["deviceId"] != phone["deviceId"] {
		t.Fatalf("list after removal %v, want only %v", list, phone["deviceId"])
	}
	expectError(t, "remove twice", removeDevice(t, h, dn, access, tablet["deviceId"].(string)), http.StatusNotFound, "DEVICE_NOT_FOUND")
	expectError(t, "new token for a removed device", updatePushToken(t, h, dn, access, tablet["deviceId"].(string), "x-"+dn), http.StatusNotFound, "DEVICE_NOT_FOUND")
	expectError(t, "send to a removed device", sendOne(t, h, admin, tablet["deviceId"].(string), notify("Hi", "there", nil)), http.StatusNotFound, "DEVICE_NOT_FOUND")
	// Admins still see it, inactive and without its token.
	all := adminDevices(t, h, admin, userID, 100)
	if gone := findDevice(all, tablet["deviceId"].(string)); gone == nil || gone["active"] != false || gone["pushToken"] != nil {
		t.Fatalf("admin listing shows the removed device as %v, want active false and pushToken null", gone)
	}

	// Another user's device is not found, whatever the operation.
	other, _ := newUserToken(t, h, dn, "manage-other-"+dn+"@example.com")
	expectError(t, "another user's device: new token", updatePushToken(t, h, dn, other, phone["deviceId"].(string), "stolen-"+dn), http.StatusNotFound, "DEVICE_NOT_FOUND")
	expectError(t, "another user's device: remove", removeDevice(t, h, dn, other, phone["deviceId"].(string)), http.StatusNotFound, "DEVICE_NOT_FOUND")

	bad := []struct{ name, platform, token string }{
		{"unknown platform", "windows", "bad-" + dn + "-1"},
		{"empty token", "android", ""},
		{"token with spaces", "android", "a b"},
	}
	for _, c := range bad {
		expectError(t, c.name, registerDevice(t, h, dn, access, c.platform, c.token, ""), http.StatusBadRequest, "VALIDATION_ERROR")
	}
	var anon result
	if dn == graphQLDoor.name {
		anon = gql(t, h, "devices", deviceDocs["devices"], nil)
	} else {
		status, env, hdr := h.rest(t, http.MethodGet, "/api/v1/devices", nil)
		anon = envelopeResult(t, "devices", status, env, hdr)
	}
	expectError(t, "devices without a token", anon, http.StatusUnauthorized, "AUTH_REQUIRED")
}

// A push token registered by another account moves: one token, one device.
func testTokenMoves(t *testing.T, h *herald, dn, admin string) {
	ann, annID := newUserToken(t, h, dn, "ann-"+dn+"@example.com")
	bob, bobID := newUserToken(t, h, dn, "bob-"+dn+"@example.com")
	token := "shared-phone-" + dn
	first := mustRegister(t, h, dn, ann, "android", token, "Ann's phone")
	second := mustRegister(t, h, dn, bob, "android", token, "Bob's phone")
	if first["deviceId"] == second["deviceId"] {
		t.Fatal("the token's new owner got the old owner's device")
	}
	annList := listDevices(t, h, dn, ann)
	old := findDevice(annList, first["deviceId"].(string))
	if old == nil || old["pushToken"] != nil || old["pushTokenStatus"] != "invalid" {
		t.Fatalf("Ann's device after the move: %v, want pushToken null and invalid", old)
	}
	if bobList := listDevices(t, h, dn, bob); len(bobList) != 1 || bobList[0]["pushToken"] != token {
		t.Fatalf("Bob's devices %v, want one with the token", bobList)
	}
	holders := 0
	for _, id := range []string{annID, bobID} {
		for _, d := range adminDevices(t, h, admin, id, 100) {
			if d["pushToken"] == token {
				holders++
			}
		}
	}
	if holders != 1 {
		t.Fatalf("%d devices hold the token, want 1", holders)
	}
	// The old device cannot be pushed to; the new one can.
	expectError(t, "send to the device that lost its token", sendOne(t, h, admin, first["deviceId"].(string), notify("Hi", "Ann", nil)), 422, "INVALID_PUSH_TOKEN")
	expectOK(t, "send to the token's new device", sendOne(t, h, admin, second["deviceId"].(string), notify("Hi", "Bob", nil)), http.StatusOK)
	// A new token makes Ann's device valid again.
	r := updatePushToken(t, h, dn, ann, first["deviceId"].(string), token+"-new")
	expectOK(t, "new token for Ann", r, http.StatusOK)
	if jsonPath(r.data, "pushTokenStatus") != "valid" {
		t.Fatalf("after a new token: %v", r.data)
	}
}

// trial=2, basic=3 here: the third device of a trial is refused with the
// details; a basic plan set by the operator allows one more.
func testPlanLimits(t *testing.T, h *herald, dn string) {
	email := "limit-" + dn + "@example.com"
	access, _ := newUserToken(t, h, dn, email)
	for i := range 2 {
		mustRegister(t, h, dn, access, "android", fmt.Sprintf("limit-%s-%d", dn, i), "")
	}
	expectLimit := func(what string, plan string, max int) {
		t.Helper()
		r := registerDevice(t, h, dn, access, "ios", "limit-"+dn+"-over-"+plan, "")
		expectError(t, what, r, http.StatusConflict, "DEVICE_LIMIT_REACHED")
		want := map[string]any{"currentDevices": float64(max), "maxDevices": float64(max), "plan": plan, "upgradeUrl": upgradeURL}
		for k, v := range want {
			if r.details[k] != v {
				t.Fatalf("%s: details %v, want %v", what, r.details, want)
			}
		}
	}
	expectLimit("third device on trial", "trial", 2)
	if n := len(listDevices(t, h, dn, access)); n != 2 {
		t.Fatalf("%d devices after a refused registration, want 2", n)
	}
	stdout, stderr, err := runHerald(t, h.Env, "", "users", "set-plan", "--email", email, "--plan", "basic", "--expires", "720h")
	if err != nil || !strings.Contains(stdout, "plan basic") {
		t.Fatalf("users set-plan: %v\n%s%s", err, stdout, stderr)
	}
	mustRegister(t, h, dn, access, "ios", "limit-"+dn+"-basic", "")
	expectLimit("fourth device on basic", "basic", 3)
}

// A plan that expired (set in the past with herald users set-plan) refuses
// new devices with SUBSCRIPTION_EXPIRED, before the limit is looked at.
func testExpiredPlan(t *testing.T, h *herald, dn string) {
	email := "expired-" + dn + "@example.com"
	access, _ := newUserToken(t, h, dn, email)
	const expired = "2020-01-02T03:04:05Z"
	stdout, stderr, err := runHerald(t, h.Env, "", "users", "set-plan", "--email", email, "--plan", "premium", "--expires", expired)
	if err != nil {
		t.Fatalf("users set-plan: %v\n%s", err, stderr)
	}
	if want := email + ": plan premium, expires " + expired; strings.TrimSpace(stdout) != want {
		t.Errorf("set-plan printed %q, want %q", stdout, want)
	}
	if st := jsonPath(me(t, h, dn, access).data, "subscription", "status"); st != "expired" {
		t.Errorf("subscription status %v, want expired", st)
	}
	r := registerDevice(t, h, dn, access, "android", "expired-"+dn, "")
	expectError(t, "register on an expired plan", r, http.StatusForbidden, "SUBSCRIPTION_EXPIRED")
	want := map[string]any{"expiredAt": expired, "plan": "premium", "renewUrl": renewURL}
	for k, v := range want {
		if r.details[k] != v {
			t.Fatalf("details %v, want %v", r.details, want)
		}
	}
	if _, _, err := runHerald(t, h.Env, "", "users", "set-plan", "--email", email, "--plan", "premium", "--expires", "2h"); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, h, dn, access, "android", "expired-"+dn, "")
}

// adminDevices walks devices(userId:) with pages of size first and returns
// every device, checking the cursors.
func adminDevices(t testing.TB, h *herald, admin, userID string, first int) []map[string]any {
	t.Helper()
	vars := map[string]any{}
	if userID != "" {
		vars["userId"] = userID
	}
	var out []map[string]any
	for _, n := range walkPages(t, h, "devices", deviceDocs["devices"], vars, first, withBearer(admin)) {
		out = append(out, checkDevice(t, graphQLDoor.name, "admin-listed device", n))
	}
	return out
}

func testAdminDeviceListing(t *testing.T, h *herald, admin string) {
	access, userID := newUserToken(t, h, restDoor.name, "listed@example.com")
	_, otherID := newUserToken(t, h, restDoor.name, "listed-other@example.com")
	if _, _, err := runHerald(t, h.Env, "", "users", "set-plan", "--email", "listed@example.com", "--plan", "premium", "--expires", "720h"); err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 5 {
		want = append(want, mustRegister(t, h, restDoor.name, access, "android", fmt.Sprintf("listed-%d", i), "")["deviceId"].(string))
	}
	expectOK(t, "remove one", removeDevice(t, h, restDoor.name, access, want[4]), http.StatusOK)

	for _, size := range []int{1, 2, 5, 50} {
		got := adminDevices(t, h, admin, userID, size)
		var ids []string
		for _, d := range got {
			ids = append(ids, d["deviceId"].(string))
			if d["userId"] != userID {
				t.Fatalf("devices(userId: %s) listed %v", userID, d)
			}
		}
		if !slices.Equal(ids, want) { // device ids are UUIDv7: in creation order
			t.Fatalf("pages of %d: %v, want %v (inactive included)", size, ids, want)
		}
	}
	all := adminDevices(t, h, admin, "", 500)
	for _, id := range want {
		if findDevice(all, id) == nil {
			t.Fatalf("devices() without userId lacks %s", id)
		}
	}
	if n := len(adminDevices(t, h, admin, otherID, 10)); n != 0 {
		t.Fatalf("a user without devices has %d", n)
	}
	refusals := []struct {
		name   string
		vars   map[string]any
		status int
		code   string
	}{
		{"unknown user", map[string]any{"userId": "00000000-0000-7000-8000-000000000000"}, 404, "USER_NOT_FOUND"},
		{"first too large", map[string]any{"first": 501}, 400, "VALIDATION_ERROR"},
		{"bad cursor", map[string]any{"after": "not-a-cursor"}, 400, "VALIDATION_ERROR"},
	}
	for _, c := range refusals {
		expectError(t, c.name, gql(t, h, "devices", deviceDocs["devices"], c.vars, withBearer(admin)), c.status, c.code)
	}
	// A user may name only themself.
	expectError(t, "a user asking for another user's devices",
		gql(t, h, "devices", deviceDocs["devices"], map[string]any{"userId": otherID}, withBearer(access)), http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
	own := gql(t, h, "devices", deviceDocs["devices"], map[string]any{"userId": userID}, withBearer(access))
	expectOK(t, "a user naming themself", own, http.StatusOK)
	if nodes, _ := jsonPath(own.data, "nodes").([]any); len(nodes) != 4 {
		t.Fatalf("a user's own listing has %d devices, want the 4 active ones", len(nodes))
	}
}

// The authentication errors of the sessions issue, on both admin mutations.
func testSendAuth(t *testing.T, h *herald) {
	user, _ := newUserToken(t, h, restDoor.name, "not-admin@example.com")
	ops := []struct {
		op   string
		vars map[string]any
	}{
		{opSendOne, map[string]any{"id": "00000000-0000-7000-8000-000000000000", "n": notify("Hi", "there", nil)}},
		{opSendAll, map[string]any{"n": notify("Hi", "there", nil)}},
	}
	creds := []struct {
		name   string
		opts   []reqOption
		status int
		code   string
	}{
		{"no token", nil, 401, "AUTH_REQUIRED"},
		{"user token", []reqOption{withBearer(user)}, 403, "INSUFFICIENT_PERMISSIONS"},
		{"bad token", []reqOption{withBearer("not.a.jwt")}, 401, "TOKEN_INVALID"},
		{"Basic scheme", []reqOption{withHeader("Authorization", "Basic Zm9vOmJhcg==")}, 401, "TOKEN_INVALID"},
	}
	for _, o := range ops {
		for _, c := range creds {
			expectError(t, o.op+" with "+c.name, gql(t, h, o.op, notificationDocs[o.op], o.vars, c.opts...), c.status, c.code)
		}
	}
	// Nothing was queued by the refused broadcasts.
	r := gql(t, h, opJobs, notificationDocs[opJobs], nil, withBearer(newAdminToken(t, h, "auth-ops@example.com")))
	expectOK(t, "notificationJobs", r, http.StatusOK)
	if nodes, _ := jsonPath(r.data, "nodes").([]any); len(nodes) != 0 {
		t.Fatalf("refused broadcasts queued jobs: %v", nodes)
	}
}

// A missing or empty subject or content is INVALID_INPUT (400), whether
// GraphQL validation (literals, variables) or the resolver catches it.
func testNotificationInput(t *testing.T, h *herald, admin string) {
	const anyDevice = "00000000-0000-7000-8000-000000000000"
	cases := []struct {
		name, op, doc string
		vars          map[string]any
	}{
		{"all: literal without subject", opSendAll, `mutation { sendNotificationToAll(notification: {content: "x"}) { jobId } }`, nil},
		{"all: literal without content", opSendAll, `mutation { sendNotificationToAll(notification: {subject: "x"}) { jobId } }`, nil},
		{"all: literal empty subject", opSendAll, `mutation { sendNotificationToAll(notification: {subject: "", content: "x"}) { jobId } }`, nil},
		{"all: literal blank content", opSendAll, `mutation { sendNotificationToAll(notification: {subject: "x", content: "   "}) { jobId } }`, nil},
		{"all: literal null subject", opSendAll, `mutation { sendNotificationToAll(notification: {subject: null, content: "x"}) { jobId } }`, nil},
		{"all: literal subject not a string", opSendAll, "mutation {\n  sendNotificationToAll(notification: {subject: 1, content: \"x\"}) { jobId }\n}", nil},
		{"all: variable subject not a string", opSendAll, notificationDocs[opSendAll], map[string]any{"n": map[string]any{"subject": 1, "content": "x"}}},
		{"all: variable without content", opSendAll, notificationDocs[opSendAll], map[string]any{"n": map[string]any{"subject": "x"}}},
		{"all: variable without subject", opSendAll, notificationDocs[opSendAll], map[string]any{"n": map[string]any{"content": "x"}}},
		{"all: variable empty subject", opSendAll, notificationDocs[opSendAll], map[string]any{"n": notify("", "x", nil)}},
		{"all: variable empty content", opSendAll, notificationDocs[opSendAll], map[string]any{"n": notify("x", "", nil)}},
		{"all: variable subject null", opSendAll, notificationDocs[opSendAll], map[string]any{"n": map[string]any{"subject": nil, "content": "x"}}},
		{"all: reserved data key", opSendAll, notificationDocs[opSendAll], map[string]any{"n": notify("x", "y", map[string]any{"from": "me"})}},
		{"one: literal without content", opSendOne, `mutation { sendNotificationByDeviceId(deviceId: "` + anyDevice + `", notification: {subject: "x"}) { status } }`, nil},
		{"one: variable empty subject", opSendOne, notificationDocs[opSendOne], map[string]any{"id": anyDevice, "n": notify(" ", "x", nil)}},
		{"one: variable without content", opSendOne, notificationDocs[opSendOne], map[string]any{"id": anyDevice, "n": map[string]any{"subject": "x"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expectError(t, c.name, gql(t, h, c.op, c.doc, c.vars, withBearer(admin)), http.StatusBadRequest, "INVALID_INPUT")
		})
	}
}

// Single sends through the fake FCM: the message as received, each dead
// token answer, a retryable answer then success, a provider that keeps
// failing, an unknown device.
func testSendOne(t *testing.T, h *herald, fake *fcmtest.Server, admin string) {
	access, _ := newUserToken(t, h, restDoor.name, "pushed@example.com")
	if _, _, err := runHerald(t, h.Env, "", "users", "set-plan", "--email", "pushed@example.com", "--plan", "premium", "--expires", "720h"); err != nil {
		t.Fatal(err)
	}
	register := func(token string) string {
		t.Helper()
		return mustRegister(t, h, restDoor.name, access, "android", token, "")["deviceId"].(string)
	}
	status := func(id string) string {
		t.Helper()
		d := findDevice(listDevices(t, h, restDoor.name, access), id)
		if d == nil {
			t.Fatalf("device %s not listed", id)
		}
		return d["pushTokenStatus"].(string)
	}

	t.Run("Sent", func(t *testing.T) {
		id := register("send-ok")
		r := sendOne(t, h, admin, id, notify("Hello", "Your VPN is ready", testData))
		expectOK(t, "send", r, http.StatusOK)
		if jsonPath(r.data, "status") != "sent" || jsonPath(r.data, "message") == "" {
			t.Fatalf("send = %v, want status sent and a message", r.data)
		}
		msgs := fake.MessagesFor("send-ok")
		if len(msgs) != 1 {
			t.Fatalf("the fake got %d messages, want 1", len(msgs))
		}
		m := msgs[0]
		if m.Project != fcmProject || !m.HasNotification || m.Title != "Hello" || m.Body != "Your VPN is ready" || !maps.Equal(m.Data, fcmData) {
			t.Fatalf("FCM got %+v, want title Hello, body, data %v in project %s", m, fcmData, fcmProject)
		}
		if fake.TokenRequests() == 0 {
			t.Error("the server never fetched an OAuth token from the credentials' token_uri")
		}
	})

	t.Run("DeadTokens", func(t *testing.T) {
		cases := []struct {
			name  string
			fault fcmtest.Fault
		}{
			{"UNREGISTERED", fcmtest.Unregistered()},
			{"SENDER_ID_MISMATCH", fcmtest.SenderIDMismatch()},
			{"INVALID_ARGUMENT token", fcmtest.InvalidToken()},
			{"INVALID_ARGUMENT message.token field", fcmtest.InvalidTokenField()},
		}
		for i, c := range cases {
			token := fmt.Sprintf("dead-%d", i)
			id := register(token)
			fake.Fail(token, -1, c.fault)
			expectError(t, c.name, sendOne(t, h, admin, id, notify("Hi", "there", nil)), 422, "INVALID_PUSH_TOKEN")
			if n := fake.Attempts(token); n != 1 {
				t.Errorf("%s: %d provider calls, want 1 (a dead token is not retried)", c.name, n)
			}
			if st := status(id); st != "invalid" {
				t.Fatalf("%s: device token %s after a dead-token answer, want invalid", c.name, st)
			}
			expectError(t, c.name+", again", sendOne(t, h, admin, id, notify("Hi", "again", nil)), 422, "INVALID_PUSH_TOKEN")
			if n := fake.Attempts(token); n != 1 {
				t.Fatalf("%s: the second send called the provider (%d calls)", c.name, n)
			}
			// The app registers a new token: valid again, and it works.
			expectOK(t, c.name+": new token", updatePushToken(t, h, restDoor.name, access, id, token+"-fresh"), http.StatusOK)
			if st := status(id); st != "valid" {
				t.Fatalf("%s: token status %s after a new token, want valid", c.name, st)
			}
			expectOK(t, c.name+": send with the new token", sendOne(t, h, admin, id, notify("Hi", "fresh", nil)), http.StatusOK)
			if fake.Delivered(token+"-fresh") != 1 {
				t.Fatalf("%s: the new token got %d messages", c.name, fake.Delivered(token+"-fresh"))
			}
		}
		// A payload the provider refuses is not the token's fault.
		id := register("bad-payload")
		fake.Fail("bad-payload", 1, fcmtest.InvalidPayload())
		expectError(t, "INVALID_ARGUMENT about the data", sendOne(t, h, admin, id, notify("Hi", "there", nil)), http.StatusBadRequest, "INVALID_INPUT")
		if st := status(id); st != "valid" {
			t.Fatalf("a refused payload marked the token %s", st)
		}
	})

	t.Run("RetryableThenSent", func(t *testing.T) {
		cases := []struct {
			name  string
			fault fcmtest.Fault
			times int
		}{
			{"UNAVAILABLE twice", fcmtest.Unavailable(0), 2},
			{"INTERNAL once", fcmtest.Internal(), 1},
			{"QUOTA_EXCEEDED with Retry-After", fcmtest.QuotaExceeded(time.Second), 1},
		}
		for i, c := range cases {
			token := fmt.Sprintf("flaky-%d", i)
			id := register(token)
			fake.Fail(token, c.times, c.fault)
			expectOK(t, c.name, sendOne(t, h, admin, id, notify("Hi", "retry", nil)), http.StatusOK)
			if a, d := fake.Attempts(token), fake.Delivered(token); a != c.times+1 || d != 1 {
				t.Fatalf("%s: %d attempts, %d delivered; want %d and 1", c.name, a, d, c.times+1)
			}
			if st := status(id); st != "valid" {
				t.Fatalf("%s: token %s", c.name, st)
			}
		}
	})

	t.Run("Upstream", func(t *testing.T) {
		id := register("upstream")
		fake.SetDown(true)
		r := sendOne(t, h, admin, id, notify("Hi", "down", nil))
		fake.SetDown(false)
		expectError(t, "provider down", r, http.StatusBadGateway, "UPSTREAM_ERROR")
		if a := fake.Attempts("upstream"); a < 2 || a > 5 {
			t.Errorf("%d attempts while the provider was down, want a short bounded retry", a)
		}
		fake.Fail("upstream", -1, fcmtest.ThirdPartyAuth())
		expectError(t, "provider refuses the credentials", sendOne(t, h, admin, id, notify("Hi", "auth", nil)), http.StatusBadGateway, "UPSTREAM_ERROR")
		fake.Fail("upstream", 0, fcmtest.Fault{})
		if st := status(id); st != "valid" {
			t.Fatalf("a provider failure marked the token %s", st)
		}
		if !strings.Contains(h.logs(), "PUSH PROVIDER MISCONFIGURED") {
			t.Error("an authentication failure of the provider was not logged loudly")
		}
		expectOK(t, "provider back", sendOne(t, h, admin, id, notify("Hi", "up", nil)), http.StatusOK)
	})

	t.Run("DeviceNotFound", func(t *testing.T) {
		for _, id := range []string{"00000000-0000-7000-8000-000000000000", "no-such-device"} {
			expectError(t, "unknown device "+id, sendOne(t, h, admin, id, notify("Hi", "there", nil)), http.StatusNotFound, "DEVICE_NOT_FOUND")
		}
	})
}

// herald devices import of a file with good and bad lines.
func testImport(t *testing.T, h *herald, admin string) {
	ann, annID := newUserToken(t, h, restDoor.name, "import-ann@example.com")
	_, bobID := newUserToken(t, h, restDoor.name, "import-bob@example.com")
	moved := mustRegister(t, h, restDoor.name, ann, "android", "import-moves", "")
	lines := []string{
		`{"email":"import-ann@example.com","platform":"android","pushToken":"import-1"}`, // 1 imported
		``,      // 2 blank: skipped
		`{oops`, // 3 not JSON
		`{"email":"nobody@example.com","platform":"android","pushToken":"import-2"}`,                      // 4 unknown account
		`{"email":"import-ann@example.com","platform":"windows","pushToken":"import-3"}`,                  // 5 bad platform
		`{"email":"import-ann@example.com","platform":"ios"}`,                                             // 6 no token
		`{"email":"Import-Ann@Example.com","platform":"ios","pushToken":"import-4","name":"Ann's iPad"}`,  // 7 imported
		`{"email":"import-ann@example.com","platform":"android","pushToken":"import-1","name":"Renamed"}`, // 8 updated (line 1's device)
		`{"email":"not-an-email","platform":"android","pushToken":"import-5"}`,                            // 9 bad email
		`{"email":"import-bob@example.com","platform":"android","pushToken":"import-moves","extra":1}`,    // 10 imported: the token moves from Ann
		`{"email":"import-ann@example.com","platform":"android","pushToken":42}`,                          // 11 token not a string
	}
	for i := range 4 { // plan limits do not apply: trial allows 2 here
		lines = append(lines, fmt.Sprintf(`{"email":"import-bob@example.com","platform":"ios","pushToken":"import-bob-%d"}`, i))
	}
	file := filepath.Join(t.TempDir(), "devices.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runHerald(t, h.Env, "", "devices", "import", "--file", file)
	if err != nil {
		t.Fatalf("devices import: %v\n%s", err, stderr)
	}
	out := strings.Split(strings.TrimSpace(stdout), "\n")
	if out[0] != "imported 7, updated 1, rejected 6" {
		t.Fatalf("import printed %q first, want the counts imported 7, updated 1, rejected 6:\n%s", out[0], stdout)
	}
	var rejected []int
	for _, l := range out[1:] {
		var n int
		if _, err := fmt.Sscanf(l, "line %d:", &n); err != nil {
			t.Fatalf("import line %q is not \"line N: reason\"", l)
		}
		rejected = append(rejected, n)
	}
	if want := []int{3, 4, 5, 6, 9, 11}; !slices.Equal(rejected, want) {
		t.Fatalf("rejected lines %v, want %v (in file order):\n%s", rejected, want, stdout)
	}
	for _, reason := range []string{"nobody@example.com", "windows", "pushToken"} {
		if !strings.Contains(stdout, reason) {
			t.Errorf("the reasons do not mention %q:\n%s", reason, stdout)
		}
	}

	annDevices := adminDevices(t, h, admin, annID, 100)
	byToken := map[any]map[string]any{}
	for _, d := range annDevices {
		byToken[d["pushToken"]] = d
	}
	if d := byToken["import-1"]; d == nil || d["name"] != "Renamed" || d["platform"] != "android" {
		t.Fatalf("import-1 on Ann: %v, want the device renamed by line 8", d)
	}
	if d := byToken["import-4"]; d == nil || d["name"] != "Ann's iPad" || d["platform"] != "ios" {
		t.Fatalf("import-4 on Ann: %v", d)
	}
	if d := findDevice(annDevices, moved["deviceId"].(string)); d == nil || d["pushToken"] != nil || d["pushTokenStatus"] != "invalid" {
		t.Fatalf("Ann's device whose token was imported for Bob: %v, want no token and invalid", d)
	}
	bobDevices := adminDevices(t, h, admin, bobID, 100)
	if len(bobDevices) != 5 {
		t.Fatalf("Bob has %d devices, want 5 (the limit does not apply to an import)", len(bobDevices))
	}
	for _, d := range bobDevices {
		if d["active"] != true || d["pushTokenStatus"] != "valid" || d["userId"] != bobID {
			t.Fatalf("imported device %v", d)
		}
	}
	// Importing the same file again changes nothing new: every good line
	// is an update.
	stdout, _, err = runHerald(t, h.Env, "", "devices", "import", "--file", file)
	if err != nil || !strings.HasPrefix(stdout, "imported 0, updated 8, rejected 6\n") {
		t.Fatalf("second import: %v\n%s", err, stdout)
	}
}

// seedDevices signs up accounts, imports n android and ios devices spread
// over them with `herald devices import` through run(), and returns their
// tokens.
func seedDevices(t testing.TB, env map[string]string, n, accounts int, signup func(email string)) []string {
	t.Helper()
	var b strings.Builder
	tokens := make([]string, n)
	for a := range accounts {
		signup(fmt.Sprintf("crowd-%d@example.com", a))
	}
	for i := range n {
		platform := "android"
		if i%5 == 0 {
			platform = "ios" // FCM reaches iOS too when APNs is not configured
		}
		tokens[i] = fmt.Sprintf("crowd-token-%06d", i)
		fmt.Fprintf(&b, `{"email":"crowd-%d@example.com","platform":%q,"pushToken":%q}`+"\n", i%accounts, platform, tokens[i])
	}
	file := filepath.Join(t.TempDir(), "crowd.jsonl")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := runHerald(t, env, "", "devices", "import", "--file", file)
	if err != nil {
		t.Fatalf("devices import: %v\n%s", err, stderr)
	}
	if want := fmt.Sprintf("imported %d, updated 0, rejected 0", n); strings.TrimSpace(stdout) != want {
		t.Fatalf("import printed %q, want %q", stdout, want)
	}
	return tokens
}

// A broadcast to 10,000 devices: each gets exactly one message with the
// right title, body and data, and the job's counters add up. Then a
// broadcast cancelled while running, the job listing and JOB_NOT_FOUND.
func TestBroadcastE2E(t *testing.T) {
	const devicesN = 10_000
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := fcmtest.NewServer(t, fcmtest.PlainHTTP())
		h := startHerald(t, d, pushEnv(t, fake, fake.URL, map[string]string{"HERALD_PUSH_RATE": "0", "HERALD_JOB_POLL": "1s"}))
		admin := newAdminToken(t, h, "ops@example.com")
		tokens := seedDevices(t, h.Env, devicesN, 7, func(email string) {
			expectOK(t, "signup "+email, call(t, h, restDoor.name, opSignup, map[string]any{"email": email, "password": testPassword}), http.StatusCreated)
		})
		// A removed device and a device with a dead token are not recipients.
		user, _ := newUserToken(t, h, restDoor.name, "few@example.com")
		gone := mustRegister(t, h, restDoor.name, user, "android", "crowd-removed", "")
		expectOK(t, "remove", removeDevice(t, h, restDoor.name, user, gone["deviceId"].(string)), http.StatusOK)
		dead := mustRegister(t, h, restDoor.name, user, "android", "crowd-dead", "")
		fake.Fail("crowd-dead", -1, fcmtest.Unregistered())
		expectError(t, "dead token", sendOne(t, h, admin, dead["deviceId"].(string), notify("x", "y", nil)), 422, "INVALID_PUSH_TOKEN")

		jobID, total := broadcast(t, h, admin, notify(pushSubject, pushContent, testData))
		if total != devicesN {
			t.Fatalf("totalRecipients %d, want %d", total, devicesN)
		}
		job := waitJob(t, h, admin, jobID, jobWait, func(j map[string]any) bool {
			return j["status"] != "queued" && j["status"] != "running"
		}, "finished")
		expectFinishedJob(t, job, "completed", devicesN, devicesN, 0, 0)
		if job["subject"] != pushSubject || job["error"] != nil {
			t.Errorf("job %v", job)
		}
		if got := fake.TotalDelivered(); got != devicesN {
			t.Fatalf("the fake got %d messages, want %d", got, devicesN)
		}
		// The metrics count each provider call and each recorded delivery.
		for sample, want := range map[string]float64{
			`herald_broadcast_deliveries_total{outcome="sent"}`:            devicesN,
			`herald_push_sends_total{outcome="sent",provider="fcm"}`:       devicesN,
			`herald_push_sends_total{outcome="dead_token",provider="fcm"}`: 1,
			`herald_push_provider_duration_seconds_count{provider="fcm"}`:  devicesN + 1,
		} {
			if got := h.metric(t, sample); got != want {
				t.Errorf("%s = %v, want %v", sample, got, want)
			}
		}
		for _, tok := range tokens {
			if n := fake.Delivered(tok); n != 1 {
				t.Fatalf("%s got %d messages, want exactly 1", tok, n)
			}
		}
		for _, m := range fake.Messages() {
			if !m.HasNotification || m.Title != pushSubject || m.Body != pushContent || !maps.Equal(m.Data, fcmData) {
				t.Fatalf("message to %s: %+v, want title %q, body %q, data %v", m.Token, m, pushSubject, pushContent, fcmData)
			}
		}
		if fake.Attempts("crowd-dead") != 1 || fake.Attempts("crowd-removed") != 0 {
			t.Fatal("the broadcast sent to a device that is not a recipient")
		}
		// Cancelling a finished job changes nothing.
		r := gql(t, h, opCancelJob, notificationDocs[opCancelJob], map[string]any{"id": jobID}, withBearer(admin))
		expectOK(t, "cancel a completed job", r, http.StatusOK)
		if jsonPath(r.data, "status") != "completed" {
			t.Fatalf("cancelling a completed job gave %v", r.data)
		}

		// Cancel while running: the same database, served again with sends
		// capped at a few hundred a second in small batches, so the job is
		// mid-way when it is cancelled; the batch in flight is finished and
		// recorded, no further batch starts.
		if err := h.stop(); err != nil {
			t.Fatal(err)
		}
		h = startHerald(t, d, pushEnv(t, fake, fake.URL, map[string]string{
			"HERALD_DATABASE_URL":    h.DBURL,
			"HERALD_PUSH_RATE":       "300",
			"HERALD_PUSH_BATCH_SIZE": "50",
			"HERALD_JOB_POLL":        "1s",
		}))
		before := fake.TotalDelivered()
		cancelled, _ := broadcast(t, h, admin, notify("Cancelled", "never all", nil))
		waitJob(t, h, admin, cancelled, pollWait, func(j map[string]any) bool {
			return j["status"] == "running" && asInt(t, j["sent"]) > 0
		}, "running with messages sent")
		r = gql(t, h, opCancelJob, notificationDocs[opCancelJob], map[string]any{"id": cancelled}, withBearer(admin))
		expectOK(t, "cancel a running job", r, http.StatusOK)
		if jsonPath(r.data, "status") != "cancelled" {
			t.Fatalf("cancelNotificationJob = %v, want status cancelled", r.data)
		}
		eventually(t, func() bool {
			return h.metric(t, `herald_jobs_total{kind="push_broadcast",outcome="completed"}`) >= 1
		}, "the cancelled broadcast's worker never stopped")
		job = notificationJob(t, h, admin, cancelled)
		sent := asInt(t, job["sent"])
		if job["status"] != "cancelled" || job["startedAt"] == nil || job["finishedAt"] == nil {
			t.Fatalf("cancelled job %v", job)
		}
		if delivered := fake.TotalDelivered() - before; sent != delivered || sent == 0 || sent >= devicesN {
			t.Fatalf("cancelled job: sent %d, the fake got %d; want the same, more than 0 and fewer than %d", sent, delivered, devicesN)
		}

		// The listing: newest first, with cursors. (The third job is
		// cancelled at once: it need not send.)
		third, _ := broadcast(t, h, admin, notify("Third", "queued last", nil))
		expectOK(t, "cancel the third job", gql(t, h, opCancelJob, notificationDocs[opCancelJob], map[string]any{"id": third}, withBearer(admin)), http.StatusOK)
		var ids []string
		for _, n := range walkPages(t, h, opJobs, notificationDocs[opJobs], nil, 1, withBearer(admin)) {
			ids = append(ids, fmt.Sprint(n["id"]))
		}
		if want := []string{third, cancelled, jobID}; !slices.Equal(ids, want) {
			t.Fatalf("notificationJobs %v, want newest first %v", ids, want)
		}

		for _, op := range []string{opJob, opCancelJob} {
			for _, id := range []string{"00000000-0000-7000-8000-000000000000", "nope"} {
				expectError(t, op+" of an unknown job", gql(t, h, op, notificationDocs[op], map[string]any{"id": id}, withBearer(admin)), http.StatusNotFound, "JOB_NOT_FOUND")
			}
		}
	})
}
