package messenger

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/telegram"
)

// FuzzTelegramUpdate decodes a body as the Telegram webhook does
// (telegram.Update) and interprets it as HandleUpdate does, holding what
// the bot may do with any update: the update survives a JSON round trip;
// only /start, /stop and /help are answered; a change names the update's
// own chat and one of the four kinds; a bot's message changes nothing; a
// kept /start payload is bounded and never a link token, and a link token
// is consumed (hashed) only from a private chat.
func FuzzTelegramUpdate(f *testing.F) {
	token := "link-" + strings.Repeat("A", 43)
	for _, seed := range []string{
		`{"update_id":1,"message":{"message_id":7,"from":{"id":42,"is_bot":false,"first_name":"Ann","username":"ann"},"chat":{"id":42,"type":"private","first_name":"Ann"},"date":1767225600,"text":"/start promo"}}`,
		`{"update_id":2,"message":{"message_id":8,"from":{"id":42,"first_name":"Ann"},"chat":{"id":42,"type":"private"},"text":"/start ` + token + `"}}`,
		`{"update_id":3,"message":{"message_id":9,"from":{"id":42,"first_name":"Ann"},"chat":{"id":-1001,"type":"supergroup","title":"Team"},"text":"/start@herald_bot ` + token + `"}}`,
		`{"update_id":4,"message":{"chat":{"id":42,"type":"private"},"text":"/STOP"}}`,
		`{"update_id":5,"message":{"chat":{"id":42,"type":"private"},"text":"  /help extra"}}`,
		`{"update_id":6,"message":{"from":{"id":9,"is_bot":true},"chat":{"id":42,"type":"private"},"text":"/start"}}`,
		`{"update_id":7,"my_chat_member":{"chat":{"id":42,"type":"private"},"from":{"id":42},"date":1,"old_chat_member":{"status":"member","user":{"id":1,"is_bot":true}},"new_chat_member":{"status":"kicked","user":{"id":1,"is_bot":true}}}}`,
		`{"update_id":8,"my_chat_member":{"chat":{"id":-100,"type":"channel","title":"News"},"new_chat_member":{"status":"administrator"}}}`,
		`{"update_id":9,"message":{"chat":{"id":42,"type":"private"},"text":"/start ` + strings.Repeat("é", 300) + `"}}`,
		`{"update_id":9223372036854775807,"message":{"chat":{"id":-9223372036854775808}}}`,
		`{"update_id":1e3}`, `{"update_id":-1}`, `{}`, `null`, `[]`, ``, "\x00",
		`{"update_id":1,"message":{"chat":{"id":1},"text":"/start \xff\xfe"}}`,
		`{"update_id":1,"message":{"chat":{"id":1},"text":"/start \u0000"}}`,
		`{"update_id":1,"edited_message":{"chat":{"id":1},"text":"/start"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var u telegram.Update
		if json.Unmarshal(body, &u) != nil {
			return // the webhook answers 400 VALIDATION_ERROR
		}
		enc, err := json.Marshal(u)
		if err != nil {
			t.Fatalf("cannot encode the update %+v: %v", u, err)
		}
		var again telegram.Update
		if err := json.Unmarshal(enc, &again); err != nil || !reflect.DeepEqual(u, again) {
			t.Fatalf("update %s came back as %+v (%v), want %+v", enc, again, err, u)
		}

		change, cmd, chatID := interpret(u)
		if c2, cmd2, id2 := interpret(u); !reflect.DeepEqual(change, c2) || cmd != cmd2 || chatID != id2 {
			t.Fatalf("interpret is not deterministic for %s", enc)
		}
		switch cmd {
		case "", "start", "stop", "help", cmdStartLinkInGroup:
		default:
			t.Fatalf("update %s answers the unknown command %q", enc, cmd)
		}
		if cmd != "" && (u.Message == nil || chatID != u.Message.Chat.ID) {
			t.Fatalf("update %s answers %q in chat %d, not the message's chat", enc, cmd, chatID)
		}
		if u.Message != nil && u.Message.From != nil && u.Message.From.IsBot && (change != nil || cmd != "") {
			t.Fatalf("a bot's message %s changed %+v or answered %q", enc, change, cmd)
		}
		if change == nil {
			return
		}
		switch change.Kind {
		case Subscribe, Unsubscribe, Block, Unblock:
		default:
			t.Fatalf("update %s made a change of kind %q", enc, change.Kind)
		}
		var chat telegram.Chat
		if u.Message != nil {
			chat = u.Message.Chat
		} else {
			chat = u.MyChatMember.Chat
		}
		if change.ChatID != chat.ID {
			t.Fatalf("update %s changes chat %d, not its own %d", enc, change.ChatID, chat.ID)
		}
		if n := utf8.RuneCountInString(change.Payload); n > maxPayload {
			t.Fatalf("update %s keeps a payload of %d runes, over %d", enc, n, maxPayload)
		}
		if change.Payload != "" && change.Kind != Subscribe {
			t.Fatalf("update %s keeps a payload on a %s", enc, change.Kind)
		}
		if IsLinkToken(change.Payload) || change.LinkUserID != "" {
			t.Fatalf("update %s keeps a link token or links an account itself: %+v", enc, change)
		}
		if change.LinkTokenHash != "" && (change.Kind != Subscribe || chat.Type != "private" || change.Payload != "") {
			t.Fatalf("update %s consumes a link token outside a private /start: %+v", enc, change)
		}
		if cmd == cmdStartLinkInGroup && (change.LinkTokenHash != "" || change.Payload != "") {
			t.Fatalf("a link token in a group (%s) was kept: %+v", enc, change)
		}
	})
}
