package main

// Messenger broadcasts end to end (issue 14) through the real server on
// every dialect and the fake Bot API: counters, blocked chats, one message
// per subscribed chat, cancel, and the REST and GraphQL doors.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

const opSendBroadcast = "sendMessengerBroadcast"

const sendBroadcastDoc = `mutation B($message: String!, $options: MessengerMessageOptions) {
  sendMessengerBroadcast(message: $message, options: $options) { id status totalRecipients sent failed blocked createdAt startedAt finishedAt }
}`

// broadcastEnv is a server whose bot talks to fake in webhook mode (so that
// nothing polls).
func broadcastEnv(fake *telegramtest.Server) map[string]string {
	return sessionEnv(map[string]string{
		"HERALD_TELEGRAM_BOT_TOKEN":      botToken,
		"HERALD_TELEGRAM_API_URL":        fake.URL,
		"HERALD_TELEGRAM_WEBHOOK_URL":    webhookURL,
		"HERALD_TELEGRAM_WEBHOOK_SECRET": webhookSecret,
	})
}

// seedChats subscribes chats first..first+n-1 in the store, as /start would
// (without the welcome reply, so the fake sees only broadcasts).
func seedChats(t testing.TB, h *herald, first int64, n int) {
	t.Helper()
	db := h.store(t)
	for id := first; id < first+int64(n); id++ {
		if _, err := db.ApplySubscriberChange(context.Background(), messenger.Change{Kind: messenger.Subscribe, ChatID: id}); err != nil {
			t.Fatal(err)
		}
	}
}

// getMessengerBroadcast reads the job over REST.
func getMessengerBroadcast(t testing.TB, h *herald, admin, id string) map[string]any {
	t.Helper()
	status, env, _ := h.rest(t, http.MethodGet, "/api/v1/messenger/broadcasts/"+id, nil, withBearer(admin))
	if status != http.StatusOK {
		t.Fatalf("GET broadcast %s: %d %v", id, status, env)
	}
	return env["data"].(map[string]any)
}

// waitBroadcastFinished polls the job until it reaches a final status.
func waitBroadcastFinished(t testing.TB, h *herald, admin, id string) map[string]any {
	t.Helper()
	var j map[string]any
	testsupport.Eventually(t, jobWait, func() bool {
		j = getMessengerBroadcast(t, h, admin, id)
		return j["status"] == "completed" || j["status"] == "failed" || j["status"] == "cancelled"
	}, "messenger broadcast %s never finished: %v", id, j)
	return j
}

// sentWithText counts, per chat, the messages of the fake whose text is text.
func sentWithText(fake *telegramtest.Server, text string) map[string]int {
	out := map[string]int{}
	for _, m := range fake.Sent() {
		if m.Text == text {
			out[m.ChatID]++
		}
	}
	return out
}

func TestMessengerBroadcastE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := telegramtest.NewServer(t, botToken)
		h := startHerald(t, d, broadcastEnv(fake))
		admin := newAdminToken(t, h, "ops@example.com")

		const first, n = 10001, 200
		seedChats(t, h, first, n)
		// Chats that left with /stop get nothing and are not counted.
		seedChats(t, h, 20001, 5)
		for id := int64(20001); id <= 20005; id++ {
			if _, err := h.store(t).ApplySubscriberChange(context.Background(), messenger.Change{Kind: messenger.Unsubscribe, ChatID: id}); err != nil {
				t.Fatal(err)
			}
		}
		blocked, missing := map[string]bool{}, map[string]bool{}
		for i := int64(0); i < 10; i++ {
			id := strconv.FormatInt(first+3+i*17, 10)
			blocked[id] = true
			fake.FailChat(id, telegramtest.FailBlocked())
		}
		for _, id := range []int64{first + 1, first + 100, first + 199} {
			missing[strconv.FormatInt(id, 10)] = true
			fake.FailChat(strconv.FormatInt(id, 10), telegramtest.FailChatNotFound())
		}

		t.Run("every subscribed chat once, blocked counted", func(t *testing.T) {
			const text = "Big news"
			r := gql(t, h, opSendBroadcast, sendBroadcastDoc, map[string]any{"message": text}, withBearer(admin))
			expectOK(t, "sendMessengerBroadcast", r, http.StatusOK)
			created := r.data.(map[string]any)
			if created["status"] != "queued" || asInt(t, created["totalRecipients"]) != n || asInt(t, created["sent"]) != 0 {
				t.Fatalf("created %v, want queued for %d chats", created, n)
			}
			j := waitBroadcastFinished(t, h, admin, created["id"].(string))
			if j["status"] != "completed" || asInt(t, j["sent"]) != n-13 || asInt(t, j["blocked"]) != 10 || asInt(t, j["failed"]) != 3 ||
				j["startedAt"] == nil || j["finishedAt"] == nil {
				t.Fatalf("finished %v, want completed with sent %d, blocked 10, failed 3", j, n-13)
			}
			got := sentWithText(fake, text)
			for id := int64(first); id < first+n; id++ {
				chat := strconv.FormatInt(id, 10)
				want := 1
				if blocked[chat] || missing[chat] {
					want = 0 // the fake refused it, so it holds no message
				}
				if got[chat] != want {
					t.Errorf("chat %s got %d messages, want %d", chat, got[chat], want)
				}
			}
			if len(got) != n-13 {
				t.Errorf("%d chats got the broadcast, want %d (unsubscribed chats get nothing)", len(got), n-13)
			}
			// The chats that answered 403 are now blocked.
			waitSubscribers(t, h, admin, n-10)
		})

		t.Run("REST door, idempotency and errors", func(t *testing.T) {
			const text = "Over REST"
			body := map[string]any{"message": text, "options": map[string]any{"silent": true}}
			status, env, _ := h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts", body, withBearer(admin), withHeader("Idempotency-Key", "mb-rest-1"))
			if status != http.StatusAccepted {
				t.Fatalf("POST: %d %v", status, env)
			}
			job := env["data"].(map[string]any)
			status, again, _ := h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts", body, withBearer(admin), withHeader("Idempotency-Key", "mb-rest-1"))
			if status != http.StatusAccepted || again["data"].(map[string]any)["id"] != job["id"] {
				t.Fatalf("repeat with the same key: %d %v, want job %v", status, again, job["id"])
			}
			status, env, _ = h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts", map[string]any{"message": "other"}, withBearer(admin), withHeader("Idempotency-Key", "mb-rest-1"))
			if r := envelopeResult(t, "reused key", status, env, nil); r.code != "IDEMPOTENCY_KEY_REUSED" {
				t.Fatalf("reused key: %d %v", status, env)
			}
			j := waitBroadcastFinished(t, h, admin, job["id"].(string))
			if j["status"] != "completed" || asInt(t, j["sent"]) != n-13 {
				t.Fatalf("finished %v", j)
			}
			got := sentWithText(fake, text)
			if len(got) != n-13 {
				t.Fatalf("%d chats got the REST broadcast once or more, want %d", len(got), n-13)
			}
			for chat, c := range got {
				if c != 1 {
					t.Fatalf("chat %s got the REST broadcast %d times (sent twice for one key?)", chat, c)
				}
			}
			for _, c := range []struct {
				name, method, path string
				body               any
				status             int
				code               string
			}{
				{"empty message", http.MethodPost, "/api/v1/messenger/broadcasts", map[string]any{"message": " "}, 400, "INVALID_MESSAGE"},
				{"unknown job", http.MethodGet, "/api/v1/messenger/broadcasts/nope", nil, 404, "JOB_NOT_FOUND"},
				{"cancel unknown job", http.MethodDelete, "/api/v1/messenger/broadcasts/nope", nil, 404, "JOB_NOT_FOUND"},
			} {
				status, env, _ := h.rest(t, c.method, c.path, c.body, withBearer(admin))
				if r := envelopeResult(t, c.name, status, env, nil); r.status != c.status || r.code != c.code {
					t.Errorf("%s: %d %v, want %d %s", c.name, status, env, c.status, c.code)
				}
			}
			status, env, _ = h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts", map[string]any{"message": "x"})
			if status != http.StatusUnauthorized {
				t.Errorf("without credentials: %d %v", status, env)
			}
		})

		t.Run("live progress over WebSocket", func(t *testing.T) {
			const text = "Live"
			ws := dialWS(t, h, "graphql-transport-ws")
			ws.init(map[string]any{"token": admin})
			r := gql(t, h, opSendBroadcast, sendBroadcastDoc, map[string]any{"message": text}, withBearer(admin))
			expectOK(t, "sendMessengerBroadcast", r, http.StatusOK)
			id := r.data.(map[string]any)["id"].(string)
			ws.subscribe("m", `subscription M($id: ID!) { messengerBroadcastUpdated(id: $id) { id status totalRecipients sent failed blocked finishedAt } }`, map[string]any{"id": id})
			var updates []map[string]any
			for done := false; !done; {
				m := ws.next()
				switch {
				case m.code != 0:
					t.Fatalf("closed with %d %q while following the job", m.code, m.reason)
				case m.Type == "complete" && m.ID == "m":
					done = true
				case m.Type == "next" && m.ID == "m":
					var p struct {
						Data   map[string]map[string]any `json:"data"`
						Errors []any                     `json:"errors"`
					}
					if err := json.Unmarshal(m.Payload, &p); err != nil || len(p.Errors) > 0 {
						t.Fatalf("next %s: %v", m.Payload, err)
					}
					updates = append(updates, p.Data["messengerBroadcastUpdated"])
				default:
					t.Fatalf("unexpected %+v %s", m, m.Payload)
				}
			}
			if len(updates) < 2 || updates[0]["status"] == "completed" {
				t.Fatalf("updates %v: want the state at subscription, then progress", updates)
			}
			for i := 1; i < len(updates); i++ {
				if asInt(t, updates[i]["sent"]) < asInt(t, updates[i-1]["sent"]) {
					t.Fatalf("sent went back: %v then %v", updates[i-1], updates[i])
				}
			}
			last := updates[len(updates)-1]
			if last["status"] != "completed" || asInt(t, last["sent"]) != n-13 || asInt(t, last["failed"]) != 3 || last["finishedAt"] == nil {
				t.Fatalf("last update %v, want completed with %d sent", last, n-13)
			}
			t.Logf("%d live updates", len(updates))
		})

		t.Run("scopes and the GraphQL read and cancel", func(t *testing.T) {
			sender, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "mb-sender", "scopes": []string{"messenger:send"}})
			pusher, _ := createKey(t, h, restDoor.name, admin, map[string]any{"name": "mb-pusher", "scopes": []string{"notifications:send"}})
			user, _ := newUserToken(t, h, restDoor.name, "someone@example.com")
			for _, c := range []struct {
				name string
				opt  reqOption
			}{{"key without messenger:send", withHeader("X-API-Key", pusher)}, {"a user", withBearer(user)}} {
				r := gql(t, h, opSendBroadcast, sendBroadcastDoc, map[string]any{"message": "no"}, c.opt)
				expectError(t, c.name, r, http.StatusForbidden, "INSUFFICIENT_PERMISSIONS")
			}
			const text = "With a key"
			r := gql(t, h, opSendBroadcast, sendBroadcastDoc, map[string]any{"message": text}, withHeader("X-API-Key", sender))
			expectOK(t, "sendMessengerBroadcast with a key", r, http.StatusOK)
			id := r.data.(map[string]any)["id"].(string)
			const readDoc = `query R($id: ID!) { messengerBroadcast(id: $id) { id status totalRecipients sent failed blocked } }`
			const cancelDoc = `mutation C($id: ID!) { cancelMessengerBroadcast(id: $id) { id status finishedAt } }`
			r = gql(t, h, "cancelMessengerBroadcast", cancelDoc, map[string]any{"id": id}, withHeader("X-API-Key", sender))
			expectOK(t, "cancelMessengerBroadcast", r, http.StatusOK)
			if got := r.data.(map[string]any); got["status"] != "cancelled" || got["finishedAt"] == nil {
				t.Fatalf("cancelled: %v", got)
			}
			r = gql(t, h, "messengerBroadcast", readDoc, map[string]any{"id": id}, withHeader("X-API-Key", sender))
			expectOK(t, "messengerBroadcast", r, http.StatusOK)
			if got := r.data.(map[string]any); got["id"] != id || got["status"] != "cancelled" || asInt(t, got["totalRecipients"]) != n-10 {
				t.Fatalf("read: %v", got)
			}
			r = gql(t, h, "messengerBroadcast", readDoc, map[string]any{"id": "nope"}, withBearer(admin))
			expectError(t, "unknown job", r, http.StatusNotFound, "JOB_NOT_FOUND")
		})

		t.Run("cancel stops before the next batch", func(t *testing.T) {
			const text = "Cancel me"
			r := gql(t, h, opSendBroadcast, sendBroadcastDoc, map[string]any{"message": text}, withBearer(admin))
			expectOK(t, "sendMessengerBroadcast", r, http.StatusOK)
			id := r.data.(map[string]any)["id"].(string)
			// Cancel mid-walk, once the first chats have it.
			eventually(t, func() bool { return len(sentWithText(fake, text)) > 0 }, "the broadcast never started")
			status, env, _ := h.rest(t, http.MethodDelete, "/api/v1/messenger/broadcasts/"+id, nil, withBearer(admin))
			if status != http.StatusOK || env["data"].(map[string]any)["status"] != "cancelled" {
				t.Fatalf("cancel: %d %v", status, env)
			}
			atCancel := len(sentWithText(fake, text))
			// Give a worker that was mid-batch the time to notice.
			time.Sleep(time.Second)
			j := getMessengerBroadcast(t, h, admin, id)
			after := len(sentWithText(fake, text))
			if j["status"] != "cancelled" || j["finishedAt"] == nil {
				t.Fatalf("after cancel: %v", j)
			}
			if limit := atCancel + messengerBatchSize; after > limit || after >= n-10 {
				t.Fatalf("%d chats got the cancelled broadcast, %d at the cancel: more than one batch (%d) went on", after, atCancel, messengerBatchSize)
			}
			// Cancelling again answers the job as it is.
			status, env, _ = h.rest(t, http.MethodDelete, "/api/v1/messenger/broadcasts/"+id, nil, withBearer(admin))
			if status != http.StatusOK || env["data"].(map[string]any)["status"] != "cancelled" {
				t.Fatalf("cancel twice: %d %v", status, env)
			}
			t.Logf("cancelled after %d of %d chats", after, n-10)
		})

		t.Run("an audience reaches the linked chats of its accounts", func(t *testing.T) {
			// Two linked chats: an Android user on premium and a user with
			// no device on the trial; every other chat is not linked.
			_, android := newUserToken(t, h, restDoor.name, "linked-android@example.com")
			access, _ := newUserToken(t, h, restDoor.name, "linked-none@example.com")
			_, none := jwtParts(t, access)
			if r := registerDeviceAs(t, h, android, "android"); r != "" {
				t.Fatal(r)
			}
			status, env, _ := h.rest(t, http.MethodPut, "/api/v1/admin/users/"+android+"/subscription",
				map[string]any{"plan": "premium", "expiresAt": time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)}, withBearer(admin))
			if status != http.StatusOK {
				t.Fatalf("set plan: %d %v", status, env)
			}
			for chat, user := range map[int64]string{30001: android, 30002: fmt.Sprint(none["sub"])} {
				if _, err := h.store(t).ApplySubscriberChange(context.Background(), messenger.Change{Kind: messenger.Subscribe, ChatID: chat, LinkUserID: user}); err != nil {
					t.Fatal(err)
				}
			}
			const doc = `mutation B($message: String!, $audience: AudienceInput) {
  sendMessengerBroadcast(message: $message, audience: $audience) { id status totalRecipients }
}`
			for _, c := range []struct {
				text     string
				audience map[string]any
				want     []string
			}{
				{"To Android premium", map[string]any{"platforms": []string{"android"}, "plans": []string{"premium"}}, []string{"30001"}},
				{"To every linked chat", map[string]any{}, []string{"30001", "30002"}},
				{"To nobody", map[string]any{"subscriptionStatus": "expired"}, nil},
			} {
				r := gql(t, h, opSendBroadcast, doc, map[string]any{"message": c.text, "audience": c.audience}, withBearer(admin))
				expectOK(t, "sendMessengerBroadcast", r, http.StatusOK)
				created := r.data.(map[string]any)
				if asInt(t, created["totalRecipients"]) != len(c.want) {
					t.Fatalf("%s: created %v, want %d recipients", c.text, created, len(c.want))
				}
				j := waitBroadcastFinished(t, h, admin, created["id"].(string))
				if j["status"] != "completed" || asInt(t, j["sent"]) != len(c.want) {
					t.Fatalf("%s: finished %v", c.text, j)
				}
				got := sentWithText(fake, c.text)
				if len(got) != len(c.want) {
					t.Fatalf("%s: sent to %v, want %v", c.text, got, c.want)
				}
				for _, chat := range c.want {
					if got[chat] != 1 {
						t.Fatalf("%s: sent to %v, want once to each of %v", c.text, got, c.want)
					}
				}
			}
			status, env, _ = h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts",
				map[string]any{"message": "x", "audience": map[string]any{"platforms": []string{"windows"}}}, withBearer(admin))
			if r := envelopeResult(t, "bad audience", status, env, nil); r.status != http.StatusBadRequest || r.code != "VALIDATION_ERROR" {
				t.Fatalf("bad audience: %d %v", status, env)
			}
			status, env, _ = h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts",
				map[string]any{"message": "Over REST to Android", "audience": map[string]any{"platforms": []string{"android"}}}, withBearer(admin))
			if status != http.StatusAccepted || asInt(t, env["data"].(map[string]any)["totalRecipients"]) != 1 {
				t.Fatalf("REST with an audience: %d %v", status, env)
			}
		})
	})
}

// registerDeviceAs registers an Android or iOS device for the account id
// straight in the store; it returns "" or what went wrong.
func registerDeviceAs(t *testing.T, h *herald, accountID, platform string) string {
	t.Helper()
	_, err := devices.Register(context.Background(), h.store(t), devices.NewDevice{ID: "dev-" + accountID, AccountID: accountID, Platform: platform, Name: "Phone", PushToken: "tok-" + accountID},
		func(devices.Quota) error { return nil })
	if err != nil {
		return err.Error()
	}
	return ""
}

// messengerBatchSize is the server's default broadcast batch: the most
// chats a cancel or a crash lets through.
const messengerBatchSize = 20

// The real binary, killed with SIGKILL in the middle of a messenger
// broadcast and started again, finishes the job from its cursor: every
// subscribed chat has the message, and the chats that have it twice are
// at most one batch, contiguous in chat id order (the batch whose outcome
// was not yet recorded). 300 chats keep the paced run (30/s) short; the
// takeover waits for the dead worker's lease (15s) to expire.
func TestMessengerBroadcastSurvivesKillE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the real binary")
	}
	bin := buildHerald(t, t.TempDir())
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		const first, n, text = 50001, 1000, "Survives a kill"
		fake := telegramtest.NewServer(t, botToken)
		env := binaryEnv(t, d, broadcastEnv(fake))
		env["HERALD_LOG_LEVEL"] = "warn"
		env["HERALD_TELEGRAM_RATE"] = "200" // paced, but 1,000 chats in seconds
		// Every 50th chat blocked the bot.
		blocked := map[string]bool{}
		for id := int64(first + 7); id < first+n; id += 50 {
			blocked[strconv.FormatInt(id, 10)] = true
			fake.FailChat(strconv.FormatInt(id, 10), telegramtest.FailBlocked())
		}
		if _, stderr, err := runHerald(t, env, "", "admin", "create", "--email", "ops@example.com", "--password", testPassword); err != nil {
			t.Fatalf("admin create: %v\n%s", err, stderr)
		}
		h, p := startBinary(t, bin, d, env)
		seedChats(t, h, first, n)
		admin := login(t, h, restDoor.name, "ops@example.com", testPassword).access
		status, env2, _ := h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts", map[string]any{"message": text}, withBearer(admin))
		if status != http.StatusAccepted || asInt(t, env2["data"].(map[string]any)["totalRecipients"]) != n {
			t.Fatalf("POST: %d %v", status, env2)
		}
		id := env2["data"].(map[string]any)["id"].(string)
		eventually(t, func() bool { return len(sentWithText(fake, text)) >= n/4 }, "the broadcast never got going")
		p.kill(t)
		atKill := len(sentWithText(fake, text))
		if atKill >= n {
			t.Fatalf("the broadcast was over before the kill")
		}
		t.Logf("killed after %d of %d chats", atKill, n)

		h2, _ := startBinary(t, bin, d, env)
		admin = login(t, h2, restDoor.name, "ops@example.com", testPassword).access
		j := waitBroadcastFinished(t, h2, admin, id)
		// A blocked chat of the batch lost at the kill was marked blocked
		// but not counted; the walk after the restart skips it.
		if j["status"] != "completed" || asInt(t, j["sent"]) != n-len(blocked) || asInt(t, j["failed"]) != 0 ||
			asInt(t, j["blocked"]) > len(blocked) || asInt(t, j["blocked"]) < len(blocked)-1 {
			t.Fatalf("after the restart: %v, want completed with %d sent and %d blocked (one fewer if its batch was lost at the kill)", j, n-len(blocked), len(blocked))
		}
		got := sentWithText(fake, text)
		var twice []int64
		for id := int64(first); id < first+n; id++ {
			if blocked[strconv.FormatInt(id, 10)] {
				if c := got[strconv.FormatInt(id, 10)]; c != 0 {
					t.Fatalf("blocked chat %d holds %d messages", id, c)
				}
				continue
			}
			switch c := got[strconv.FormatInt(id, 10)]; c {
			case 1:
			case 2:
				twice = append(twice, id)
			default:
				t.Fatalf("chat %d got %d messages, want 1 (2 at most within one batch)", id, c)
			}
		}
		if len(twice) > messengerBatchSize || len(twice) > 0 && twice[len(twice)-1]-twice[0] >= messengerBatchSize {
			t.Fatalf("chats that got it twice: %v; want at most one batch (%d chats in a row)", twice, messengerBatchSize)
		}
		t.Logf("%d chats got the message twice (the batch in flight at the kill)", len(twice))
	})
}
