package fcm

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/push"
)

// googleError is the google.rpc.Status error body FCM v1 returns.
type googleError struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []struct {
			Type            string `json:"@type"`
			ErrorCode       string `json:"errorCode"`
			FieldViolations []struct {
				Field       string `json:"field"`
				Description string `json:"description"`
			} `json:"fieldViolations"`
		} `json:"details"`
	} `json:"error"`
}

const (
	fcmErrorType   = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
	badRequestType = "type.googleapis.com/google.rpc.BadRequest"
)

// classifyResponse maps a non-2xx FCM answer to a *push.Error. The FcmError
// errorCode wins over the generic google.rpc status, which wins over the
// bare HTTP status; a DeadToken needs explicit evidence, because deleting a
// good token is worse than keeping a dead one.
func classifyResponse(status int, h http.Header, body []byte) *push.Error {
	var ge googleError
	_ = json.Unmarshal(body, &ge) // a non-JSON body (proxy error page) falls back to the status code

	pe := &push.Error{Provider: providerName, Status: status}
	msg := ge.Error.Message
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200]
		}
	}
	if msg != "" {
		pe.Err = errors.New(msg)
	}

	var errorCode string
	tokenViolation := false
	for _, d := range ge.Error.Details {
		switch d.Type {
		case fcmErrorType:
			errorCode = d.ErrorCode
		case badRequestType:
			for _, v := range d.FieldViolations {
				if v.Field == "message.token" {
					tokenViolation = true
				}
			}
		}
	}
	pe.Reason = errorCode
	if pe.Reason == "" {
		pe.Reason = ge.Error.Status
	}
	if pe.Reason == "" {
		pe.Reason = http.StatusText(status)
	}
	pe.Kind = kindOf(status, errorCode, ge.Error.Status, msg, tokenViolation)
	if pe.Kind == push.Retryable {
		pe.RetryAfter = push.ParseRetryAfter(h.Get("Retry-After"), time.Now())
	}
	return pe
}

func kindOf(status int, errorCode, rpcStatus, msg string, tokenViolation bool) push.Kind {
	switch errorCode {
	case "UNREGISTERED", "SENDER_ID_MISMATCH":
		return push.DeadToken
	case "QUOTA_EXCEEDED", "UNAVAILABLE", "INTERNAL":
		return push.Retryable
	case "THIRD_PARTY_AUTH_ERROR":
		return push.Fatal
	case "INVALID_ARGUMENT":
		return invalidArgumentKind(msg, tokenViolation)
	}
	switch rpcStatus {
	case "INVALID_ARGUMENT":
		return invalidArgumentKind(msg, tokenViolation)
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return push.Fatal
	case "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL":
		return push.Retryable
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return push.Fatal
	case status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status >= 500:
		return push.Retryable
	}
	return push.Other
}

// invalidArgumentKind: INVALID_ARGUMENT covers both a malformed token
// (dead) and a bad payload (this message only).
func invalidArgumentKind(msg string, tokenViolation bool) push.Kind {
	if tokenViolation || strings.Contains(strings.ToLower(msg), "registration token") {
		return push.DeadToken
	}
	return push.Other
}
