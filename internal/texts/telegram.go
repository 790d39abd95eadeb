// Package texts holds the words Herald says to end users outside email
// (whose templates live in internal/mail/templates): the Telegram bot's
// replies. Domain packages name what to say; this package says it.
package texts

import "github.com/herald-vpn/herald/internal/messenger"

var telegramReplies = map[messenger.Reply]string{
	messenger.ReplyWelcome:       "Welcome! You are now subscribed to messages from this bot. Send /stop at any time to unsubscribe.",
	messenger.ReplyAlready:       "You are already subscribed. Send /stop to unsubscribe.",
	messenger.ReplyGoodbye:       "You have unsubscribed and will get no more messages. Send /start to subscribe again.",
	messenger.ReplyNotSubscribed: "You are not subscribed. Send /start to subscribe.",
	messenger.ReplyHelp:          "Send /start to subscribe to messages from this bot and /stop to unsubscribe.",
	messenger.ReplyLinked:        "Your Telegram is now linked to your account: you will get its notifications here. Send /stop to unlink and unsubscribe.",
	messenger.ReplyLinkExpired:   "This link has expired (links last 15 minutes). Ask the app for a new one; your chat was not linked.",
	messenger.ReplyLinkUsed:      "This link has already been used. Ask the app for a new one; your chat was not linked.",
	messenger.ReplyLinkUnknown:   "This link is not valid. Ask the app for a new one; your chat was not linked.",
	messenger.ReplyLinkInGroup:   "Accounts link to a private chat with this bot only; open the link from your own Telegram account. Nothing was linked.",
}

// TelegramReply words one of the bot's replies (messenger.Config.Replies).
func TelegramReply(r messenger.Reply) string { return telegramReplies[r] }
