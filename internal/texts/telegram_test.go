package texts_test

import (
	"testing"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/texts"
)

// Every reply the bot can choose has words: a new messenger.Reply without
// a text here would send users an empty message.
func TestEveryTelegramReplyHasText(t *testing.T) {
	seen := map[string]messenger.Reply{}
	for _, r := range messenger.Replies {
		text := texts.TelegramReply(r)
		if text == "" {
			t.Errorf("reply %q has no text", r)
		}
		if other, dup := seen[text]; dup {
			t.Errorf("replies %q and %q have the same text %q", other, r, text)
		}
		seen[text] = r
	}
}
