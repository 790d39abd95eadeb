package notifications

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"encoding/json"
	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
	"time"
)

// Channels of sendNotificationToUser.
const (
	ChannelPush = "push"
	// ChannelTelegram is the Telegram chat the user linked to the account.
	ChannelTelegram = "telegram"
	// ChannelEmail is the account's verified email address: the email is
	// a durable job (EmailArgs), not sent while the request waits.
	ChannelEmail = "email"
	// ChannelInbox is the user's in-app inbox: the outcome of an item kept
	// (UserSendOptions.Inbox), platform and channel "inbox".
	ChannelInbox = preferences.ChannelInbox
)

// InboxKeeper keeps what a send asks to keep in the in-app inbox
// (inbox.Service implements it).
type InboxKeeper interface {
	// Keep writes it to its account's inbox and tells the account's live
	// subscribers.
	Keep(ctx context.Context, it inbox.Item) (inbox.Item, error)
	// KeepBroadcast writes broadcast jobID's items, once however often
	// it is called.
	KeepBroadcast(ctx context.Context, jobID string) (int64, error)
}

// ChatSender sends a text to the Telegram chat linked to a user
// (messenger.Service implements it).
type ChatSender interface {
	// SendToLinkedChat sends text to userID's linked, subscribed chat;
	// found is false when there is none (nothing is sent). err is a
	// catalogue error, CHAT_BLOCKED when the user blocked the bot.
	SendToLinkedChat(ctx context.Context, userID, text string) (chatID string, found bool, err error)
}

// Statuses of a send to a user: every device got it, some did, none did,
// or the user has no device to send to (not an error).
const (
	UserSent         = "sent"
	UserPartial      = "partial"
	UserFailed       = "failed"
	UserNoRecipients = "no_recipients"
	// UserHeld: the user's quiet hours hold the send until they end
	// (HeldUntil); it is delivered then, under the preferences of then.
	UserHeld = "held"
	// UserDigested: folded into the user's digest of the category
	// (digest.go), sent at HeldUntil.
	UserDigested = "digested"
)

// Outcomes of one device in a send to a user.
const (
	OutcomeSent         = "sent"
	OutcomeInvalidToken = "invalid_token"
	OutcomeFailed       = "failed"
	// OutcomeBlocked: the linked Telegram chat blocked the bot.
	OutcomeBlocked = "blocked"
	// OutcomeQueued: the email is a job that sends it in the background
	// (retried until the mail server takes it); a send counts it as done.
	OutcomeQueued = "queued"
)

// DeviceOutcome is how the send to one device, or to the linked Telegram
// chat, went.
type DeviceOutcome struct {
	DeviceID string `json:"deviceId,omitempty"` // "" for the chat and the email
	// ChatID is the linked chat's id (channel telegram), "" for a device.
	ChatID string `json:"chatId,omitempty"`
	// Platform is android, ios, web or huawei for a device, telegram for
	// the chat, email for the email.
	Platform string `json:"platform"`
	Channel  string `json:"channel"`
	// Status is OutcomeSent, OutcomeInvalidToken or OutcomeFailed for a
	// device; OutcomeSent, OutcomeFailed or OutcomeBlocked for the chat;
	// OutcomeQueued for the email.
	Status string `json:"status"`
	// Error is the catalogue code of a failed or invalid_token outcome.
	Error string `json:"error,omitempty"`
}

// UserSendResult is the answer of SendToUser. It is stored as JSON by the
// idempotency layer, hence the tags.
type UserSendResult struct {
	UserID   string          `json:"userId"`
	Status   string          `json:"status"`
	Message  string          `json:"message"`
	Outcomes []DeviceOutcome `json:"outcomes"`
	// Skipped counts the devices and the chat not sent to, per reason.
	Skipped SkipCounts `json:"skipped"`
	// HeldUntil is when a held send is delivered (status held), or the
	// digest a send joined (status digested).
	HeldUntil *time.Time `json:"heldUntil,omitempty"`
}

// SkipCounts counts the recipients of a send skipped, per reason.
type SkipCounts struct {
	// OptedOut: the user turned the send's category off on that channel.
	OptedOut int `json:"optedOut"`
	// Capped: the user already had the category's cap of sends that day
	// (preferences.Category.Cap); every capped channel of the send is
	// skipped, each recipient counted.
	Capped int `json:"capped"`
}

// UserSendOptions are sendNotificationToUser's optional arguments.
type UserSendOptions struct {
	// Channels are ChannelPush (the default), ChannelTelegram and
	// ChannelEmail.
	Channels []string
	// Category is the notification category ("" is
	// preferences.DefaultCategory).
	Category string
	// Urgent sends pass through the user's quiet hours, as critical
	// categories do.
	Urgent bool
	// Inbox also keeps the notification in the user's in-app inbox, when
	// the user allows its category on the inbox channel: one more
	// outcome, channel "inbox", status "sent".
	Inbox bool
	// digest: the send is a digest's (DigestWorker), not folded again.
	digest bool
}

// DeviceChannel is the preference channel of a device of platform: a
// browser's push subscription is web push, any other device push.
func DeviceChannel(platform string) string {
	if platform == devices.PlatformWeb {
		return preferences.ChannelWebPush
	}
	return preferences.ChannelPush
}

// SendToUser pushes n now to every active device of the user that has a
// valid push token, at once, and answers one outcome per such device.
// channels defaults to push; with telegram, the subject and content also
// go to the user's linked, subscribed Telegram chat (one more outcome);
// with opts.Inbox the notification is kept in the user's inbox first (one
// more outcome, channel inbox, status sent), so a user with no device
// still has it;
// with email, a job (EmailArgs) is queued that emails them to the
// account's verified address (one more outcome, queued). An account
// without a verified address (a guest's placeholder, an address not yet
// verified) gets no email and no outcome for it. Another channel is
// INVALID_INPUT (field channels). USER_NOT_FOUND for an unknown user; a
// user without such a device, chat or address, or whose account is
// disabled, is status no_recipients, not an error.
//
// A category with a cap (preferences.Category.Cap) counts the send once
// against the user's cap of the day when it has a recipient on a capped
// channel (push, web push, Telegram, email; not the inbox); over the cap,
// those recipients are skipped and counted in Skipped.Capped. Critical
// categories and urgent sends are never capped. The send is counted under
// its idempotency request (idempotency.RequestID) when it has one, so a
// retry of it does not count twice.
func (s *Service) SendToUser(ctx context.Context, userID string, n Notification, opts UserSendOptions) (UserSendResult, error) {
	sendID := idempotency.RequestID(ctx)
	if sendID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return UserSendResult{}, err
		}
		sendID = "send:" + id.String()
	}
	return s.sendToUser(ctx, userID, n, opts, sendID)
}

// sendToUser is SendToUser, the send named sendID for the user's cap.
func (s *Service) sendToUser(ctx context.Context, userID string, n Notification, opts UserSendOptions, sendID string) (UserSendResult, error) {
	if err := n.Validate(); err != nil {
		return UserSendResult{}, err
	}
	channels := opts.Channels
	if err := checkChannels(channels); err != nil {
		return UserSendResult{}, err
	}
	category, err := s.category(opts.Category)
	if err != nil {
		return UserSendResult{}, err
	}
	acct, err := s.store.AccountByID(ctx, userID)
	if errors.Is(err, storage.ErrNotFound) {
		return UserSendResult{}, apperr.Newf(apperr.UserNotFound, "No user with the id %q.", userID)
	} else if err != nil {
		return UserSendResult{}, err
	}
	if acct.Disabled() { // the row just read says it; no second query
		return UserSendResult{UserID: userID, Status: UserNoRecipients, Message: "The account is disabled; it gets no notifications.", Outcomes: []DeviceOutcome{}}, nil
	}
	if window, ok := s.cfg.Digests[category]; ok && !opts.Urgent && !opts.digest {
		return s.digest(ctx, userID, n, opts, category, window)
	}
	var sched preferences.Schedule
	now := s.cfg.Now()
	if !opts.Urgent && !s.cfg.Categories.Critical(category) {
		if sched, err = s.store.NotificationSchedule(ctx, userID); err != nil {
			return UserSendResult{}, err
		}
		if until, held := sched.HoldUntil(now); held {
			return s.hold(ctx, userID, n, opts, until)
		}
	}
	settings, err := s.store.NotificationSettings(ctx, userID)
	if err != nil {
		return UserSendResult{}, err
	}
	allows := func(channel string) bool { return s.cfg.Categories.Allows(settings, category, channel) }
	var skipped SkipCounts
	push, telegram, email := channelSet(channels)
	var list []devices.Device
	if push {
		if list, err = s.store.ListDevices(ctx, userID); err != nil {
			return UserSendResult{}, err
		}
		list = slices.DeleteFunc(list, func(d devices.Device) bool {
			if d.PushTokenStatus != devices.TokenValid || d.PushToken == "" {
				return true
			}
			if !allows(DeviceChannel(d.Platform)) {
				skipped.OptedOut++
				return true
			}
			return false
		})
	}
	if telegram && !allows(preferences.ChannelTelegram) {
		// Whether a chat is linked is not asked: the user said no.
		telegram = false
		skipped.OptedOut++
	}
	noAddress := false
	switch {
	case !email:
	case !allows(preferences.ChannelEmail):
		email = false
		skipped.OptedOut++
	case !HasEmailAddress(acct):
		email, noAddress = false, true
	}
	if limit := s.cfg.Categories.CapOf(category, opts.Urgent); limit > 0 {
		recipients := len(list)
		if telegram {
			recipients++
		}
		if email {
			recipients++
		}
		if recipients > 0 {
			allowed, err := preferences.UseCap(ctx, s.store, preferences.CapUse{AccountID: userID, Category: category, Window: sched.CapWindow(now), SendID: sendID, Limit: limit})
			if err != nil {
				return UserSendResult{}, err
			}
			if !allowed {
				skipped.Capped = recipients
				list, telegram, email = nil, false, false
			}
		}
	}
	var mailed *DeviceOutcome
	if email {
		// Queued before any push goes out: a refused insert fails the
		// whole send, which the caller may then repeat.
		if err := s.store.EnqueueJob(ctx, EmailArgs{AccountID: userID, Subject: n.Subject, Content: n.Content, Category: category}); err != nil {
			return UserSendResult{}, err
		}
		mailed = &DeviceOutcome{Platform: ChannelEmail, Channel: ChannelEmail, Status: OutcomeQueued}
	}
	var kept *DeviceOutcome
	if opts.Inbox {
		if kept, err = s.keepInInbox(ctx, userID, n, category, settings, &skipped); err != nil {
			return UserSendResult{}, err
		}
	}
	res := UserSendResult{UserID: userID, Outcomes: make([]DeviceOutcome, len(list)), Skipped: skipped}
	var chat *DeviceOutcome
	var wg sync.WaitGroup
	if telegram && s.cfg.Chats != nil {
		wg.Go(func() {
			chatID, found, err := s.cfg.Chats.SendToLinkedChat(ctx, userID, chatText(n))
			if !found && err == nil {
				return
			}
			o := DeviceOutcome{ChatID: chatID, Platform: ChannelTelegram, Channel: ChannelTelegram, Status: OutcomeSent}
			if err != nil {
				o.Status, o.Error = OutcomeFailed, string(apperr.As(err).Code)
				if apperr.Is(err, apperr.ChatBlocked) {
					o.Status = OutcomeBlocked
				}
			}
			chat = &o
		})
	}
	for i, d := range list {
		wg.Go(func() {
			o := DeviceOutcome{DeviceID: d.ID, Platform: d.Platform, Channel: ChannelPush, Status: OutcomeSent}
			if err := s.deliver(ctx, d, n); err != nil {
				o.Status, o.Error = OutcomeFailed, string(apperr.As(err).Code)
				if apperr.Is(err, apperr.InvalidPushToken) {
					o.Status = OutcomeInvalidToken
				}
			}
			res.Outcomes[i] = o
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return UserSendResult{}, ctx.Err()
	}
	if chat != nil {
		res.Outcomes = append(res.Outcomes, *chat)
	}
	if mailed != nil {
		res.Outcomes = append(res.Outcomes, *mailed)
	}
	if kept != nil {
		res.Outcomes = append(res.Outcomes, *kept)
	}
	res.Status, res.Message = userStatus(res.Outcomes, skipped, category, missing{push: push, telegram: telegram, email: noAddress})
	return res, nil
}

// keepInInbox keeps n in the user's inbox when they allow category there
// (else counts it opted out), before anything is sent: a store that
// cannot keep it fails the send, which the caller may repeat. nil when
// nothing was kept.
func (s *Service) keepInInbox(ctx context.Context, userID string, n Notification, category string, settings []preferences.Setting, skipped *SkipCounts) (*DeviceOutcome, error) {
	if !s.cfg.Categories.Allows(settings, category, preferences.ChannelInbox) {
		skipped.OptedOut++
		return nil, nil
	}
	if s.cfg.Inbox == nil {
		return nil, nil
	}
	if _, err := s.cfg.Inbox.Keep(ctx, inbox.Item{AccountID: userID, Title: n.Subject, Body: n.Content, Data: n.Data, Category: category}); err != nil {
		return nil, err
	}
	return &DeviceOutcome{Platform: ChannelInbox, Channel: ChannelInbox, Status: OutcomeSent}, nil
}

// HasEmailAddress reports whether the email channel can reach acct: an
// address of its own, verified. A guest's placeholder is not one.
func HasEmailAddress(acct accounts.Account) bool {
	return !acct.Guest && acct.Email != "" && acct.Verified()
}

// missing are the channels a send asked for that found nothing to reach
// (for the message of a send that reached nobody).
type missing struct{ push, telegram, email bool }

// userStatus is a send's status and message from its outcomes: sent when
// every recipient got it (a queued email counts), partial when some did,
// failed when none did, no_recipients when there was none.
func userStatus(outcomes []DeviceOutcome, skipped SkipCounts, category string, m missing) (string, string) {
	sent, queued := 0, 0
	for _, o := range outcomes {
		switch o.Status {
		case OutcomeSent:
			sent++
		case OutcomeQueued:
			queued++
		}
	}
	total, what := len(outcomes), "devices"
	if total > 0 && slices.ContainsFunc(outcomes, func(o DeviceOutcome) bool { return o.Channel != ChannelPush }) {
		what = "recipients"
	}
	done := sent + queued
	note := ""
	if queued > 0 {
		note = " The email is queued: it goes out in the background."
	}
	switch {
	case total == 0 && skipped.Capped > 0:
		return UserNoRecipients, fmt.Sprintf("The user already had the day's cap of %s notifications; nothing was sent.", category)
	case total == 1 && outcomes[0].Channel == ChannelInbox && done == 1 && skipped.Capped > 0:
		return UserSent, fmt.Sprintf("Kept in the user's inbox; the other channels were skipped: the user already had the day's cap of %s notifications.", category)
	case total == 0 && skipped.OptedOut > 0:
		return UserNoRecipients, fmt.Sprintf("The user turned %s notifications off on the channels asked; nothing was sent.", category)
	case total == 0:
		var lacks []string
		if m.push {
			lacks = append(lacks, "no device with a valid push token")
		}
		if m.telegram {
			lacks = append(lacks, "no linked Telegram chat")
		}
		if m.email {
			lacks = append(lacks, "no verified email address")
		}
		if len(lacks) == 0 {
			return UserNoRecipients, "Nothing was sent."
		}
		if len(lacks) > 1 {
			lacks = append(lacks[:len(lacks)-2], lacks[len(lacks)-2]+" and "+lacks[len(lacks)-1])
		}
		return UserNoRecipients, "The user has " + strings.Join(lacks, ", ") + "; nothing was sent."
	case total == 1 && outcomes[0].Channel == ChannelInbox && done == 1:
		return UserSent, "Kept in the user's inbox; no other recipient on the channels asked."
	case done == total:
		return UserSent, fmt.Sprintf("Notification sent to %d of %d %s.%s", done, total, what, note)
	case done > 0:
		return UserPartial, fmt.Sprintf("Notification sent to %d of %d %s.%s", done, total, what, note)
	}
	return UserFailed, fmt.Sprintf("Notification sent to none of %d %s.", total, what)
}

// channelSet says which channels a send uses; none named is push alone.
func channelSet(channels []string) (push, telegram, email bool) {
	if len(channels) == 0 {
		return true, false, false
	}
	return slices.Contains(channels, ChannelPush), slices.Contains(channels, ChannelTelegram), slices.Contains(channels, ChannelEmail)
}

// chatText is a notification as a Telegram message: the subject, a blank
// line and the content.
func chatText(n Notification) string {
	return strings.TrimSpace(n.Subject + "\n\n" + n.Content)
}

func checkChannels(channels []string) error {
	for _, c := range channels {
		switch c {
		case ChannelPush, ChannelTelegram, ChannelEmail:
		default:
			return invalidInput("channels", fmt.Sprintf("Unknown channel %q; the channels are push, telegram and email.", c))
		}
	}
	return nil
}

// Idempotent forms of the sends, for the doors: each runs the send under
// idempotency.Do with its name and arguments as the request, so the same
// key and arguments answer the first answer through either door.

// SendToDeviceIdempotent is SendToDevice under the idempotency key k.
func (s *Service) SendToDeviceIdempotent(ctx context.Context, k idempotency.Key, deviceID string, n Notification) (SendResult, error) {
	return idempotency.Do(ctx, k, "sendNotificationByDeviceId", []any{deviceID, n}, func(ctx context.Context) (SendResult, error) {
		return s.SendToDevice(ctx, deviceID, n)
	})
}

// SendToUserIdempotent is SendToUser under the idempotency key k.
func (s *Service) SendToUserIdempotent(ctx context.Context, k idempotency.Key, userID string, n Notification, opts UserSendOptions) (UserSendResult, error) {
	return idempotency.Do(ctx, k, "sendNotificationToUser", []any{userID, n, opts}, func(ctx context.Context) (UserSendResult, error) {
		return s.SendToUser(ctx, userID, n, opts)
	})
}

// BroadcastIdempotent is Broadcast under the idempotency key k: a repeat
// answers the job as it was queued, and queues nothing.
func (s *Service) BroadcastIdempotent(ctx context.Context, k idempotency.Key, n Notification, opts BroadcastOptions) (Job, error) {
	return idempotency.Do(ctx, k, "sendNotificationToAll", []any{n, opts}, func(ctx context.Context) (Job, error) {
		return s.BroadcastWith(ctx, n, opts)
	})
}

// SendToToken pushes n now to a bare push token of platform, without a
// device record: an operator's test of a token. The answer is
// SendToDevice's; a dead token is INVALID_PUSH_TOKEN and marks nothing.
// VALIDATION_ERROR for an unknown platform or a malformed token.
func (s *Service) SendToToken(ctx context.Context, platform, token string, n Notification) (SendResult, error) {
	if err := n.Validate(); err != nil {
		return SendResult{}, err
	}
	if err := devices.ValidatePlatform(platform); err != nil {
		return SendResult{}, err
	}
	token, err := s.cfg.Tokens.Normalize(platform, token)
	if err != nil {
		return SendResult{}, err
	}
	if err := s.deliver(ctx, devices.Device{Platform: platform, PushToken: token, PushTokenStatus: devices.TokenValid}, n); err != nil {
		return SendResult{}, err
	}
	return SendResult{Status: StatusSent, Message: fmt.Sprintf("Notification sent to the %s token.", platform)}, nil
}

// SendToTokenIdempotent is SendToToken under the idempotency key k.
func (s *Service) SendToTokenIdempotent(ctx context.Context, k idempotency.Key, platform, token string, n Notification) (SendResult, error) {
	return idempotency.Do(ctx, k, "sendNotificationByToken", []any{platform, token, n}, func(ctx context.Context) (SendResult, error) {
		return s.SendToToken(ctx, platform, token, n)
	})
}

// HeldSendArgs is a send to a user held by their quiet hours: River runs
// it when they end, and it is sent then as SendToUser sends (the
// preferences, devices and quiet hours of then).
type HeldSendArgs struct {
	UserID  string          `json:"user_id"`
	Subject string          `json:"subject"`
	Content string          `json:"content"`
	Data    json.RawMessage `json:"data,omitempty"` // kept as JSON: large numbers stay exact
	Options PushOptions     `json:"options"`
	// Channels, Category and Inbox are the send's UserSendOptions.
	Channels []string `json:"channels,omitempty"`
	Category string   `json:"category"`
	Inbox    bool     `json:"inbox,omitempty"`
	// Digest: the held send is a digest's, not folded again.
	Digest bool `json:"digest,omitempty"`
}

// Kind implements river.JobArgs.
func (HeldSendArgs) Kind() string { return "held_user_send" }

// hold schedules the send for until and answers it held.
func (s *Service) hold(ctx context.Context, userID string, n Notification, opts UserSendOptions, until time.Time) (UserSendResult, error) {
	data, err := n.encodeData()
	if err != nil {
		return UserSendResult{}, err
	}
	args := HeldSendArgs{UserID: userID, Subject: n.Subject, Content: n.Content, Data: data, Options: n.Options, Channels: opts.Channels, Category: opts.Category, Inbox: opts.Inbox, Digest: opts.digest}
	if err := s.store.ScheduleJob(ctx, args, until); err != nil {
		return UserSendResult{}, err
	}
	return UserSendResult{UserID: userID, Status: UserHeld, Outcomes: []DeviceOutcome{}, HeldUntil: &until,
		Message: fmt.Sprintf("The user's quiet hours hold the notification until %s; it is sent then.", until.Format(time.RFC3339))}, nil
}

// refusedSend is the catalogue error of a send a later run would refuse
// again (the user gone, the category no longer configured): the jobs that
// send later (held sends, digests) drop it instead of retrying. A store or
// provider that failed (INTERNAL_ERROR, SERVICE_UNAVAILABLE) is retried.
func refusedSend(err error) (*apperr.Error, bool) {
	ae, ok := errors.AsType[*apperr.Error](err)
	return ae, ok && ae.Code != apperr.Internal && ae.Code != apperr.ServiceUnavailable
}

// HeldSendWorker sends held sends; register it with river.AddWorker.
type HeldSendWorker struct {
	river.WorkerDefaults[HeldSendArgs]
	Service *Service
}

// Work implements river.Worker. A user gone, or a send no longer valid
// (its category removed from the configuration), cancels the job; a
// failure to reach the store or a provider is retried by River.
func (w *HeldSendWorker) Work(ctx context.Context, job *river.Job[HeldSendArgs]) error {
	a := job.Args
	data, err := DecodeData(a.Data)
	if err != nil {
		return river.JobCancel(err)
	}
	// The send is named by its job: a retried job counts once against the
	// user's cap.
	res, err := w.Service.sendToUser(ctx, a.UserID, Notification{Subject: a.Subject, Content: a.Content, Data: data, Options: a.Options},
		UserSendOptions{Channels: a.Channels, Category: a.Category, Inbox: a.Inbox, digest: a.Digest}, "held:"+strconv.FormatInt(job.ID, 10))
	if ae, ok := refusedSend(err); ok {
		w.Service.cfg.Logger.WarnContext(ctx, "held send dropped", "user_id", a.UserID, "code", ae.Code)
		return river.JobCancel(err)
	}
	if err != nil {
		return err
	}
	w.Service.cfg.Logger.InfoContext(ctx, "held send delivered", "user_id", a.UserID, "status", res.Status, "job_id", job.ID)
	return nil
}
