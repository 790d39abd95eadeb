package mail

import (
	"context"
	"log/slog"
)

// DevMessage is the log message DevSender writes for every email.
const DevMessage = "development mailer: email not sent, printed here"

// DevSender is a Sender for local development: it sends nothing and logs each
// email (recipient, subject, text body) at INFO level. The text body usually
// contains login codes, so never use it in production.
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
	d.logger.LogAttrs(context.WithoutCancel(ctx), slog.LevelInfo, DevMessage,
		slog.String("to", m.To),
		slog.String("subject", m.Subject),
		slog.String("text", m.Text),
		slog.Int("html_bytes", len(m.HTML)),
	)
	return nil
}
