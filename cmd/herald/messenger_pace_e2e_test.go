package main

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

// Two replicas on one database and one Redis send to the same chats at
// once, by direct sends and by two broadcasts: the bot's pace of one
// message a second per chat holds across them (it is booked in Redis).
// Each replica pacing alone sent to one chat milliseconds apart.
func TestMessengerPaceSharedAcrossReplicasE2E(t *testing.T) {
	redisURL := testRedisURL(t)
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		fake := telegramtest.NewServer(t, botToken)
		env := broadcastEnv(fake)
		env["HERALD_REDIS_URL"] = redisURL
		a := startHerald(t, d, env)
		env["HERALD_DATABASE_URL"] = a.DBURL
		b := startHerald(t, d, env)
		admin := newAdminToken(t, a, "ops@example.com")
		// Chat ids no other test books in the shared Redis.
		first := 7_000_000_000 + time.Now().UnixNano()%1_000_000_000
		direct := strconv.FormatInt(first+100, 10)

		var wg sync.WaitGroup
		for i, h := range []*herald{a, b, a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, env, _ := h.rest(t, http.MethodPost, "/api/v1/messenger/messages", map[string]any{"chatId": direct, "message": fmt.Sprintf("direct %d", i)}, withBearer(admin))
				if status != http.StatusOK {
					t.Errorf("direct send %d: %d %v", i, status, env)
				}
			}()
		}
		seedChats(t, a, first, 3)
		var ids []string
		for i, h := range []*herald{a, b} {
			status, env, _ := h.rest(t, http.MethodPost, "/api/v1/messenger/broadcasts", map[string]any{"message": fmt.Sprintf("broadcast %d", i)}, withBearer(admin))
			if status != http.StatusAccepted {
				t.Fatalf("broadcast %d: %d %v", i, status, env)
			}
			ids = append(ids, env["data"].(map[string]any)["id"].(string))
		}
		wg.Wait()
		for _, id := range ids {
			if j := waitBroadcastFinished(t, a, admin, id); j["status"] != "completed" || asInt(t, j["sent"]) != 3 {
				t.Fatalf("broadcast %s: %v, want completed with 3 sent", id, j)
			}
		}

		perChat := map[string][]time.Time{}
		for _, m := range fake.Sent() {
			perChat[m.ChatID] = append(perChat[m.ChatID], m.At)
		}
		want := map[string]int{direct: 4}
		for i := range int64(3) {
			want[strconv.FormatInt(first+i, 10)] = 2
		}
		for chat, n := range want {
			at := perChat[chat]
			if len(at) != n {
				t.Fatalf("chat %s got %d messages, want %d", chat, len(at), n)
			}
			slices.SortFunc(at, func(x, y time.Time) int { return x.Compare(y) })
			// Booked a second apart; half of it leaves room for a message
			// delayed on its way to the fake.
			for i := 1; i < len(at); i++ {
				if gap := at[i].Sub(at[i-1]); gap < limits.ChatGap/2 {
					t.Errorf("chat %s: messages %d and %d arrived %s apart, want about %s", chat, i, i+1, gap, limits.ChatGap)
				}
			}
		}
	})
}
