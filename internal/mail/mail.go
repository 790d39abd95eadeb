// Package mail sends transactional email (sign-up codes, password resets).
//
// Two Sender implementations exist: SMTPSender delivers through an SMTP relay
// (smtp:// with opportunistic STARTTLS, or smtps:// with implicit TLS) and
// DevSender only logs the message, for local development.
package mail

import (
	"context"
	"errors"
	"net/textproto"

	gomail "github.com/wneessen/go-mail"
)

// Message is one email to a single recipient.
//
// Text is required unless HTML is set; when both are set the email is sent as
// multipart/alternative with the text part first.
type Message struct {
	To      string // a single address, e.g. "alice@example.com" or "Alice <alice@example.com>"
	Subject string
	Text    string
	HTML    string

	// Code is the one-time code the email carries, and Locale the
	// language it is written in: not sent as such, but the development
	// mailer logs them as fields of their own.
	Code   string
	Locale string

	// ListUnsubscribe is the one-click unsubscribe URL of a notification
	// email ("" for none): SMTPSender sends it as the List-Unsubscribe
	// header and, when it is https, List-Unsubscribe-Post:
	// List-Unsubscribe=One-Click (RFC 8058, which wants an https URL).
	ListUnsubscribe string
}

// Sender delivers a Message. Implementations are safe for concurrent use.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// SendError is the error returned by SMTPSender.Send. Its text never contains
// the message body (which may hold secrets such as login codes), only the
// server address, the failing SMTP step, the server reply and the recipient.
type SendError struct {
	// Code is the SMTP reply code when the server refused (e.g. 451, 550),
	// or 0 when the failure was not an SMTP reply (network, TLS, timeout,
	// invalid message).
	Code int

	permanent bool // the message itself is invalid
	text      string
	cause     error
}

// Error implements error.
func (e *SendError) Error() string { return e.text }

// Unwrap returns the underlying cause when it is safe to expose (network
// errors, context errors, *textproto.Error). Errors from go-mail that
// reference the message are never exposed.
func (e *SendError) Unwrap() error { return e.cause }

// IsPermanent reports whether err means that retrying the same message cannot
// succeed: the SMTP server refused it with a 5xx reply (e.g. 550 unknown
// recipient, 535 bad credentials), or the message itself is invalid (e.g. a
// malformed recipient address).
//
// It returns false for temporary failures: 4xx replies, connection refused,
// TLS or network errors, timeouts and cancelled contexts, and for nil.
func IsPermanent(err error) bool {
	if err == nil {
		return false
	}
	if se, ok := errors.AsType[*SendError](err); ok {
		return se.permanent || is5xx(se.Code)
	}
	if te, ok := errors.AsType[*textproto.Error](err); ok {
		return is5xx(te.Code)
	}
	if ge, ok := errors.AsType[*gomail.SendError](err); ok {
		return is5xx(ge.ErrorCode())
	}
	return false
}

func is5xx(code int) bool { return code >= 500 && code <= 599 }
