// Package push is the provider-neutral part of Herald's push delivery:
// the Provider interface, one shared outcome classification (Kind, Error,
// Classify), a Router that picks FCM, APNs or Web Push per platform, a Dev provider
// that only logs, and a bounded retry helper.
//
// Provider implementations live in the fcm, apns and webpush subpackages; they
// report every failure as *Error so callers only ever need Classify to
// decide what to do (delete the token, retry, alert an operator, or drop).
package push

import (
	"context"
	"crypto/tls"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Notification is what is shown to the user plus optional app data.
// How Data values are encoded is provider specific (see the fcm and apns
// package docs).
type Notification struct {
	Title string
	Body  string
	Data  map[string]any
	// CollapseKey, when set, makes pushes with the same key replace each
	// other on the device (FCM collapse_key for messages not yet delivered
	// and android.notification.tag for a notification already shown, APNs
	// apns-collapse-id; at most 64 bytes): a broadcast sets its job id, so
	// a send repeated after a crash is shown once.
	CollapseKey string
	// Options tune delivery; each provider maps them (see the fcm and apns
	// package docs, and the table of docs/notifications.md, "Push options").
	Options Options

	// encodings, set by Prepared, keeps what providers encoded of the
	// notification, shared by its copies.
	encodings *sync.Map
}

// Prepared returns n ready to be sent to many devices (a broadcast):
// providers encode the part of it that is the same for every device once,
// at the first send, instead of at every send. n must not change after.
func (n Notification) Prepared() Notification {
	n.encodings = &sync.Map{}
	return n
}

type encoding struct {
	b   []byte
	err error
}

// Encoded is build's answer for key (a provider's name): built once for a
// prepared notification, at every call for another. Callers must not
// modify the bytes.
func (n Notification) Encoded(key string, build func() ([]byte, error)) ([]byte, error) {
	if n.encodings == nil {
		return build()
	}
	if e, ok := n.encodings.Load(key); ok {
		return e.(encoding).b, e.(encoding).err
	}
	b, err := build()
	e, _ := n.encodings.LoadOrStore(key, encoding{b, err})
	return e.(encoding).b, e.(encoding).err
}

// Priorities of Options.Priority.
const (
	PriorityHigh   = "high"
	PriorityNormal = "normal"
)

// Options are the delivery options of a notification; the zero value is
// the providers' defaults.
type Options struct {
	// Priority is PriorityHigh, PriorityNormal or "" (the provider's
	// default: high for an alert, normal for a silent push).
	Priority string
	// TTL is how long the provider keeps an undelivered push; nil is the
	// provider's default (4 weeks), 0 means now or never.
	TTL *time.Duration
	// Badge is the app icon's badge number (iOS; Android notification
	// count); nil leaves it.
	Badge *int
	// Sound names the sound to play ("default" for the system's).
	Sound string
	// ImageURL is an image shown with the notification.
	ImageURL string
	// ChannelID is the Android notification channel.
	ChannelID string
	// ThreadID groups notifications on iOS.
	ThreadID string
	// ContentAvailable makes a silent data push: no alert is shown, the
	// app is woken with the data.
	ContentAvailable bool
}

// Platform values for Target.Platform.
const (
	PlatformAndroid = "android"
	PlatformIOS     = "ios"
	// PlatformWeb is a browser; its token is the PushSubscription JSON
	// (see the webpush package).
	PlatformWeb = "web"
	// PlatformHuawei is an Android phone without Google's services,
	// reached through Huawei Push Kit (HMS); its token is Push Kit's.
	PlatformHuawei = "huawei"
)

// Target is one device registration.
type Target struct {
	Platform string // PlatformAndroid, PlatformIOS, PlatformWeb or PlatformHuawei
	Token    string
}

// Provider delivers a single notification to a single device.
// Implementations must be safe for concurrent use.
type Provider interface {
	Send(ctx context.Context, t Target, n Notification) error
}

// Kind is the outcome class of a send, shared by all providers.
type Kind int

const (
	// Sent: the provider accepted the notification (err == nil).
	Sent Kind = iota
	// DeadToken: the device token will never work again; delete it.
	DeadToken
	// Retryable: transient (rate limit, provider outage, network); retry later,
	// not before the returned retry-after duration.
	Retryable
	// Fatal: authentication or configuration is wrong; every further send
	// will fail the same way, so stop and alert.
	Fatal
	// Other: this one message failed for a non-transient reason (bad payload,
	// cancelled context, unknown error); do not retry, keep the token.
	Other
)

// String returns a short, stable name suitable for logs and metric labels.
func (k Kind) String() string {
	switch k {
	case Sent:
		return "sent"
	case DeadToken:
		return "dead_token"
	case Retryable:
		return "retryable"
	case Fatal:
		return "fatal"
	case Other:
		return "other"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Error is the error type every provider in this module returns.
type Error struct {
	Kind       Kind
	Provider   string        // "fcm", "apns", "router", ...
	Reason     string        // provider reason code, e.g. UNREGISTERED, BadDeviceToken
	Status     int           // HTTP status, 0 when no response was received
	RetryAfter time.Duration // server-requested delay (Retry-After), 0 if none
	Err        error         // underlying cause, may be nil
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
	} else {
		b.WriteString("push")
	}
	b.WriteString(": ")
	b.WriteString(e.Kind.String())
	if e.Reason != "" {
		b.WriteString(" ")
		b.WriteString(e.Reason)
	}
	if e.Status != 0 {
		b.WriteString(" (HTTP ")
		b.WriteString(strconv.Itoa(e.Status))
		b.WriteString(")")
	}
	if e.RetryAfter > 0 {
		b.WriteString(" retry after ")
		b.WriteString(e.RetryAfter.String())
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// TransportError is the *Error for a request to provider that got no
// response: Other (reason Canceled) when ctx is done, since the caller gave
// up and the provider did not fail; Fatal (reason TLS) for a certificate
// problem or a server that does not speak TLS, which retrying does not
// heal; otherwise Retryable (reason Transport).
func TransportError(ctx context.Context, provider string, err error) *Error {
	pe := &Error{Kind: Retryable, Provider: provider, Reason: "Transport", Err: err}
	switch {
	case ctx.Err() != nil:
		pe.Kind, pe.Reason = Other, "Canceled"
	case isTLSConfigError(err):
		pe.Kind, pe.Reason = Fatal, "TLS"
	}
	return pe
}

func isTLSConfigError(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	_, ok := errors.AsType[tls.RecordHeaderError](err) // server is not TLS
	return ok
}

// Classify maps any error returned by a Provider (possibly wrapped) to its
// Kind and, for Retryable, the minimum delay the provider asked for.
// nil is Sent; errors that are not *Error (including bare context errors)
// are Other, because nothing says a retry would help.
func Classify(err error) (Kind, time.Duration) {
	if err == nil {
		return Sent, 0
	}
	if pe, ok := errors.AsType[*Error](err); ok {
		switch pe.Kind {
		case Retryable:
			return Retryable, max(pe.RetryAfter, 0)
		case Sent:
			// A non-nil error never means sent; an *Error missing its Kind is a bug.
			return Other, 0
		}
		return pe.Kind, 0
	}
	return Other, 0
}
