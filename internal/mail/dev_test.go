package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/herald-vpn/herald/internal/mail"
)

func TestDevSender(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d := mail.NewDev(logger)

	var s mail.Sender = d
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // a cancelled context must not prevent logging nor cause an error
	if err := s.Send(ctx, codeMessage("kim@example.com")); err != nil {
		t.Fatalf("Send: %v", err)
	}

	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("log output is not one JSON record: %v\n%s", err, buf.String())
	}
	want := map[string]any{
		"level":   "INFO",
		"msg":     "development mailer: email not sent, printed here",
		"to":      "kim@example.com",
		"subject": codeMessage("").Subject,
		"text":    codeMessage("").Text,
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("log %s = %v, want %v", k, rec[k], v)
		}
	}
	if rec["msg"] != mail.DevMessage {
		t.Errorf("msg = %v, want DevMessage", rec["msg"])
	}
}
