package messenger

import (
	"context"
	"errors"
	"html"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/telegram"
)

// SendOptions are the richer content a message can carry.
type SendOptions struct {
	// Silent delivers without a notification sound.
	Silent bool
	// Buttons are rows of inline URL buttons under the message.
	Buttons [][]Button
	// ImageURL sends the image at this http(s) address with the message as
	// its caption (at most 1024 characters).
	ImageURL string
	// DocumentURL sends the file at this http(s) address with the message
	// as its caption (at most 1024 characters).
	DocumentURL string
}

// Button is an inline button that opens URL.
type Button struct {
	Text string
	URL  string
}

// MaxButtons is Telegram's limit on the buttons of one message.
const MaxButtons = 100

// chatIDPattern accepts what Telegram accepts as chat_id: a numeric id or a
// public channel's @username.
var chatIDPattern = regexp.MustCompile(`^(-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31})$`)

// Send delivers message, Markdown as users type it, to chatID and returns
// Telegram's message id. Sends are paced under Telegram's limits (callers
// wait, they are not refused). Errors are the catalogue's:
// MESSENGER_NOT_CONNECTED, CHAT_NOT_FOUND, CHAT_BLOCKED (the subscriber is
// marked blocked), INVALID_MESSAGE, RATE_LIMITED (with retryAfter) and
// UPSTREAM_ERROR.
func (s *Service) Send(ctx context.Context, chatID, message string, opts SendOptions) (string, error) {
	chatID = strings.TrimSpace(chatID)
	if err := validateSend(chatID, message, opts); err != nil {
		return "", err
	}
	if s.bot == nil {
		return "", apperr.Newf(apperr.MessengerNotConnected, "The messenger bot is not connected: no bot token is configured.").WithRetryAfter(notConnectedRetryAfter)
	}
	text, mode := telegram.FormatMarkdown(message)
	limit, what := telegram.MaxMessageLen, "message"
	if opts.ImageURL != "" || opts.DocumentURL != "" {
		limit, what = telegram.MaxCaptionLen, "caption"
	}
	if n := visibleLen(text); n > limit {
		return "", apperr.Newf(apperr.InvalidMessage, "The %s is %d characters long once formatted; Telegram allows %d.", what, n, limit).
			With("limit", limit).With("length", n)
	}
	tgOpts := telegram.SendOptions{ParseMode: mode, DisableNotification: opts.Silent, ReplyMarkup: keyboard(opts.Buttons)}
	m, err := s.deliver(ctx, chatID, func(ctx context.Context) (telegram.Message, error) {
		switch {
		case opts.ImageURL != "":
			return s.bot.SendPhoto(ctx, chatID, opts.ImageURL, text, tgOpts)
		case opts.DocumentURL != "":
			return s.bot.SendDocument(ctx, chatID, opts.DocumentURL, text, tgOpts)
		}
		return s.bot.SendMessage(ctx, chatID, text, tgOpts)
	})
	if err != nil {
		aerr := sendError(err)
		if apperr.Is(aerr, apperr.ChatBlocked) {
			s.markBlocked(ctx, chatID)
		}
		s.log.WarnContext(ctx, "telegram send failed", "chat_id", chatID, "code", string(apperr.As(aerr).Code), "err", err)
		return "", aerr
	}
	return strconv.FormatInt(m.MessageID, 10), nil
}

// validateSend checks everything that can be checked without Telegram.
func validateSend(chatID, message string, opts SendOptions) error {
	if !chatIDPattern.MatchString(chatID) {
		return apperr.Newf(apperr.ChatNotFound, "There is no chat %q: a chat id is a number, or @username for a public channel.", chatID)
	}
	if err := validateText(message); err != nil {
		return err
	}
	if opts.ImageURL != "" && opts.DocumentURL != "" {
		return apperr.Newf(apperr.InvalidMessage, "A message carries an image or a document, not both.")
	}
	if opts.ImageURL != "" && !webURL(opts.ImageURL) {
		return apperr.Newf(apperr.InvalidMessage, "imageUrl must be an absolute http or https URL.")
	}
	if opts.DocumentURL != "" && !webURL(opts.DocumentURL) {
		return apperr.Newf(apperr.InvalidMessage, "documentUrl must be an absolute http or https URL.")
	}
	total := 0
	for i, row := range opts.Buttons {
		for j, b := range row {
			total++
			if strings.TrimSpace(b.Text) == "" {
				return apperr.Newf(apperr.InvalidMessage, "Button %d of row %d has no text.", j+1, i+1)
			}
			if !webURL(b.URL) {
				return apperr.Newf(apperr.InvalidMessage, "Button %d of row %d needs an absolute http or https URL.", j+1, i+1)
			}
		}
	}
	if total > MaxButtons {
		return apperr.Newf(apperr.InvalidMessage, "A message can carry at most %d buttons.", MaxButtons)
	}
	return nil
}

// validateText checks a message's Markdown before it is formatted: not
// empty, and at most telegram.MaxMessageLen characters (which also bounds
// the formatter's work).
func validateText(message string) error {
	if strings.TrimSpace(message) == "" {
		return apperr.Newf(apperr.InvalidMessage, "The message is empty.")
	}
	if n := utf8.RuneCountInString(message); n > telegram.MaxMessageLen {
		return apperr.Newf(apperr.InvalidMessage, "The message is %d characters long; at most %d are allowed.", n, telegram.MaxMessageLen).
			With("limit", telegram.MaxMessageLen).With("length", n)
	}
	return nil
}

// Preview is a message as the bot would send it.
type Preview struct {
	// HTML is the text sent, with parse_mode HTML.
	HTML string
	// Length is what Telegram counts against its limits: the visible
	// text's UTF-16 code units (telegram.MaxMessageLen for a message,
	// telegram.MaxCaptionLen for the caption of a photo or document).
	Length int
}

// Preview formats message exactly as Send does, without sending (no bot
// is needed). It refuses what Send refuses before formatting
// (INVALID_MESSAGE: empty, or over 4096 characters); a Length over a limit
// is answered, for the caller to show (Send would refuse that message).
func (s *Service) Preview(message string) (Preview, error) {
	if err := validateText(message); err != nil {
		return Preview{}, err
	}
	text, _ := telegram.FormatMarkdown(message)
	return Preview{HTML: text, Length: visibleLen(text)}, nil
}

func webURL(raw string) bool {
	u, err := url.Parse(strings.TrimSpace(raw))
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

func keyboard(rows [][]Button) *telegram.InlineKeyboardMarkup {
	var kb [][]telegram.InlineKeyboardButton
	for _, row := range rows {
		if len(row) == 0 {
			continue
		}
		r := make([]telegram.InlineKeyboardButton, 0, len(row))
		for _, b := range row {
			r = append(r, telegram.InlineKeyboardButton{Text: strings.TrimSpace(b.Text), URL: strings.TrimSpace(b.URL)})
		}
		kb = append(kb, r)
	}
	if len(kb) == 0 {
		return nil
	}
	return &telegram.InlineKeyboardMarkup{InlineKeyboard: kb}
}

// visibleLen counts text as Telegram does: in UTF-16 code units, after
// entity parsing. FormatMarkdown's output has no '<' or '>' outside tags.
func visibleLen(htmlText string) int {
	var b strings.Builder
	in := false
	for _, r := range htmlText {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return len(utf16.Encode([]rune(html.UnescapeString(b.String()))))
}

// deliver waits for a pacing slot for chatID and makes the call; a 429
// also pauses later sends to that chat.
func (s *Service) deliver(ctx context.Context, chatID string, call func(context.Context) (telegram.Message, error)) (telegram.Message, error) {
	if err := s.pacer.Wait(ctx, chatID); err != nil {
		return telegram.Message{}, err
	}
	m, err := call(ctx)
	if d, ok := telegram.RetryAfter(err); ok && d > 0 {
		s.pacer.Pause(chatID, d)
	}
	return m, err
}

// sendError is the one translation of a failed send into the catalogue.
// Nothing of Telegram's answer but its retry_after reaches the client, and
// the token never does.
func sendError(err error) error {
	if errors.Is(err, context.Canceled) || (errors.Is(err, context.DeadlineExceeded) && !isNetwork(err)) {
		return err // the caller gave up
	}
	switch telegram.Classify(err) {
	case telegram.ChatNotFound:
		return apperr.New(apperr.ChatNotFound)
	case telegram.Blocked:
		return apperr.New(apperr.ChatBlocked)
	case telegram.BadMessage:
		return apperr.Newf(apperr.InvalidMessage, "Telegram refused the message: its text, media address or buttons are not acceptable.")
	case telegram.RateLimited:
		d, _ := telegram.RetryAfter(err)
		secs := apperr.WaitSeconds(d)
		return apperr.Newf(apperr.RateLimited, "Telegram asks to wait %d seconds before sending again.", secs).WithRetryAfter(secs)
	case telegram.Unauthorized:
		return apperr.Newf(apperr.MessengerNotConnected, "The messenger bot is not connected: Telegram rejected the bot token.").WithRetryAfter(notConnectedRetryAfter)
	case telegram.Unreachable:
		return apperr.Newf(apperr.MessengerNotConnected, "The messenger bot is not connected: Telegram cannot be reached.").WithRetryAfter(notConnectedRetryAfter)
	}
	return apperr.New(apperr.UpstreamError)
}

func isNetwork(err error) bool {
	var ne *telegram.NetworkError
	return errors.As(err, &ne)
}

// markBlocked records that chatID blocked the bot, when it is a subscriber.
func (s *Service) markBlocked(ctx context.Context, chatID string) {
	id, err := strconv.ParseInt(chatID, 10, 64)
	if err != nil {
		return // a @channel is never a subscriber
	}
	if _, err := ApplyChange(context.WithoutCancel(ctx), s.store, Change{Kind: Block, ChatID: id}); err != nil {
		s.log.ErrorContext(ctx, "could not mark subscriber blocked", "chat_id", chatID, "err", err)
	}
}

// SendIdempotent is Send under the idempotency key k: a repeat answers the
// first message id and sends nothing.
func (s *Service) SendIdempotent(ctx context.Context, k idempotency.Key, chatID, message string, opts SendOptions) (string, error) {
	return idempotency.Do(ctx, k, "sendMessengerMessage", []any{chatID, message, opts}, func(ctx context.Context) (string, error) {
		return s.Send(ctx, chatID, message, opts)
	})
}

// notConnectedRetryAfter is the Retry-After, in seconds, of
// MESSENGER_NOT_CONNECTED: a 503 says when to try again, and the bot's
// status is cached for about this long.
const notConnectedRetryAfter = 30
