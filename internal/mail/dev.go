package mail

import (
	"context"
	"log/slog"
)

// DevMessage is the log message DevSender writes for every email.
const DevMessage = "development mailer: email not sent, printed here"

// DevSender is a Sender for local development: it sends nothing and logs each
// email (recipient, subject, text body) at INFO level, with the one-time
// code as a field of its own ("code=123456" in text logs, "code" in JSON)
// so that grep finds it. Never use it in production.
type DevSender struct {
	logger *slog.Logger
}

var _ Sender = (*DevSender)(nil)

// NewDev returns a DevSender that logs to logger (slog.Default() if nil).
func NewDev(logger *slog.Logger) *DevSender {
	if logger == nil {
		logger = slog.Default()
	}
	return &DevSender{logger: logger}
}

// Send logs m and always returns nil.
func (d *DevSender) Send(ctx context.Context, m Message) error {
	attrs := []slog.Attr{slog.String("to", m.To), slog.String("subject", m.Subject)}
	if m.Code != "" {
		attrs = append(attrs, slog.String("code", m.Code))
	}
	if m.Locale != "" {
		attrs = append(attrs, slog.String("locale", m.Locale))
	}
	if m.ListUnsubscribe != "" {
		attrs = append(attrs, slog.String("list_unsubscribe", m.ListUnsubscribe))
	}
	attrs = append(attrs, slog.String("text", m.Text), slog.Int("html_bytes", len(m.HTML)))
	d.logger.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, DevMessage, attrs...)
	return nil
}

// Logs reports whether s only logs emails (the development mailer), so
// that metrics count them as logged rather than sent.
func Logs(s Sender) bool {
	_, ok := s.(*DevSender)
	return ok
}
