package messenger_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
)

func TestChangeApplyLinks(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	linked := &messenger.Subscriber{ChatID: "7", Status: messenger.Subscribed, UserID: "u1", SubscribedSince: now}
	cases := []struct {
		name   string
		change messenger.Change
		prev   *messenger.Subscriber
		want   string // UserID after
	}{
		{"start with a consumed token links", messenger.Change{Kind: messenger.Subscribe, LinkUserID: "u2"}, nil, "u2"},
		{"start with another account's token moves the chat", messenger.Change{Kind: messenger.Subscribe, LinkUserID: "u2"}, linked, "u2"},
		{"plain start keeps the link", messenger.Change{Kind: messenger.Subscribe}, linked, "u1"},
		{"stop unlinks", messenger.Change{Kind: messenger.Unsubscribe}, linked, ""},
		{"blocking keeps the link", messenger.Change{Kind: messenger.Block}, linked, "u1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.change.ChatID = 7
			got := c.change.Apply(c.prev, now)
			if got == nil || got.UserID != c.want {
				t.Fatalf("got %+v, want user %q", got, c.want)
			}
		})
	}
}

func TestIsLinkToken(t *testing.T) {
	good := "link-" + strings.Repeat("aZ9_-", 8) + "abc"
	cases := map[string]bool{
		good:                          true,
		"promo-42":                    false,
		"link-":                       false,
		good + "x":                    false,
		good[:len(good)-1] + "=":      false,
		good[:len(good)-1] + "é":      false,
		"LINK-" + good[len("link-"):]: false,
	}
	for payload, want := range cases {
		if got := messenger.IsLinkToken(payload); got != want {
			t.Errorf("IsLinkToken(%q) = %v, want %v", payload, got, want)
		}
	}
}

// A link token always fits Telegram's start parameter (at most 64 of
// A-Za-z0-9_-).
func FuzzIsLinkToken(f *testing.F) {
	f.Add("link-" + strings.Repeat("a", 43))
	f.Add("promo")
	f.Fuzz(func(t *testing.T, s string) {
		if !messenger.IsLinkToken(s) {
			return
		}
		if len(s) > 64 || !messenger.ValidSecret(s) {
			t.Fatalf("%q is a link token but not a valid start parameter", s)
		}
	})
}
