package mailtest

import (
	"fmt"
	"net/smtp"
	"strings"
	"testing"
	"time"
)

func TestExtractCode(t *testing.T) {
	tests := []struct {
		name   string
		text   string
		want   string
		wantOK bool
	}{
		{"alone", "123456", "123456", true},
		{"in body", "Hello,\n\nyour code:\n\n  654321  \n\nbye\n", "654321", true},
		{"crlf", "code:\r\n000042\r\n", "000042", true},
		{"first wins", "111111\n222222\n", "111111", true},
		{"inline is not a code", "your code is 123456\n", "", false},
		{"five digits", "12345\n", "", false},
		{"seven digits", "1234567\n", "", false},
		{"letters", "12a456\n", "", false},
		{"non-ascii digits", "١٢٣٤٥٦\n", "", false},
		{"empty", "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ExtractCode(tt.text)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ExtractCode(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestParseMessage(t *testing.T) {
	const raw = "From: A <a@example.com>\r\n" +
		"To: b@example.com\r\n" +
		"Subject: =?UTF-8?q?Caf=C3=A9_code?=\r\n" +
		"MIME-Version: 1.0\r\n" +
		"Content-Type: multipart/mixed; boundary=outer\r\n" +
		"\r\n" +
		"--outer\r\n" +
		"Content-Type: multipart/alternative; boundary=inner\r\n" +
		"\r\n" +
		"--inner\r\n" +
		"Content-Type: text/plain; charset=UTF-8\r\n" +
		"Content-Transfer-Encoding: quoted-printable\r\n" +
		"\r\n" +
		"Caf=C3=A9 code:\r\n" +
		"123456\r\n" +
		"a very long line that was soft=\r\n" +
		" wrapped\r\n" +
		"--inner\r\n" +
		"Content-Type: text/html; charset=UTF-8\r\n" +
		"Content-Transfer-Encoding: base64\r\n" +
		"\r\n" +
		"PGI+MTIz\r\n" +
		"NDU2PC9iPg==\r\n" +
		"--inner--\r\n" +
		"--outer\r\n" +
		"Content-Type: application/pdf\r\n" +
		"Content-Transfer-Encoding: base64\r\n" +
		"\r\n" +
		"JVBERi0=\r\n" +
		"--outer--\r\n"
	got := parseMessage([]byte(raw))
	if got.ParseErr != nil {
		t.Fatalf("ParseErr: %v", got.ParseErr)
	}
	if got.Subject != "Café code" {
		t.Errorf("Subject = %q", got.Subject)
	}
	if want := "Café code:\n123456\na very long line that was soft wrapped"; got.Text != want {
		t.Errorf("Text = %q, want %q", got.Text, want)
	}
	if got.HTML != "<b>123456</b>" {
		t.Errorf("HTML = %q", got.HTML)
	}
	if got.Header.Get("From") != "A <a@example.com>" {
		t.Errorf("From header = %q", got.Header.Get("From"))
	}
}

func TestParseMessageBroken(t *testing.T) {
	got := parseMessage([]byte("no headers here"))
	if got.ParseErr == nil {
		t.Error("ParseErr = nil for a message without header/body separator")
	}
	if string(got.Raw) != "no headers here" {
		t.Errorf("Raw = %q", got.Raw)
	}
}

// TestServerWithStdlibClient exercises the server with net/smtp, independently
// of the mail package.
func TestServerWithStdlibClient(t *testing.T) {
	s := NewServer(t, WithAuth("u", "p", "PLAIN"))
	body := "Subject: hi\r\nContent-Type: text/plain\r\n\r\n999999\r\n"
	auth := smtp.PlainAuth("", "u", "p", "127.0.0.1")
	if err := smtp.SendMail(s.Addr(), auth, "from@example.com", []string{"To@Example.com"}, []byte(body)); err != nil {
		t.Fatalf("SendMail: %v", err)
	}
	got := s.WaitForMessage(t, "to@example.com", time.Second)
	if got.From != "from@example.com" || got.AuthUser != "u" || got.Subject != "hi" {
		t.Errorf("got From=%q AuthUser=%q Subject=%q", got.From, got.AuthUser, got.Subject)
	}
	if c, ok := ExtractCode(got.Text); !ok || c != "999999" {
		t.Errorf("code = %q, %v", c, ok)
	}

	// Messages returns copies.
	msgs := s.Messages()
	msgs[0].To[0] = "mutated"
	msgs[0].Raw[0] = 'X'
	msgs[0].Header["Subject"][0] = "mutated"
	again := s.Messages()[0]
	if again.To[0] == "mutated" || again.Raw[0] == 'X' || again.Header.Get("Subject") == "mutated" {
		t.Error("Messages returned shared state")
	}

	// Without auth the server refuses MAIL FROM.
	err := smtp.SendMail(s.Addr(), nil, "from@example.com", []string{"x@example.com"}, []byte(body))
	if err == nil || !strings.HasPrefix(err.Error(), "530") {
		t.Errorf("unauthenticated SendMail err = %v, want 530", err)
	}
	if n := s.Count("x@example.com"); n != 0 {
		t.Errorf("Count = %d, want 0", n)
	}
}

func TestWaitForMessagesTimeout(t *testing.T) {
	s := NewServer(t)
	ft := &fakeTB{TB: t}
	start := time.Now()
	got := s.WaitForMessage(ft, "nobody@example.com", 100*time.Millisecond)
	if !ft.failed {
		t.Error("WaitForMessage did not fail the test on timeout")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("waited %s, want about 100ms", d)
	}
	if got.Raw != nil {
		t.Errorf("got %+v, want zero Received", got)
	}
}

func TestWaitForMessagesWakesUp(t *testing.T) {
	s := NewServer(t)
	go func() {
		time.Sleep(50 * time.Millisecond)
		for i := range 2 {
			body := fmt.Sprintf("Subject: %d\r\n\r\nbody\r\n", i)
			_ = smtp.SendMail(s.Addr(), nil, "f@example.com", []string{"w@example.com"}, []byte(body))
		}
	}()
	msgs := s.WaitForMessages(t, "w@example.com", 2, 5*time.Second)
	if len(msgs) != 2 || msgs[0].Subject != "0" || msgs[1].Subject != "1" {
		t.Errorf("got %d messages: %+v", len(msgs), msgs)
	}
}

// fakeTB records Fatalf instead of stopping the test.
type fakeTB struct {
	testing.TB
	failed bool
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = true
	f.TB.Logf("(expected) "+format, args...)
}
