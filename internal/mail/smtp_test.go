package mail_test

import (
	"context"
	"errors"
	"mime"
	"net"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
)

const (
	from     = "Herald <no-reply@localhost>"
	code     = "482913"
	waitTime = 5 * time.Second
)

func codeMessage(to string) mail.Message {
	return mail.Message{
		To:      to,
		Subject: "Votre code de connexion – Herald",
		Text:    "Hello,\n\nyour sign-in code is:\n\n" + code + "\n\nIt expires in 10 minutes.\n",
		HTML:    "<p>Hello,</p><p>your sign-in code is:</p><p style=\"font-size:2em\"><b>" + code + "</b></p>",
	}
}

func newSender(t *testing.T, rawURL string, opts ...mail.Option) *mail.SMTPSender {
	t.Helper()
	s, err := mail.NewSMTP(rawURL, from, opts...)
	if err != nil {
		t.Fatalf("NewSMTP(%q): %v", rawURL, err)
	}
	return s
}

func TestSMTPSendContent(t *testing.T) {
	srv := mailtest.NewServer(t)
	s := newSender(t, srv.URL())
	const to = "alice@example.com"

	if err := s.Send(t.Context(), codeMessage(to)); err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.WaitForMessage(t, to, waitTime)

	if got.ParseErr != nil {
		t.Fatalf("parse error: %v\n%s", got.ParseErr, got.Raw)
	}
	if got.From != "no-reply@localhost" {
		t.Errorf("envelope from = %q, want no-reply@localhost", got.From)
	}
	if len(got.To) != 1 || got.To[0] != to {
		t.Errorf("envelope to = %q, want [%s]", got.To, to)
	}
	if want := codeMessage(to).Subject; got.Subject != want {
		t.Errorf("subject = %q, want %q", got.Subject, want)
	}
	if c, ok := mailtest.ExtractCode(got.Text); !ok || c != code {
		t.Errorf("ExtractCode(text) = %q, %v; want %s\ntext:\n%s", c, ok, code, got.Text)
	}
	if !strings.Contains(got.HTML, "<b>"+code+"</b>") {
		t.Errorf("HTML part missing code:\n%s", got.HTML)
	}
	if got.TLS || got.AuthUser != "" {
		t.Errorf("TLS=%v AuthUser=%q, want plain unauthenticated session", got.TLS, got.AuthUser)
	}

	h := got.Header
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "multipart/alternative" {
		t.Errorf("Content-Type = %q, want multipart/alternative", h.Get("Content-Type"))
	}
	if d, err := h.Date(); err != nil || time.Since(d).Abs() > time.Minute {
		t.Errorf("Date header %q: parsed %v, err %v", h.Get("Date"), d, err)
	}
	if id := h.Get("Message-Id"); !strings.HasPrefix(id, "<") || !strings.HasSuffix(id, "@localhost>") || len(id) < 20 {
		t.Errorf("Message-ID = %q, want <random@localhost>", id)
	}
	if f, err := h.AddressList("From"); err != nil || len(f) != 1 || f[0].Name != "Herald" || f[0].Address != "no-reply@localhost" {
		t.Errorf("From header = %q (%v)", h.Get("From"), err)
	}
	if toh, err := h.AddressList("To"); err != nil || len(toh) != 1 || toh[0].Address != to {
		t.Errorf("To header = %q (%v)", h.Get("To"), err)
	}
	if strings.Contains(strings.ToLower(string(got.Raw)), "go-mail") {
		t.Errorf("message advertises the mailer library:\n%s", got.Raw)
	}
	if n := srv.Count(to); n != 1 {
		t.Errorf("Count = %d, want 1", n)
	}
}

func TestSMTPSendSinglePart(t *testing.T) {
	tests := []struct {
		name     string
		msg      mail.Message
		wantType string
	}{
		{"text only", mail.Message{To: "a@example.com", Subject: "s", Text: code + "\n"}, "text/plain"},
		{"html only", mail.Message{To: "a@example.com", Subject: "s", HTML: "<b>hi</b>"}, "text/html"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.NewServer(t)
			if err := newSender(t, srv.URL()).Send(t.Context(), tt.msg); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitForMessage(t, tt.msg.To, waitTime)
			if mt, _, _ := mime.ParseMediaType(got.Header.Get("Content-Type")); mt != tt.wantType {
				t.Errorf("Content-Type = %q, want %s", got.Header.Get("Content-Type"), tt.wantType)
			}
			// A single-part body ends with the message's final CRLF.
			if strings.TrimSpace(got.Text) != strings.TrimSpace(tt.msg.Text) || strings.TrimSpace(got.HTML) != strings.TrimSpace(tt.msg.HTML) {
				t.Errorf("got text %q html %q, want %q %q", got.Text, got.HTML, tt.msg.Text, tt.msg.HTML)
			}
		})
	}
}

func TestSMTPTransports(t *testing.T) {
	tests := []struct {
		name    string
		server  func(testing.TB) *mailtest.Server
		trust   bool
		wantTLS bool
	}{
		{"smtp without STARTTLS offered", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t) }, false, false},
		{"smtp with STARTTLS offered", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t, mailtest.WithStartTLS()) }, true, true},
		{"smtps implicit TLS", func(t testing.TB) *mailtest.Server { return mailtest.NewTLSServer(t) }, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.server(t)
			var opts []mail.Option
			if tt.trust {
				opts = append(opts, mail.WithTLSConfig(srv.ClientTLSConfig()))
			}
			const to = "bob@example.com"
			if err := newSender(t, srv.URL(), opts...).Send(t.Context(), codeMessage(to)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			got := srv.WaitForMessage(t, to, waitTime)
			if got.TLS != tt.wantTLS {
				t.Errorf("TLS = %v, want %v", got.TLS, tt.wantTLS)
			}
			if c, ok := mailtest.ExtractCode(got.Text); !ok || c != code {
				t.Errorf("code = %q, %v", c, ok)
			}
		})
	}
}

func TestSMTPUntrustedCertificate(t *testing.T) {
	tests := []struct {
		name   string
		server func(testing.TB) *mailtest.Server
	}{
		{"STARTTLS", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t, mailtest.WithStartTLS()) }},
		{"smtps", func(t testing.TB) *mailtest.Server { return mailtest.NewTLSServer(t) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := tt.server(t)
			err := newSender(t, srv.URL()).Send(t.Context(), codeMessage("c@example.com"))
			if err == nil {
				t.Fatal("Send succeeded with an untrusted certificate")
			}
			if mail.IsPermanent(err) {
				t.Errorf("IsPermanent(%v) = true, want false", err)
			}
			if n := srv.Count("c@example.com"); n != 0 {
				t.Errorf("Count = %d, want 0", n)
			}
		})
	}
}

func TestSMTPAuth(t *testing.T) {
	const user, pass = "herald", "p@ss:w/rd%"
	tests := []struct {
		name  string
		mechs []string
		tls   bool
	}{
		{"PLAIN over plain localhost", []string{"PLAIN"}, false},
		{"LOGIN over plain localhost", []string{"LOGIN"}, false},
		{"PLAIN and LOGIN offered", []string{"LOGIN", "PLAIN"}, false},
		{"PLAIN over smtps", []string{"PLAIN"}, true},
		{"LOGIN over smtps", []string{"LOGIN"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srv *mailtest.Server
			var opts []mail.Option
			if tt.tls {
				srv = mailtest.NewTLSServer(t, mailtest.WithAuth(user, pass, tt.mechs...))
				opts = append(opts, mail.WithTLSConfig(srv.ClientTLSConfig()))
			} else {
				srv = mailtest.NewServer(t, mailtest.WithAuth(user, pass, tt.mechs...))
			}
			u := &url.URL{Scheme: strings.SplitN(srv.URL(), ":", 2)[0], User: url.UserPassword(user, pass), Host: srv.Addr()}
			const to = "dave@example.com"
			if err := newSender(t, u.String(), opts...).Send(t.Context(), codeMessage(to)); err != nil {
				t.Fatalf("Send: %v", err)
			}
			if got := srv.WaitForMessage(t, to, waitTime); got.AuthUser != user {
				t.Errorf("AuthUser = %q, want %q", got.AuthUser, user)
			}
		})
	}
}

func TestSMTPAuthFailures(t *testing.T) {
	tests := []struct {
		name     string
		userinfo string
		wantCode int
	}{
		{"wrong password", "herald:wrong@", 535},
		{"no credentials", "", 530},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.NewServer(t, mailtest.WithAuth("herald", "secret"))
			s := newSender(t, "smtp://"+tt.userinfo+srv.Addr())
			err := s.Send(t.Context(), codeMessage("e@example.com"))
			assertSendError(t, err, tt.wantCode, true)
			if strings.Contains(err.Error(), "wrong") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

func TestSMTPRefusals(t *testing.T) {
	tests := []struct {
		name          string
		set           func(*mailtest.Server, bool)
		wantCode      int
		wantPermanent bool
	}{
		{"outage at MAIL FROM", (*mailtest.Server).SetFailing, 451, false},
		{"recipient rejected", (*mailtest.Server).SetRejecting, 550, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mailtest.NewServer(t)
			s := newSender(t, srv.URL())
			const to = "frank@example.com"

			tt.set(srv, true)
			err := s.Send(t.Context(), codeMessage(to))
			assertSendError(t, err, tt.wantCode, tt.wantPermanent)
			if n := srv.Count(to); n != 0 {
				t.Errorf("Count during refusal = %d, want 0", n)
			}

			tt.set(srv, false)
			if err := s.Send(t.Context(), codeMessage(to)); err != nil {
				t.Fatalf("Send after recovery: %v", err)
			}
			srv.WaitForMessage(t, to, waitTime)
			if n := srv.Count(to); n != 1 {
				t.Errorf("Count after recovery = %d, want 1", n)
			}
		})
	}
}

// assertSendError checks the code and classification of err and that it
// does not leak the message body.
func assertSendError(t *testing.T, err error, wantCode int, wantPermanent bool) {
	t.Helper()
	if err == nil {
		t.Fatal("Send succeeded, want an error")
	}
	t.Logf("error: %v", err)
	se, ok := errors.AsType[*mail.SendError](err)
	if !ok {
		t.Fatalf("error %T is not a *mail.SendError: %v", err, err)
	}
	if se.Code != wantCode {
		t.Errorf("Code = %d, want %d (err: %v)", se.Code, wantCode, err)
	}
	if got := mail.IsPermanent(err); got != wantPermanent {
		t.Errorf("IsPermanent = %v, want %v (err: %v)", got, wantPermanent, err)
	}
	if strings.Contains(err.Error(), code) {
		t.Errorf("error text leaks the message body: %v", err)
	}
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), code) {
			t.Errorf("wrapped error leaks the message body: %v", e)
		}
	}
}

func TestNewSMTPBadURL(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{"empty", "", "missing scheme"},
		{"no scheme", "localhost:25", "smtp"},
		{"http scheme", "http://localhost:25", "unsupported scheme"},
		{"smtp+tls scheme", "submission://localhost:587", "unsupported scheme"},
		{"missing port", "smtp://localhost", "missing port"},
		{"empty port", "smtp://localhost:", "missing port"},
		{"missing host", "smtp://:25", "missing host"},
		{"bad port", "smtp://localhost:smtp", "cannot be parsed"},
		{"port out of range", "smtp://localhost:70000", "invalid port"},
		{"port zero", "smtps://localhost:0", "invalid port"},
		{"path", "smtp://localhost:25/relay", "unexpected path"},
		{"query", "smtp://localhost:25?tls=1", "unexpected path"},
		{"opaque", "smtp:localhost:25", "want smtp://host:port"},
		{"empty user", "smtp://:s3cret@localhost:25", "empty user"},
		{"unparsable with password", "smtp://u:s3cret%zz@localhost:25", "cannot be parsed"},
		{"bad scheme with password", "ftp://u:s3cret@localhost:25", "unsupported scheme"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := mail.NewSMTP(tt.url, from)
			if err == nil {
				t.Fatalf("NewSMTP(%q) = %v, want error", tt.url, s)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), "s3cret") {
				t.Errorf("error leaks the password: %v", err)
			}
		})
	}
}

func TestNewSMTPValid(t *testing.T) {
	tests := []string{
		"smtp://localhost:25",
		"SMTP://localhost:1025",
		"smtps://smtp.example.com:465",
		"smtp://user:pass@smtp.example.com:587",
		"smtp://user%40example.com:p%2Fss@smtp.example.com:587/",
		"smtp://[::1]:25",
	}
	for _, raw := range tests {
		if _, err := mail.NewSMTP(raw, from); err != nil {
			t.Errorf("NewSMTP(%q): %v", raw, err)
		}
	}
}

func TestNewSMTPBadOptions(t *testing.T) {
	tests := []struct {
		name string
		from string
		opts []mail.Option
	}{
		{"bad from", "not an address", nil},
		{"empty from", "", nil},
		{"zero timeout", from, []mail.Option{mail.WithTimeout(0)}},
		{"negative timeout", from, []mail.Option{mail.WithTimeout(-time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := mail.NewSMTP("smtp://localhost:25", tt.from, tt.opts...); err == nil {
				t.Error("NewSMTP succeeded, want error")
			}
		})
	}
}

func TestSMTPInvalidMessage(t *testing.T) {
	tests := []struct {
		name string
		msg  mail.Message
	}{
		{"empty to", mail.Message{Subject: "s", Text: "t"}},
		{"malformed to", mail.Message{To: "not an address", Subject: "s", Text: "t"}},
		{"two recipients", mail.Message{To: "a@example.com, b@example.com", Subject: "s", Text: "t"}},
		{"empty body", mail.Message{To: "a@example.com", Subject: "s"}},
	}
	srv := mailtest.NewServer(t)
	s := newSender(t, srv.URL())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Send(t.Context(), tt.msg)
			if err == nil {
				t.Fatal("Send succeeded, want error")
			}
			if !mail.IsPermanent(err) {
				t.Errorf("IsPermanent(%v) = false, want true", err)
			}
		})
	}
	if n := len(srv.Messages()); n != 0 {
		t.Errorf("server received %d messages, want 0", n)
	}
}

func TestSMTPUnreachable(t *testing.T) {
	// Reserve a port, then free it so that nothing listens there.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	s := newSender(t, "smtp://"+addr)
	start := time.Now()
	err = s.Send(t.Context(), codeMessage("g@example.com"))
	if err == nil {
		t.Fatal("Send succeeded, want error")
	}
	t.Logf("error: %v", err)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Send took %s, want a quick failure", d)
	}
	if mail.IsPermanent(err) {
		t.Errorf("IsPermanent(%v) = true, want false", err)
	}
	if !strings.Contains(err.Error(), addr) {
		t.Errorf("error %q does not name the server", err)
	}
}

// silentServer accepts connections and never answers, like a black hole.
func silentServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

func TestSMTPHangingServer(t *testing.T) {
	tests := []struct {
		name    string
		scheme  string
		timeout time.Duration // WithTimeout; 0 = default
		ctxTime time.Duration // context deadline; 0 = none
	}{
		{"context deadline", "smtp", 0, 200 * time.Millisecond},
		{"context deadline smtps", "smtps", 0, 200 * time.Millisecond},
		{"WithTimeout", "smtp", 200 * time.Millisecond, 0},
		{"WithTimeout smtps", "smtps", 200 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts []mail.Option
			if tt.timeout > 0 {
				opts = append(opts, mail.WithTimeout(tt.timeout))
			}
			s := newSender(t, tt.scheme+"://"+silentServer(t), opts...)
			ctx := t.Context()
			if tt.ctxTime > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTime)
				defer cancel()
			}
			start := time.Now()
			err := s.Send(ctx, codeMessage("h@example.com"))
			if err == nil {
				t.Fatal("Send succeeded, want error")
			}
			t.Logf("error: %v", err)
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("Send took %s, want about 200ms", d)
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("errors.Is(%v, DeadlineExceeded) = false", err)
			}
			if mail.IsPermanent(err) {
				t.Errorf("IsPermanent(%v) = true, want false", err)
			}
		})
	}
}

func TestSMTPCancelled(t *testing.T) {
	s := newSender(t, "smtp://"+silentServer(t))
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(100*time.Millisecond, cancel)
	err := s.Send(ctx, codeMessage("i@example.com"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("errors.Is(%v, Canceled) = false", err)
	}
}

func TestSMTPConcurrentSends(t *testing.T) {
	srv := mailtest.NewServer(t, mailtest.WithAuth("u", "p"))
	s := newSender(t, "smtp://u:p@"+srv.Addr())
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() { errs <- s.Send(t.Context(), codeMessage("j@example.com")) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Send: %v", err)
		}
	}
	msgs := srv.WaitForMessages(t, "j@example.com", n, waitTime)
	ids := map[string]bool{}
	for _, m := range msgs {
		ids[m.Header.Get("Message-Id")] = true
	}
	if len(ids) != n {
		t.Errorf("%d distinct Message-IDs for %d messages", len(ids), n)
	}
}

func TestIsPermanent(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"plain error", errors.New("boom"), false},
		{"context deadline", context.DeadlineExceeded, false},
		{"textproto 550", &textproto.Error{Code: 550, Msg: "no such user"}, true},
		{"textproto 421", &textproto.Error{Code: 421, Msg: "try later"}, false},
		{"wrapped textproto 554", errors.Join(errors.New("x"), &textproto.Error{Code: 554, Msg: "rejected"}), true},
		{"SendError 550", &mail.SendError{Code: 550}, true},
		{"SendError 451", &mail.SendError{Code: 451}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mail.IsPermanent(tt.err); got != tt.want {
				t.Errorf("IsPermanent(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
