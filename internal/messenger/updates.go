package messenger

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/sleep"
	"github.com/herald-vpn/herald/internal/telegram"
)

// Reply names one of the bot's answers to its commands. The domain decides
// which answer a command gets; Config.Replies words it (internal/texts), so
// no user-facing prose lives here.
type Reply string

// The bot's answers.
const (
	ReplyWelcome       Reply = "welcome"
	ReplyAlready       Reply = "already-subscribed"
	ReplyGoodbye       Reply = "goodbye"
	ReplyNotSubscribed Reply = "not-subscribed"
	ReplyHelp          Reply = "help"
	ReplyLinked        Reply = "linked"
	ReplyLinkExpired   Reply = "link-expired"
	ReplyLinkUsed      Reply = "link-used"
	ReplyLinkUnknown   Reply = "link-unknown"
	ReplyLinkInGroup   Reply = "link-in-group"
)

// Replies lists every Reply, for the texts' completeness test.
var Replies = []Reply{ReplyWelcome, ReplyAlready, ReplyGoodbye, ReplyNotSubscribed, ReplyHelp,
	ReplyLinked, ReplyLinkExpired, ReplyLinkUsed, ReplyLinkUnknown, ReplyLinkInGroup}

// cmdStartLinkInGroup is /start with a link token outside a private chat.
const cmdStartLinkInGroup = "start-link-in-group"

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
	out, err := ApplyUpdate(ctx, s.store, u.UpdateID, change)
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
	if r := replyFor(cmd, out); r != "" {
		s.reply(ctx, chatID, s.cfg.Replies(r))
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
			switch {
			case IsLinkToken(payload) && m.Chat.Type != "private":
				// An account links only its own private chat; the token
				// stays unused and is not kept.
				return c, cmdStartLinkInGroup, m.Chat.ID
			case IsLinkToken(payload):
				// A link token is a secret: it is consumed, never kept
				// as the start payload.
				c.LinkTokenHash = hashLinkToken(payload)
			default:
				c.Payload = payload
			}
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

func replyFor(cmd string, out Outcome) Reply {
	switch cmd {
	case "start":
		switch out.Link {
		case Linked:
			return ReplyLinked
		case LinkExpired:
			return ReplyLinkExpired
		case LinkUsed:
			return ReplyLinkUsed
		case LinkNotFound:
			return ReplyLinkUnknown
		}
		if !out.Changed || out.Before != nil && out.Before.Status == Subscribed {
			return ReplyAlready
		}
		return ReplyWelcome
	case "stop":
		if out.Changed {
			return ReplyGoodbye
		}
		return ReplyNotSubscribed
	case "help":
		return ReplyHelp
	case cmdStartLinkInGroup:
		return ReplyLinkInGroup
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

// CheckWebhookSecret checks the X-Telegram-Bot-Api-Secret-Token of a
// webhook call, in constant time: AUTH_REQUIRED without one (present
// false), TOKEN_INVALID for a wrong one.
func (s *Service) CheckWebhookSecret(got string, present bool) error {
	if !present {
		return apperr.Newf(apperr.AuthRequired, "The %s header is required.", telegram.SecretTokenHeader)
	}
	// Hashing first makes the comparison independent of the length.
	want := sha256.Sum256([]byte(s.secret))
	gotSum := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(gotSum[:], want[:]) != 1 {
		return apperr.Newf(apperr.TokenInvalid, "The %s header is wrong.", telegram.SecretTokenHeader)
	}
	return nil
}

// WebhookTimeout bounds the handling of one webhook delivery; it is not
// tied to the request so that a stored change still gets its reply when
// Telegram hangs up.
const WebhookTimeout = 30 * time.Second

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
	case telegram.Unreachable, telegram.ServerError, telegram.RateLimited:
		s.log.WarnContext(ctx, "telegram webhook not registered yet; retrying", "reason", reasonOf(err), "err", err)
		return false
	}
	s.log.ErrorContext(ctx, "telegram webhook not registered", "reason", reasonOf(err), "err", err)
	return true
}

func (s *Service) retryWebhook(ctx context.Context) {
	wait := s.cfg.PollRetry
	for {
		if sleep.For(ctx, wait) != nil {
			return
		}
		if s.registerWebhook(ctx) {
			return
		}
		wait = min(wait*2, 5*time.Minute)
	}
}

// leaseTTL is how long a poller's lease lasts without renewal.
func (s *Service) leaseTTL() time.Duration { return s.cfg.PollLeaseTTL }

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
		// Not cancelled by Stop: a cancelled query can still commit on the
		// server after the deferred release, leaving a lease nobody holds
		// in the way of the next poller until it expires.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		ok, err := s.store.AcquireLease(lctx, pollLease, s.holder, until)
		cancel()
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
			sleep.For(ctx, s.cfg.PollRetry)
			continue
		}
		if !held {
			held = true
			offset = 0
			id, ok, err := s.store.LastTelegramUpdateID(ctx, s.now().Add(-24*time.Hour))
			if err != nil {
				held = false
				s.log.WarnContext(ctx, "telegram polling offset unavailable", "err", err)
				sleep.For(ctx, s.cfg.PollRetry)
				continue
			}
			if ok {
				offset = id + 1
			}
			s.log.InfoContext(ctx, "telegram polling lease taken", "holder", s.holder, "offset", offset)
		}
		// The poll ends before the lease can, so another replica that
		// takes an expired lease never polls beside this one.
		pctx, cancel := context.WithDeadline(ctx, leaseUntil.Add(-s.leaseTTL()/10))
		updates, err := s.bot.GetUpdates(pctx, offset, int(s.cfg.PollTimeout/time.Second), allowedUpdates)
		cancel()
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
			sleep.For(ctx, wait)
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
					sleep.For(ctx, s.cfg.PollRetry)
				}
				break // the offset stays before it, so it comes again
			}
			offset = u.UpdateID + 1
		}
	}
}
