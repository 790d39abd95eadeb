package mail_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
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
	msg := codeMessage("kim@example.com")
	msg.Code, msg.Locale = code, "de"
	if err := s.Send(ctx, msg); err != nil {
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
		"subject": msg.Subject,
		"text":    msg.Text,
		"code":    code,
		"locale":  "de",
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("log %s = %v, want %v", k, rec[k], v)
		}
	}
	if rec["msg"] != mail.DevMessage {
		t.Errorf("msg = %v, want DevMessage", rec["msg"])
	}
	if !mail.Logs(d) {
		t.Error("Logs(DevSender) = false, want true")
	}
}

// In text logs the code is a plain key=value pair that grep finds, not
// buried in the quoted text body.
func TestDevSenderTextLogCode(t *testing.T) {
	var buf bytes.Buffer
	d := mail.NewDev(slog.New(slog.NewTextHandler(&buf, nil)))
	msg := codeMessage("kim@example.com")
	msg.Code = code
	if err := d.Send(t.Context(), msg); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), " code="+code+" ") {
		t.Errorf("text log lacks code=%s:\n%s", code, buf.String())
	}

	// An email without a code logs no empty code field.
	buf.Reset()
	if err := d.Send(t.Context(), mail.Message{To: "kim@example.com", Subject: "hi", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "code=") {
		t.Errorf("a code-less email logs a code field:\n%s", buf.String())
	}
}
