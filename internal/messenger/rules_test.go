package messenger_test

import (
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
)

func TestChangeApply(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	row := func(st messenger.SubscriberStatus) *messenger.Subscriber {
		return &messenger.Subscriber{ChatID: "7", Username: "old", FirstName: "Old", StartPayload: "first", SubscribedSince: t0, Status: st, UpdatedAt: t0}
	}
	cases := []struct {
		name      string
		kind      messenger.ChangeKind
		payload   string
		prev      *messenger.Subscriber
		wantNil   bool
		status    messenger.SubscriberStatus
		since     time.Time
		wantPay   string
		wantNames bool // names refreshed from the change
	}{
		{"start a new chat", messenger.Subscribe, "promo", nil, false, messenger.Subscribed, now, "promo", true},
		{"start while subscribed keeps since", messenger.Subscribe, "", row(messenger.Subscribed), false, messenger.Subscribed, t0, "first", true},
		{"start after stop starts anew", messenger.Subscribe, "second", row(messenger.Unsubscribed), false, messenger.Subscribed, now, "second", true},
		{"start while blocked starts anew", messenger.Subscribe, "", row(messenger.Blocked), false, messenger.Subscribed, now, "first", true},
		{"stop an unknown chat", messenger.Unsubscribe, "", nil, true, "", time.Time{}, "", false},
		{"stop a subscriber", messenger.Unsubscribe, "", row(messenger.Subscribed), false, messenger.Unsubscribed, t0, "first", true},
		{"stop twice", messenger.Unsubscribe, "", row(messenger.Unsubscribed), true, "", time.Time{}, "", false},
		{"stop a blocked chat", messenger.Unsubscribe, "", row(messenger.Blocked), false, messenger.Unsubscribed, t0, "first", true},
		{"block an unknown chat", messenger.Block, "", nil, true, "", time.Time{}, "", false},
		{"block a subscriber", messenger.Block, "", row(messenger.Subscribed), false, messenger.Blocked, t0, "first", true},
		{"block after stop", messenger.Block, "", row(messenger.Unsubscribed), true, "", time.Time{}, "", false},
		{"unblock restores", messenger.Unblock, "", row(messenger.Blocked), false, messenger.Subscribed, t0, "first", true},
		{"unblock a subscriber", messenger.Unblock, "", row(messenger.Subscribed), true, "", time.Time{}, "", false},
		{"unblock after stop", messenger.Unblock, "", row(messenger.Unsubscribed), true, "", time.Time{}, "", false},
		{"unblock an unknown chat", messenger.Unblock, "", nil, true, "", time.Time{}, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := messenger.Change{Kind: c.kind, ChatID: 7, Username: "new", FirstName: "New", Payload: c.payload}
			var before messenger.Subscriber
			if c.prev != nil {
				before = *c.prev
			}
			got := ch.Apply(c.prev, now)
			if c.prev != nil && *c.prev != before {
				t.Fatal("Apply modified the previous row")
			}
			if c.wantNil {
				if got != nil {
					t.Fatalf("got %+v, want no change", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no change")
			}
			if got.ChatID != "7" || got.Status != c.status || !got.SubscribedSince.Equal(c.since) || got.StartPayload != c.wantPay || !got.UpdatedAt.Equal(now) {
				t.Fatalf("got %+v", got)
			}
			if c.wantNames && (got.Username != "new" || got.FirstName != "New") {
				t.Fatalf("names not refreshed: %+v", got)
			}
		})
	}
	// Empty names in a change keep the stored ones.
	got := messenger.Change{Kind: messenger.Subscribe, ChatID: 7}.Apply(row(messenger.Subscribed), now)
	if got.Username != "old" || got.FirstName != "Old" {
		t.Fatalf("names lost: %+v", got)
	}
}
