package telegram

import (
	"strings"
	"unicode"
)

// ParseCommand splits a bot command message. "/start abc" and
// "/start@HeraldBot abc" both give ("start", "abc"). The command is
// lower-cased and has no slash; the payload is trimmed. Text that is not a
// command gives ("", ""). The @BotName suffix is dropped without checking it
// names this bot.
func ParseCommand(text string) (cmd, payload string) {
	text = strings.TrimLeftFunc(text, unicode.IsSpace)
	if !strings.HasPrefix(text, "/") {
		return "", ""
	}
	head, rest := text[1:], ""
	if i := strings.IndexFunc(head, unicode.IsSpace); i >= 0 {
		head, rest = head[:i], head[i:]
	}
	if at := strings.IndexByte(head, '@'); at >= 0 {
		head = head[:at]
	}
	if head == "" || !isCommandName(head) {
		return "", ""
	}
	return strings.ToLower(head), strings.TrimSpace(rest)
}

// isCommandName accepts Telegram's command alphabet (letters, digits, _),
// so "/ 5" or "/path/to" are not mistaken for commands.
func isCommandName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
