// Package securityalert works securitylog.NewDeviceAlertArgs: it tells an
// account's owner of a sign-in from a device the account had not signed
// in from, by email, by push to the account's devices and by Telegram to
// the linked chat. Each says when, from which IP and which device (user
// agent), and offers the link that ends that session
// (sessions.Service.EndLinkToken; GET /api/v1/auth/sessions/end).
//
// The channels, their skips and their retries without repeats are
// package ownernotice's.
package securityalert

import (
	"context"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/ownernotice"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/riverqueue/river"
)

// The services the worker reads and sends through (ownernotice's).
type (
	Accounts = ownernotice.Accounts
	Pusher   = ownernotice.Pusher
	Renderer = ownernotice.Renderer
	Mailer   = ownernotice.Mailer
	Chats    = ownernotice.Chats
)

// Deps are the services the alerts go through, and EndURL, the link that
// ends a session ("" or nil: the alerts carry none).
type Deps struct {
	ownernotice.Deps
	EndURL func(accountID, sessionID string) string
}

// Config is what the worker says.
type Config struct {
	// Product is the product's name in push and Telegram texts
	// (HERALD_PRODUCT_NAME); mail.DefaultProduct when empty.
	Product string
	// SendTimeout bounds each channel's send; 30 seconds when zero.
	SendTimeout time.Duration
}

// Worker works securitylog.NewDeviceAlertArgs jobs.
type Worker struct {
	river.WorkerDefaults[securitylog.NewDeviceAlertArgs]
	send   *ownernotice.Sender
	endURL func(accountID, sessionID string) string
	cfg    Config
}

// New returns the worker; an error when a required dependency is missing.
func New(deps Deps, cfg Config) (*Worker, error) {
	if cfg.Product == "" {
		cfg.Product = mail.DefaultProduct
	}
	send, err := ownernotice.NewSender(deps.Deps, "new-device alert", cfg.SendTimeout)
	if err != nil {
		return nil, err
	}
	return &Worker{send: send, endURL: deps.EndURL, cfg: cfg}, nil
}

// Timeout bounds one attempt: the three channels, one after another.
func (w *Worker) Timeout(*river.Job[securitylog.NewDeviceAlertArgs]) time.Duration {
	return w.send.JobTimeout()
}

// Work sends the alert on each channel (ownernotice.Sender.Send): an
// error, so that River retries, when a channel failed in a way a retry
// may mend.
func (w *Worker) Work(ctx context.Context, job *river.Job[securitylog.NewDeviceAlertArgs]) error {
	args := job.Args
	acct, ok, err := w.send.Recipient(ctx, args.AccountID)
	if !ok {
		return err
	}
	endURL := ""
	if w.endURL != nil && args.SessionID != "" {
		endURL = w.endURL(acct.ID, args.SessionID)
	}
	title, body := texts.NewDevice(acct.Locale, texts.NewDeviceVars{Product: w.cfg.Product, At: args.At, IP: args.IP, UserAgent: args.UserAgent})
	data := map[string]any{"type": "security", "event": string(securitylog.NewDeviceSignIn), "eventId": args.EventID, "ip": args.IP}
	if args.SessionID != "" {
		data["sessionId"] = args.SessionID
	}
	if endURL != "" {
		data["endSessionUrl"] = endURL
	}
	// The chat's text is Markdown: the client's words (its user agent)
	// are escaped, the link is bare (left as it is).
	chat := "**" + escapeMarkdown(title) + "**\n\n" + escapeMarkdown(body)
	if endURL != "" {
		chat += "\n\n" + endURL
	}
	return w.send.Send(ctx, ownernotice.Job{KeyPrefix: args.Kind(), ID: job.ID, Attempt: job.Attempt, Operation: "newDeviceAlert", Request: args},
		ownernotice.Notice{
			Account: acct, Category: preferences.CategorySecurity, Title: title, Body: body, PushData: data,
			Email: mail.EmailNewDevice, EmailVars: mail.Vars{Date: args.At, IP: args.IP, UserAgent: args.UserAgent, EndURL: endURL},
			Telegram: chat,
		})
}

// escapeMarkdown makes s literal under telegram.FormatMarkdown: every
// Markdown marker is backslash-escaped.
func escapeMarkdown(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_~[]()", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
