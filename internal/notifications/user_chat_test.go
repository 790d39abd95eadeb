package notifications_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/notifications"
)

// chats stands in for the messenger: the chat a user linked and how a send
// to it ends (the e2e tests cover the real bot against a fake Telegram).
type chats struct {
	mu     sync.Mutex
	linked map[string]string // userID -> chat id
	err    error
	texts  []string
}

func (c *chats) SendToLinkedChat(_ context.Context, userID, text string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	chat, ok := c.linked[userID]
	if !ok {
		return "", false, nil
	}
	c.texts = append(c.texts, text)
	return chat, true, c.err
}

func TestSendToUserTelegramChannel(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		c := &chats{linked: map[string]string{}}
		e := newEnv(t, url, withConfig(func(cfg *notifications.Config) { cfg.Chats = c }))
		ctx := context.Background()
		withDevice := e.device(t, "android", "fcm-chat-1").AccountID
		alone := e.account(t, "alone@example.com")
		c.linked[withDevice], c.linked[alone] = "701", "702"
		noChat := e.account(t, "nochat@example.com")

		cases := []struct {
			name       string
			user       string
			channels   []string
			chatErr    error
			wantStatus string
			want       []string // outcomes as channel:status
		}{
			{"push only leaves the chat out", withDevice, nil, nil, notifications.UserSent, []string{"push:sent"}},
			{"push and telegram", withDevice, []string{"push", "telegram"}, nil, notifications.UserSent, []string{"push:sent", "telegram:sent"}},
			{"telegram alone skips devices", withDevice, []string{"telegram"}, nil, notifications.UserSent, []string{"telegram:sent"}},
			{"a failed chat makes it partial", withDevice, []string{"push", "telegram"}, apperr.New(apperr.UpstreamError), notifications.UserPartial, []string{"push:sent", "telegram:failed"}},
			{"a blocked chat", alone, []string{"telegram"}, apperr.New(apperr.ChatBlocked), notifications.UserFailed, []string{"telegram:blocked"}},
			{"no chat and no device", noChat, []string{"push", "telegram"}, nil, notifications.UserNoRecipients, nil},
		}
		for _, tc := range cases {
			c.err = tc.chatErr
			res, err := e.svc.SendToUser(ctx, tc.user, hello, notifications.UserSendOptions{Channels: tc.channels})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			var got []string
			for _, o := range res.Outcomes {
				got = append(got, o.Channel+":"+o.Status)
				if o.Channel == notifications.ChannelTelegram && (o.ChatID == "" || o.DeviceID != "" || (o.Status != "sent") != (o.Error != "")) {
					t.Fatalf("%s: chat outcome %+v", tc.name, o)
				}
			}
			if res.Status != tc.wantStatus || !slices.Equal(got, tc.want) {
				t.Fatalf("%s: status %s outcomes %v, want %s %v", tc.name, res.Status, got, tc.wantStatus, tc.want)
			}
		}
		if len(c.texts) == 0 || c.texts[0] != hello.Subject+"\n\n"+hello.Content {
			t.Fatalf("chat texts %q, want the subject, a blank line and the content", c.texts)
		}
	})
}

// A disabled account's devices and chat get nothing: no_recipients, read
// from the account's own row.
func TestSendToUserDisabledAccount(t *testing.T) {
	eachDB(t, func(t *testing.T, url string) {
		c := &chats{linked: map[string]string{}}
		e := newEnv(t, url, withConfig(func(cfg *notifications.Config) { cfg.Chats = c }))
		ctx := context.Background()
		user := e.device(t, "android", "fcm-disabled-1").AccountID
		c.linked[user] = "703"
		if _, err := e.db.SetDisabled(ctx, user, true, "abuse", func(accounts.Standing) error { return nil }); err != nil {
			t.Fatal(err)
		}
		res, err := e.svc.SendToUser(ctx, user, hello, notifications.UserSendOptions{Channels: []string{notifications.ChannelPush, notifications.ChannelTelegram}})
		if err != nil || res.Status != notifications.UserNoRecipients || len(res.Outcomes) != 0 {
			t.Fatalf("a send to a disabled account = %+v, %v; want no_recipients", res, err)
		}
		if e.fcm.Delivered("fcm-disabled-1") != 0 || len(c.texts) != 0 {
			t.Fatalf("a disabled account got %d pushes and %d chat messages", e.fcm.Delivered("fcm-disabled-1"), len(c.texts))
		}
	})
}
