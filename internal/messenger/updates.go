package messenger

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/telegram"
)

// The bot's answers to its commands.
const (
	replyWelcome       = "Welcome! You are now subscribed to messages from this bot. Send /stop at any time to unsubscribe."
	replyAlready       = "You are already subscribed. Send /stop to unsubscribe."
	replyGoodbye       = "You have unsubscribed and will get no more messages. Send /start to subscribe again."
	replyNotSubscribed = "You are not subscribed. Send /start to subscribe."
	replyHelp          = "Send /start to subscribe to messages from this bot and /stop to unsubscribe."
)

// maxPayload bounds the stored /start payload (Telegram's deep links carry
// at most 64 characters).
const maxPayload = 256

// HandleUpdate processes one update exactly once by its update_id: /start
// subscribes the chat, /stop unsubscribes it, my_chat_member kicked/left
// blocks and member restores it. The bot answers /start, /stop and /help
// after the change is stored. Only a database failure is an error; the
// update can then be delivered again.
func (s *Service) HandleUpdate(ctx context.Context, u telegram.Update) error {
	if u.UpdateID <= 0 {
		return apperr.Invalid("update_id", "a positive update id", strconv.FormatInt(u.UpdateID, 10))
	}
	change, cmd, chatID := interpret(u)
	out, err := s.store.ApplyTelegramUpdate(ctx, u.UpdateID, change)
	if err != nil {
		return err
	}
	if out.Duplicate {
		s.log.DebugContext(ctx, "telegram update already processed", "update_id", u.UpdateID)
		return nil
	}
	if change != nil && out.Changed {
		s.log.InfoContext(ctx, "telegram subscriber changed", "update_id", u.UpdateID, "chat_id", out.After.ChatID,
			"change", string(change.Kind), "status", string(out.After.Status))
	}
	if text := replyFor(cmd, out); text != "" {
		s.reply(ctx, chatID, text)
	}
	return nil
}

// interpret turns an update into a subscription change and the command
// to answer ("" for none).
func interpret(u telegram.Update) (change *Change, cmd string, chatID int64) {
	switch {
	case u.Message != nil:
		m := u.Message
		if m.From != nil && m.From.IsBot {
			return nil, "", 0
		}
		cmd, payload := telegram.ParseCommand(m.Text)
		c := changeFor(m.Chat)
		if m.From != nil && m.Chat.Type == "private" {
			c.Username, c.FirstName = m.From.Username, m.From.FirstName
		}
		switch cmd {
		case "start":
			c.Kind = Subscribe
			if r := []rune(payload); len(r) > maxPayload {
				payload = string(r[:maxPayload])
			}
			c.Payload = payload
			return c, cmd, m.Chat.ID
		case "stop":
			c.Kind = Unsubscribe
			return c, cmd, m.Chat.ID
		case "help":
			return nil, cmd, m.Chat.ID
		}
	case u.MyChatMember != nil:
		mc := u.MyChatMember
		c := changeFor(mc.Chat)
		switch mc.NewChatMember.Status {
		case "kicked", "left":
			c.Kind = Block
		case "member", "administrator":
			c.Kind = Unblock
		default:
			return nil, "", 0
		}
		return c, "", 0
	}
	return nil, "", 0
}

// changeFor starts a change for chat c, naming it by its first name or,
// for groups and channels, its title. The caller sets the kind.
func changeFor(c telegram.Chat) *Change {
	ch := &Change{ChatID: c.ID, Username: c.Username, FirstName: c.FirstName}
	if ch.FirstName == "" {
		ch.FirstName = c.Title
	}
	return ch
}

func replyFor(cmd string, out Outcome) string {
	switch cmd {
	case "start":
		if !out.Changed || out.Before != nil && out.Before.Status == Subscribed {
			return replyAlready
		}
		return replyWelcome
	case "stop":
		if out.Changed {
			return replyGoodbye
		}
		return replyNotSubscribed
	case "help":
		return replyHelp
	}
	return ""
}

// reply answers a command in plain text. A failed answer is logged, never
// retried: the change it confirms is already stored.
func (s *Service) reply(ctx context.Context, chatID int64, text string) {
	if s.bot == nil {
		return
	}
	id := formatChatID(chatID)
	_, err := s.deliver(ctx, id, func(ctx context.Context) (telegram.Message, error) {
		return s.bot.SendMessage(ctx, id, text, telegram.SendOptions{})
	})
	if err != nil {
		s.log.WarnContext(ctx, "telegram reply not sent", "chat_id", id, "reason", reasonOf(err), "err", err)
	}
}

// webhookTimeout bounds the handling of one webhook delivery; it is not
// tied to the request so that a stored change still gets its reply when
// Telegram hangs up.
const webhookTimeout = 30 * time.Second

// WebhookHandler serves POST /webhooks/telegram. A request whose
// X-Telegram-Bot-Api-Secret-Token is not the secret gets 401 and changes
// nothing; a body over 1 MiB gets 413, one that is not an update 400. A
// processed update (or a replay of one) gets 200; a database failure 500,
// which makes Telegram deliver it again.
func (s *Service) WebhookHandler() http.Handler {
	want := sha256.Sum256([]byte(s.secret))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			api.WriteError(w, r, apperr.New(apperr.MethodNotAllowed))
			return
		}
		got, ok := r.Header[http.CanonicalHeaderKey(telegram.SecretTokenHeader)]
		if !ok || len(got) == 0 {
			api.WriteError(w, r, apperr.Newf(apperr.AuthRequired, "The %s header is required.", telegram.SecretTokenHeader))
			return
		}
		// Hashing first makes the comparison independent of the length.
		gotSum := sha256.Sum256([]byte(got[0]))
		if subtle.ConstantTimeCompare(gotSum[:], want[:]) != 1 {
			api.WriteError(w, r, apperr.Newf(apperr.TokenInvalid, "The %s header is wrong.", telegram.SecretTokenHeader))
			return
		}
		body, err := api.ReadBody(w, r)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		var u telegram.Update
		if err := json.Unmarshal(body, &u); err != nil {
			api.WriteError(w, r, apperr.Invalid("body", "a Telegram Update object", "malformed JSON"))
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), webhookTimeout)
		defer cancel()
		if err := s.HandleUpdate(ctx, u); err != nil {
			if apperr.As(err).Code == apperr.Internal {
				s.log.ErrorContext(ctx, "telegram update not processed", "update_id", u.UpdateID, "err", err)
			}
			api.WriteError(w, r, err)
			return
		}
		api.WriteData(w, http.StatusOK, map[string]bool{"ok": true})
	})
}

// Start connects the bot: with a webhook URL it registers the webhook
// (retrying in the background when Telegram cannot be reached); without
// one it starts polling getUpdates, one replica at a time. Without a token
// it only logs that the bot is disabled. Stop, or cancelling ctx, ends the
// background work.
func (s *Service) Start(ctx context.Context) error {
	s.runMu.Lock()
	defer s.runMu.Unlock()
	if s.started {
		return errors.New("messenger: already started")
	}
	s.started = true
	if s.bot == nil {
		s.log.InfoContext(ctx, "telegram bot disabled: HERALD_TELEGRAM_BOT_TOKEN is not set")
		return nil
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel, s.done = cancel, make(chan struct{})
	if s.cfg.WebhookURL != "" {
		if s.registerWebhook(runCtx) {
			cancel()
			close(s.done)
			return nil
		}
		go func() {
			defer close(s.done)
			s.retryWebhook(runCtx)
		}()
		return nil
	}
	s.log.InfoContext(ctx, "telegram bot polling for updates", "holder", s.holder)
	go func() {
		defer close(s.done)
		s.poll(runCtx)
	}()
	return nil
}

// Stop ends polling or webhook retries and gives up the polling lease,
// waiting until then or until ctx is done.
func (s *Service) Stop(ctx context.Context) error {
	s.runMu.Lock()
	cancel, done := s.cancel, s.done
	s.runMu.Unlock()
	if cancel == nil {
		return nil
	}
	cancel()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// registerWebhook calls setWebhook once and reports whether it is done:
// true on success or on a failure retrying cannot fix.
func (s *Service) registerWebhook(ctx context.Context) bool {
	err := s.bot.SetWebhook(ctx, s.cfg.WebhookURL, s.secret, allowedUpdates)
	if err == nil {
		s.forgetStatus()
		s.log.InfoContext(ctx, "telegram webhook registered", "url", s.cfg.WebhookURL)
		return true
	}
	switch telegram.Classify(err) {
	case telegram.Unreachable, telegram.RateLimited:
		s.log.WarnContext(ctx, "telegram webhook not registered yet; retrying", "reason", reasonOf(err), "err", err)
		return false
	}
	s.log.ErrorContext(ctx, "telegram webhook not registered", "reason", reasonOf(err), "err", err)
	return true
}

func (s *Service) retryWebhook(ctx context.Context) {
	wait := s.cfg.PollRetry
	for {
		if !sleep(ctx, wait) {
			return
		}
		if s.registerWebhook(ctx) {
			return
		}
		wait = min(wait*2, 5*time.Minute)
	}
}

// leaseTTL is how long a poller's lease lasts without renewal: longer than
// one long poll, short enough for another replica to take over soon after
// a crash.
func (s *Service) leaseTTL() time.Duration { return s.cfg.PollTimeout + 20*time.Second }

// poll is the long-polling loop. Each replica runs it; the one holding the
// polling lease calls getUpdates, the others wait and try again. The
// offset starts after the last update processed within Telegram's 24-hour
// retention, so a restart does not ask for handled updates; anything
// handled and still delivered again is skipped by ApplyTelegramUpdate.
func (s *Service) poll(ctx context.Context) {
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := s.store.ReleaseLease(rctx, pollLease, s.holder); err != nil {
			s.log.WarnContext(rctx, "telegram polling lease not released", "err", err)
		}
	}()
	held := false
	var offset int64
	var leaseUntil time.Time
	renew := func() bool {
		until := s.now().Add(s.leaseTTL())
		ok, err := s.store.AcquireLease(ctx, pollLease, s.holder, until)
		if err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "telegram polling lease unavailable", "err", err)
			}
			ok = false
		}
		if !ok {
			if held {
				s.log.InfoContext(ctx, "telegram polling lease lost", "holder", s.holder)
			}
			held = false
			return false
		}
		leaseUntil = until
		return true
	}
	for ctx.Err() == nil {
		if !renew() {
			sleep(ctx, s.cfg.PollRetry)
			continue
		}
		if !held {
			held = true
			offset = 0
			id, ok, err := s.store.LastTelegramUpdateID(ctx, s.now().Add(-24*time.Hour))
			if err != nil {
				held = false
				s.log.WarnContext(ctx, "telegram polling offset unavailable", "err", err)
				sleep(ctx, s.cfg.PollRetry)
				continue
			}
			if ok {
				offset = id + 1
			}
			s.log.InfoContext(ctx, "telegram polling lease taken", "holder", s.holder, "offset", offset)
		}
		updates, err := s.bot.GetUpdates(ctx, offset, int(s.cfg.PollTimeout/time.Second), allowedUpdates)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			var ae *telegram.APIError
			if errors.As(err, &ae) && telegram.Classify(err) == telegram.Conflict && strings.Contains(strings.ToLower(ae.Description), "webhook") {
				// A webhook registered earlier blocks polling; this
				// replica is configured to poll, so it removes it.
				s.log.InfoContext(ctx, "telegram webhook removed to poll for updates")
				if err := s.bot.DeleteWebhook(ctx, false); err == nil {
					s.forgetStatus()
					continue
				}
			}
			s.log.WarnContext(ctx, "telegram getUpdates failed", "reason", reasonOf(err), "err", err)
			wait := s.cfg.PollRetry
			if d, ok := telegram.RetryAfter(err); ok && d > wait {
				wait = d
			}
			sleep(ctx, wait)
			continue
		}
		for _, u := range updates {
			if s.now().After(leaseUntil.Add(-s.leaseTTL() / 2)) {
				if !renew() {
					break
				}
			}
			if err := s.HandleUpdate(ctx, u); err != nil && !apperr.Is(err, apperr.ValidationError) {
				if ctx.Err() == nil {
					s.log.ErrorContext(ctx, "telegram update not processed; will retry", "update_id", u.UpdateID, "err", err)
					sleep(ctx, s.cfg.PollRetry)
				}
				break // the offset stays before it, so it comes again
			}
			offset = u.UpdateID + 1
		}
	}
}

// sleep waits d or until ctx is done; false when ctx is done.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
