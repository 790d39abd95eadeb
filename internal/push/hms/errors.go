package hms

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// Push Kit result codes, in the "code" field of every answer
// ({"code":"80000000","msg":"Success","requestId":"..."}).
//
// Sources:
//   - Huawei's Go server demo, github.com/HMS-Core/hms-push-serverdemo-go,
//     src/push/constant/constants.go (80000000, 80100001, 80200001,
//     80200003) and src/push/core/pushclient.go, which refreshes the access
//     token and resends once on 80200001 or 80200003;
//   - github.com/icecream78/go-hms-push response.go, which lists the
//     codes of Huawei's "Response codes" table: 80100000 (some tokens
//     failed, "Tokens identified by illegal_token"), 80100003 ("Incorrect
//     message structure"), 80300002 (no permission to send), 80300007
//     (all tokens invalid), 80300008 (body too large), 80300010 (too many
//     tokens), 80300011 (no permission for high-priority messages),
//     81000001 (system internal error);
//   - Huawei's FAQ on server error codes (HMS Core blog, also on
//     segmentfault.com/a/1190000042188975): 80300007 "Token invalid" for a
//     malformed token or one of another app; 80200003 "OAuth token expired";
//   - Huawei's Push Kit response-code page for its newer (v3, HarmonyOS)
//     send API, push-scenariozed-api-response, whose HTTP table is the one
//     used here for v1 too: 401 authentication failed, 500 internal error,
//     502 connection error (retry later), 503 traffic control;
//   - the partial-success msg is itself JSON, e.g.
//     {"success":1,"failure":1,"illegal_tokens":["..."]} (as parsed by
//     several open-source senders).
//
// 80100003 is a malformed message, not a bad token: Huawei's example answer
// is {"code":"80100003","msg":"Illegal payload, ..."}. 80600003 (OAuth
// service refused the request) was not found in those sources; it is mapped
// as an authentication failure, as the brief for this package says.
const (
	codeSuccess          = "80000000"
	codePartialSuccess   = "80100000"
	codeParameterError   = "80100001"
	codeBadMessage       = "80100003"
	codeAuthError        = "80200001"
	codeTokenExpired     = "80200003"
	codeNoPermission     = "80300002"
	codeAllTokensInvalid = "80300007"
	codeBodyTooLarge     = "80300008"
	codeTooManyTokens    = "80300010"
	codeNoHighPriority   = "80300011"
	codeOAuthFailed      = "80600003"
	codeInternalError    = "81000001"
)

// answer is Push Kit's response body.
type answer struct {
	Code      string `json:"code"`
	Msg       string `json:"msg"`
	RequestID string `json:"requestId"`
}

// partialResult is the JSON inside msg of a partial success (80100000).
type partialResult struct {
	Success       int      `json:"success"`
	Failure       int      `json:"failure"`
	IllegalTokens []string `json:"illegal_tokens"`
}

// decodeResponse maps an answer to a send for token to nil (sent) or a
// *push.Error. The result code wins over the HTTP status; a DeadToken needs
// explicit evidence (80300007, or the token listed as illegal), because
// deleting a good token is worse than keeping a dead one.
func decodeResponse(status int, h http.Header, body []byte, token string, now time.Time) error {
	var a answer
	if err := json.Unmarshal(body, &a); err != nil {
		a = answer{} // a proxy's HTML page: only the status is left
	}
	ok2xx := status >= 200 && status < 300
	pe := &push.Error{Provider: providerName, Status: status, Reason: a.Code}
	if pe.Reason == "" {
		pe.Reason = http.StatusText(status)
		if pe.Reason == "" {
			pe.Reason = "HTTP " + strconv.Itoa(status)
		}
	}
	if msg := a.Msg; msg != "" {
		pe.Err = errors.New(msg)
	} else if s := snippet(body); s != "" {
		pe.Err = errors.New(s)
	}

	switch a.Code {
	case codeSuccess:
		if ok2xx {
			return nil
		}
		pe.Kind = kindOfStatus(status)
	case codePartialSuccess:
		var p partialResult
		_ = json.Unmarshal([]byte(a.Msg), &p)
		switch {
		case slices.Contains(p.IllegalTokens, token):
			pe.Kind = push.DeadToken
		case ok2xx && p.Success > 0:
			return nil // the request has one token: the success is ours
		default:
			pe.Kind = push.Other // cannot tell what became of ours
		}
	case codeAllTokensInvalid:
		pe.Kind = push.DeadToken
	case codeInternalError:
		pe.Kind = push.Retryable
	case codeAuthError, codeTokenExpired, codeNoPermission, codeNoHighPriority, codeOAuthFailed:
		pe.Kind = push.Fatal
	case codeParameterError, codeBadMessage, codeBodyTooLarge, codeTooManyTokens:
		pe.Kind = push.Other
	case "":
		if ok2xx {
			// A 2xx that does not say 80000000 is not proof of delivery.
			pe.Kind = push.Other
			break
		}
		pe.Kind = kindOfStatus(status)
	default:
		pe.Kind = kindOfStatus(status)
	}
	if pe.Kind == push.Retryable {
		pe.RetryAfter = push.ParseRetryAfter(h.Get("Retry-After"), now)
	}
	return pe
}

// kindOfStatus classifies by the HTTP status alone: 401/403 say the
// credentials are wrong; 408, 429 and 5xx (500 internal error, 502
// connection error, 503 traffic control) are transient; anything else is
// this message's problem.
func kindOfStatus(status int) push.Kind {
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return push.Fatal
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500:
		return push.Retryable
	}
	return push.Other
}

// authRefused reports whether the send API refused the access token
// (expired or not valid), so a new one may help.
func authRefused(pe *push.Error) bool {
	return pe.Reason == codeAuthError || pe.Reason == codeTokenExpired || pe.Status == http.StatusUnauthorized
}
