package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/live"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// MessengerBroadcast is a messenger broadcast job: what REST and GraphQL
// answer, what the subscription (WebSocket) sends, and what one replica
// publishes to the others (MessengerBroadcastWire).
type MessengerBroadcast struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	TotalRecipients int        `json:"totalRecipients"`
	Sent            int        `json:"sent"`
	Failed          int        `json:"failed"`
	Blocked         int        `json:"blocked"`
	CreatedAt       time.Time  `json:"createdAt"`
	StartedAt       *time.Time `json:"startedAt"`
	FinishedAt      *time.Time `json:"finishedAt"`
	// Error says why a failed job failed.
	Error *string `json:"error"`
}

// NewMessengerBroadcast renders a broadcast, without its message.
func NewMessengerBroadcast(b messenger.Broadcast) MessengerBroadcast {
	return MessengerBroadcast{ID: b.ID, Status: b.Status, TotalRecipients: b.TotalRecipients, Sent: b.Sent, Failed: b.Failed, Blocked: b.Blocked,
		CreatedAt: seconds(b.CreatedAt), StartedAt: optionalSeconds(b.StartedAt), FinishedAt: optionalSeconds(b.FinishedAt), Error: nonEmpty(b.Error)}
}

// broadcast is the domain value v shows (without the message and options,
// which it does not carry).
func (v MessengerBroadcast) broadcast() messenger.Broadcast {
	return messenger.Broadcast{ID: v.ID, Status: v.Status, TotalRecipients: v.TotalRecipients, Sent: v.Sent, Failed: v.Failed, Blocked: v.Blocked,
		CreatedAt: v.CreatedAt, StartedAt: v.StartedAt, FinishedAt: v.FinishedAt, Error: deref(v.Error)}
}

// MessengerBroadcastWire writes a broadcast's state into a live progress
// event, as a MessengerBroadcast, and reads it back
// (messenger.BroadcastConfig.Wire). The fields are those replicas of
// earlier versions wrote, so a rolling upgrade reads both ways.
func MessengerBroadcastWire() live.Codec[messenger.Broadcast] {
	return jsonCodec(NewMessengerBroadcast, MessengerBroadcast.broadcast)
}

// MessengerSubscriber is a chat that started the bot.
type MessengerSubscriber struct {
	ChatID       string  `json:"chatId"`
	Username     *string `json:"username"`
	FirstName    *string `json:"firstName"`
	StartPayload *string `json:"startPayload"`
	// SubscribedSince is when the current subscription began.
	SubscribedSince time.Time `json:"subscribedSince"`
	Status          string    `json:"status"`
	// UserID is the account the chat is linked to; nil when none.
	UserID *string `json:"userId"`
}

// NewMessengerSubscriber renders a chat.
func NewMessengerSubscriber(s messenger.Subscriber) MessengerSubscriber {
	return MessengerSubscriber{ChatID: s.ChatID, Username: nonEmpty(s.Username), FirstName: nonEmpty(s.FirstName), StartPayload: nonEmpty(s.StartPayload),
		SubscribedSince: seconds(s.SubscribedSince), Status: string(s.Status), UserID: nonEmpty(s.UserID)}
}

// MessengerBotStatus is the bot's connection.
type MessengerBotStatus struct {
	Connected       bool    `json:"connected"`
	BotUsername     *string `json:"botUsername"`
	BotName         *string `json:"botName"`
	SubscriberCount int     `json:"subscriberCount"`
	// WebhookURL is nil when polling.
	WebhookURL *string `json:"webhookUrl"`
}

// NewMessengerBotStatus renders the bot's status.
func NewMessengerBotStatus(st messenger.Status) MessengerBotStatus {
	return MessengerBotStatus{Connected: st.Connected, BotUsername: st.BotUsername, BotName: st.BotName, SubscriberCount: st.SubscriberCount, WebhookURL: st.WebhookURL}
}

// MessengerPreview is a message as the bot would send it.
type MessengerPreview struct {
	HTML   string `json:"html"`
	Length int    `json:"length"`
}

// NewMessengerPreview renders a preview.
func NewMessengerPreview(p messenger.Preview) MessengerPreview {
	return MessengerPreview{HTML: p.HTML, Length: p.Length}
}

// MessengerLink is the caller's one-time deep link to the bot.
type MessengerLink struct {
	ExpiresAt time.Time `json:"expiresAt"`
	URL       string    `json:"url"`
}

// NewMessengerLink renders a link.
func NewMessengerLink(l messenger.LinkURL) MessengerLink {
	return MessengerLink{URL: l.URL, ExpiresAt: seconds(l.ExpiresAt)}
}

// MessengerUnlinked answers an unlink: whether a chat was linked.
type MessengerUnlinked struct {
	Unlinked bool `json:"unlinked"`
}

// MessengerMessageResult answers a message sent to one chat (GraphQL
// SendMessengerMessageResult).
type MessengerMessageResult struct {
	MessageID string `json:"messageId"`
	Success   bool   `json:"success"`
}

// MessengerOptions are a message's options as both doors take them
// (GraphQL MessengerMessageOptions).
type MessengerOptions struct {
	Silent      *bool               `json:"silent"`
	Buttons     [][]MessengerButton `json:"buttons"`
	ImageURL    *string             `json:"imageUrl"`
	DocumentURL *string             `json:"documentUrl"`
}

// MessengerButton is an inline URL button.
type MessengerButton struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// SendOptions are the options as the messenger takes them; nil options
// are none.
func (o *MessengerOptions) SendOptions() messenger.SendOptions {
	if o == nil {
		return messenger.SendOptions{}
	}
	out := messenger.SendOptions{Silent: deref(o.Silent), ImageURL: deref(o.ImageURL), DocumentURL: deref(o.DocumentURL)}
	for _, row := range o.Buttons {
		var bs []messenger.Button
		for _, b := range row {
			bs = append(bs, messenger.Button{Text: b.Text, URL: b.URL})
		}
		out.Buttons = append(out.Buttons, bs)
	}
	return out
}

// MessengerBroadcastEvent is the data of a messenger.broadcast.* webhook
// event, taken from the broadcast's wire type: its id as jobId, its
// outcome and counters, and error only when set. Its fields are in the
// order of their JSON names, the order the outbox has always written.
type MessengerBroadcastEvent struct {
	Blocked         int     `json:"blocked"`
	Error           *string `json:"error,omitempty"`
	Failed          int     `json:"failed"`
	JobID           string  `json:"jobId"`
	Sent            int     `json:"sent"`
	Status          string  `json:"status"`
	TotalRecipients int     `json:"totalRecipients"`
}

// NewMessengerBroadcastEvent is the event of a finished or cancelled
// broadcast.
func NewMessengerBroadcastEvent(b messenger.Broadcast) MessengerBroadcastEvent {
	v := NewMessengerBroadcast(b)
	return MessengerBroadcastEvent{Blocked: v.Blocked, Error: v.Error, Failed: v.Failed, JobID: v.ID, Sent: v.Sent, Status: v.Status,
		TotalRecipients: v.TotalRecipients}
}

// EventType names the event of the broadcast's final status.
func (e MessengerBroadcastEvent) EventType() string {
	return finishingEvent(e.Status, webhooks.MessengerBroadcastCompleted, webhooks.MessengerBroadcastFailed, webhooks.MessengerBroadcastCancelled)
}
