package telegram

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// APIError is an {"ok":false,...} answer from the Bot API.
type APIError struct {
	Method      string
	Code        int    // error_code, e.g. 400, 403, 429
	Description string // e.g. "Bad Request: chat not found"
	RetryAfter  time.Duration
}

func (e *APIError) Error() string {
	return fmt.Sprintf("telegram %s: %d %s", e.Method, e.Code, e.Description)
}

// NetworkError means the API could not be reached or the connection broke.
// Its message has the bot token removed; the underlying net/http error is
// deliberately not wrapped because it embeds the token in the URL.
// context.Canceled / DeadlineExceeded remain matchable with errors.Is.
type NetworkError struct {
	Method string
	msg    string
	cause  error
}

func (e *NetworkError) Error() string { return "telegram " + e.Method + ": " + e.msg }

func (e *NetworkError) Unwrap() error { return e.cause }

// Kind is the coarse class of a failed call, telling the caller what to do.
type Kind int

const (
	// Other is anything not below (including a nil error).
	Other Kind = iota
	// ChatNotFound: the chat id is wrong or the user never existed; drop it.
	ChatNotFound
	// Blocked: 403, the bot was blocked, kicked, or the user is deactivated;
	// stop sending to this chat.
	Blocked
	// RateLimited: 429; wait APIError.RetryAfter and retry.
	RateLimited
	// BadMessage: the content was rejected (bad HTML, too long, empty, bad
	// media URL); retrying the same message will fail again.
	BadMessage
	// Unauthorized: the bot token is invalid or revoked.
	Unauthorized
	// Unreachable: Telegram cannot be reached (a network failure); retry
	// later.
	Unreachable
	// ServerError: Telegram answered 5xx; the bot is connected, the call
	// failed upstream; retry later.
	ServerError
	// Conflict: 409, another getUpdates poller is running or a webhook is
	// set while polling.
	Conflict
)

func (k Kind) String() string {
	switch k {
	case ChatNotFound:
		return "chat_not_found"
	case Blocked:
		return "blocked"
	case RateLimited:
		return "rate_limited"
	case BadMessage:
		return "bad_message"
	case Unauthorized:
		return "unauthorized"
	case Unreachable:
		return "unreachable"
	case ServerError:
		return "server_error"
	case Conflict:
		return "conflict"
	default:
		return "other"
	}
}

// Descriptions (lower-cased fragments) Telegram uses for content errors.
var badMessageFragments = [...]string{
	"can't parse entities",
	"message is too long",
	"message text is empty",
	"text must be non-empty",
	"message caption is too long",
	"wrong file identifier/http url specified",
	"failed to get http url content",
	"wrong type of the web page content",
	"wrong remote file identifier",
	"button_url_invalid",
	"can't parse inline keyboard button",
	"inline keyboard button url",
	"unsupported parse_mode",
	"there is no photo in the request",
	"there is no document in the request",
}

// Classify sorts an error returned by Client into a Kind.
func Classify(err error) Kind {
	if err == nil {
		return Other
	}
	var ne *NetworkError
	if errors.As(err, &ne) {
		if errors.Is(err, context.Canceled) {
			return Other // the caller gave up; nothing wrong with Telegram
		}
		return Unreachable
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return Other
	}
	d := strings.ToLower(ae.Description)
	switch {
	case ae.Code == 429:
		return RateLimited
	case ae.Code == 401, ae.Code == 404:
		// Telegram answers 404 for a malformed token and 401 for a revoked one.
		return Unauthorized
	case ae.Code == 403:
		return Blocked
	case ae.Code == 409:
		return Conflict
	case ae.Code >= 500:
		return ServerError
	case ae.Code == 400:
		if strings.Contains(d, "chat not found") || strings.Contains(d, "peer_id_invalid") ||
			strings.Contains(d, "user not found") {
			return ChatNotFound
		}
		for _, f := range badMessageFragments {
			if strings.Contains(d, f) {
				return BadMessage
			}
		}
	}
	return Other
}

// RetryAfter reports how long Telegram asked to wait, if err is a 429.
func RetryAfter(err error) (time.Duration, bool) {
	var ae *APIError
	if errors.As(err, &ae) && ae.Code == 429 {
		return ae.RetryAfter, true
	}
	return 0, false
}
