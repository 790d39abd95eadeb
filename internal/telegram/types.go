package telegram

// ParseModeHTML is the only parse mode this package produces; HTML is far
// easier to escape correctly than MarkdownV2.
const ParseModeHTML = "HTML"

// SecretTokenHeader carries the secret_token given to SetWebhook on every
// webhook request Telegram makes; compare it before trusting the body.
const SecretTokenHeader = "X-Telegram-Bot-Api-Secret-Token"

// MaxMessageLen and MaxCaptionLen are Telegram's limits, counted on the text
// after entity parsing (tags removed).
const (
	MaxMessageLen = 4096
	MaxCaptionLen = 1024
)

// User is a Telegram user or bot.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	LastName  string `json:"last_name,omitempty"`
	Username  string `json:"username,omitempty"`
}

// Chat is the chat a message or membership change belongs to.
type Chat struct {
	ID        int64  `json:"id"`
	Type      string `json:"type"` // private, group, supergroup or channel
	Title     string `json:"title,omitempty"`
	Username  string `json:"username,omitempty"`
	FirstName string `json:"first_name,omitempty"`
}

// Message is the subset of Telegram's Message that Herald uses.
type Message struct {
	MessageID int64  `json:"message_id"`
	From      *User  `json:"from,omitempty"`
	Chat      Chat   `json:"chat"`
	Date      int64  `json:"date"` // unix seconds
	Text      string `json:"text,omitempty"`
	Caption   string `json:"caption,omitempty"`
}

// ChatMember carries the status of a user in a chat: creator,
// administrator, member, restricted, left or kicked.
type ChatMember struct {
	Status string `json:"status"`
	User   User   `json:"user"`
}

// ChatMemberUpdated reports the bot's own membership changing, e.g. a user
// blocking the bot (new status "kicked") or unblocking it ("member").
type ChatMemberUpdated struct {
	Chat          Chat       `json:"chat"`
	From          User       `json:"from"`
	Date          int64      `json:"date"`
	OldChatMember ChatMember `json:"old_chat_member"`
	NewChatMember ChatMember `json:"new_chat_member"`
}

// Update is one incoming update; at most one of the pointers is set.
type Update struct {
	UpdateID     int64              `json:"update_id"`
	Message      *Message           `json:"message,omitempty"`
	MyChatMember *ChatMemberUpdated `json:"my_chat_member,omitempty"`
}

// Update types accepted in allowed_updates.
const (
	UpdateMessage      = "message"
	UpdateMyChatMember = "my_chat_member"
)

// WebhookInfo describes the current webhook registration.
type WebhookInfo struct {
	URL                  string   `json:"url"`
	HasCustomCertificate bool     `json:"has_custom_certificate"`
	PendingUpdateCount   int      `json:"pending_update_count"`
	IPAddress            string   `json:"ip_address,omitempty"`
	LastErrorDate        int64    `json:"last_error_date,omitempty"`
	LastErrorMessage     string   `json:"last_error_message,omitempty"`
	MaxConnections       int      `json:"max_connections,omitempty"`
	AllowedUpdates       []string `json:"allowed_updates,omitempty"`
}

// InlineKeyboardButton is a URL button shown under a message.
type InlineKeyboardButton struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// InlineKeyboardMarkup is a keyboard of rows of buttons.
type InlineKeyboardMarkup struct {
	InlineKeyboard [][]InlineKeyboardButton `json:"inline_keyboard"`
}

// SendOptions are the optional parameters shared by the send methods.
type SendOptions struct {
	ParseMode           string // "" for plain text, or ParseModeHTML
	DisableNotification bool
	ReplyMarkup         *InlineKeyboardMarkup
}
