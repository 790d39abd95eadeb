// Package mailtest provides a real in-process SMTP server for tests, built on
// github.com/emersion/go-smtp. It records every accepted message, decoded with
// the standard library, and can simulate outages and refusals.
package mailtest

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Option configures a Server.
type Option func(*config)

type config struct {
	user, pass string
	mechs      []string
	startTLS   bool
}

// WithAuth makes the server advertise AUTH and require a successful login
// with user/pass before MAIL FROM (530 otherwise, 535 for bad credentials).
// mechanisms defaults to PLAIN and LOGIN; use it to offer only one.
func WithAuth(user, pass string, mechanisms ...string) Option {
	return func(c *config) {
		c.user, c.pass = user, pass
		c.mechs = mechanisms
		if len(c.mechs) == 0 {
			c.mechs = []string{sasl.Plain, sasl.Login}
		}
	}
}

// WithStartTLS makes a plain (smtp://) server offer STARTTLS with a
// self-signed certificate; clients trust it via ClientTLSConfig. Ignored by
// NewTLSServer.
func WithStartTLS() Option {
	return func(c *config) { c.startTLS = true }
}

// Received is one message accepted by the server.
type Received struct {
	From     string      // envelope sender (MAIL FROM)
	To       []string    // envelope recipients (RCPT TO)
	Subject  string      // decoded Subject header
	Text     string      // decoded text/plain part, CRLF normalised to LF
	HTML     string      // decoded text/html part, CRLF normalised to LF
	Header   mail.Header // top-level headers as parsed by net/mail
	Raw      []byte      // the message exactly as received after DATA
	TLS      bool        // whether the session was TLS (implicit or STARTTLS)
	AuthUser string      // the authenticated user name, "" if none
	ParseErr error       // non-nil if the message could not be fully parsed
	Received time.Time   // when DATA completed
}

// Server is a running SMTP server on 127.0.0.1. Create it with NewServer or
// NewTLSServer; it is closed by t.Cleanup. All methods are safe for concurrent
// use.
type Server struct {
	scheme    string
	addr      string
	cfg       config
	certPool  *x509.CertPool // nil when the server does no TLS
	smtp      *smtp.Server
	mu        sync.Mutex
	msgs      []Received
	changed   chan struct{} // closed and replaced whenever msgs grows
	failing   bool
	rejecting bool
}

// NewServer starts a plain SMTP server (no TLS unless WithStartTLS, insecure
// auth allowed) on 127.0.0.1:0. URL returns "smtp://127.0.0.1:PORT".
func NewServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t, "smtp", opts)
	var tlsConfig *tls.Config
	if s.cfg.startTLS {
		tlsConfig, s.certPool = selfSigned(t)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	s.start(t, ln, tlsConfig)
	return s
}

// NewTLSServer starts an implicit-TLS SMTP server with a self-signed
// certificate for 127.0.0.1, ::1 and localhost. URL returns
// "smtps://127.0.0.1:PORT"; clients must trust ClientTLSConfig or CertPool.
func NewTLSServer(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t, "smtps", opts)
	var tlsConfig *tls.Config
	tlsConfig, s.certPool = selfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", tlsConfig)
	if err != nil {
		t.Fatalf("mailtest: listen: %v", err)
	}
	s.start(t, ln, nil)
	return s
}

func newServer(t testing.TB, scheme string, opts []Option) *Server {
	t.Helper()
	s := &Server{scheme: scheme, changed: make(chan struct{})}
	for _, o := range opts {
		if o != nil {
			o(&s.cfg)
		}
	}
	return s
}

func (s *Server) start(t testing.TB, ln net.Listener, startTLS *tls.Config) {
	t.Helper()
	s.addr = ln.Addr().String()
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &session{srv: s, conn: c}, nil
	}))
	srv.Domain = "localhost"
	srv.AllowInsecureAuth = true
	srv.TLSConfig = startTLS
	srv.MaxMessageBytes = 10 << 20
	srv.MaxRecipients = 50
	srv.ReadTimeout = 30 * time.Second
	srv.WriteTimeout = 30 * time.Second
	srv.ErrorLog = log.New(io.Discard, "", 0)
	s.smtp = srv

	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		_ = srv.Close()
		// Close the listener too: if Serve has not registered it yet,
		// srv.Close cannot, and Serve would accept forever.
		_ = ln.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("mailtest: the SMTP server had not stopped 10s after Close")
		}
	})
}

// URL returns "smtp://127.0.0.1:PORT" or, for NewTLSServer, "smtps://...".
// It carries no credentials; see URLWithAuth.
func (s *Server) URL() string { return s.scheme + "://" + s.addr }

// URLWithAuth returns URL with user:pass (not escaped; use simple values).
func (s *Server) URLWithAuth(user, pass string) string {
	return s.scheme + "://" + user + ":" + pass + "@" + s.addr
}

// Addr returns "127.0.0.1:PORT".
func (s *Server) Addr() string { return s.addr }

// CertPool returns a pool trusting the server certificate, or nil if the
// server does no TLS.
func (s *Server) CertPool() *x509.CertPool { return s.certPool }

// ClientTLSConfig returns a new client TLS config trusting the server
// certificate, or nil if the server does no TLS.
func (s *Server) ClientTLSConfig() *tls.Config {
	if s.certPool == nil {
		return nil
	}
	return &tls.Config{RootCAs: s.certPool, MinVersion: tls.VersionTLS12}
}

// SetFailing makes the server answer MAIL FROM with "451 4.3.0" (a temporary
// outage) while on. Nothing is recorded meanwhile.
func (s *Server) SetFailing(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failing = on
}

// SetRejecting makes the server answer RCPT TO with "550 5.1.1" (a permanent
// refusal) while on. Nothing is recorded meanwhile.
func (s *Server) SetRejecting(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejecting = on
}

// Messages returns copies of all accepted messages, oldest first.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Received, len(s.msgs))
	for i, m := range s.msgs {
		out[i] = m.clone()
	}
	return out
}

// Count returns how many accepted messages had to among their envelope
// recipients (compared case-insensitively).
func (s *Server) Count(to string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.matching(to))
}

// WaitForMessage waits until at least one message to the given recipient has
// been accepted and returns the most recent one; it fails the test (t.Fatalf)
// after timeout. To wait for a further message, use WaitForMessages with the
// expected total.
func (s *Server) WaitForMessage(t testing.TB, to string, timeout time.Duration) Received {
	t.Helper()
	msgs := s.WaitForMessages(t, to, 1, timeout)
	if len(msgs) == 0 { // only reachable if t.Fatalf did not stop the goroutine
		return Received{}
	}
	return msgs[len(msgs)-1]
}

// WaitForMessages waits until at least n messages to the given recipient have
// been accepted and returns all of them (copies, oldest first); it fails the
// test (t.Fatalf) after timeout.
func (s *Server) WaitForMessages(t testing.TB, to string, n int, timeout time.Duration) []Received {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		idx := s.matching(to)
		changed := s.changed
		if len(idx) >= n && n > 0 {
			out := make([]Received, len(idx))
			for i, j := range idx {
				out[i] = s.msgs[j].clone()
			}
			s.mu.Unlock()
			return out
		}
		s.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			t.Fatalf("mailtest: timed out after %s waiting for %d message(s) to %q; got %d (all recipients: %v)",
				timeout, n, to, len(idx), s.recipients())
			return nil
		}
	}
}

// matching returns the indexes of messages addressed to `to`. Callers hold mu.
func (s *Server) matching(to string) []int {
	var idx []int
	for i, m := range s.msgs {
		for _, r := range m.To {
			if strings.EqualFold(r, to) {
				idx = append(idx, i)
				break
			}
		}
	}
	return idx
}

func (s *Server) recipients() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var all []string
	for _, m := range s.msgs {
		all = append(all, m.To...)
	}
	return all
}

func (s *Server) record(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.msgs = append(s.msgs, r)
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) state() (failing, rejecting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failing, s.rejecting
}

// session handles one SMTP connection. go-smtp calls its methods from a
// single goroutine per connection.
type session struct {
	srv      *Server
	conn     *smtp.Conn
	authUser string
	from     string
	to       []string
}

var (
	_ smtp.Session     = (*session)(nil)
	_ smtp.AuthSession = (*session)(nil)
)

var (
	errOutage = &smtp.SMTPError{
		Code: 451, EnhancedCode: smtp.EnhancedCode{4, 3, 0},
		Message: "mailtest: simulated temporary failure",
	}
	errRejected = &smtp.SMTPError{
		Code: 550, EnhancedCode: smtp.EnhancedCode{5, 1, 1},
		Message: "mailtest: simulated permanent rejection",
	}
	errAuthRequired = &smtp.SMTPError{
		Code: 530, EnhancedCode: smtp.EnhancedCode{5, 7, 0},
		Message: "Authentication required",
	}
)

func (ss *session) AuthMechanisms() []string {
	if ss.srv.cfg.user == "" {
		return nil
	}
	return ss.srv.cfg.mechs
}

func (ss *session) Auth(mech string) (sasl.Server, error) {
	cfg := ss.srv.cfg
	if cfg.user == "" {
		return nil, smtp.ErrAuthUnsupported
	}
	check := func(user, pass string) error {
		if user != cfg.user || pass != cfg.pass {
			return smtp.ErrAuthFailed
		}
		ss.authUser = user
		return nil
	}
	offered := false
	for _, m := range cfg.mechs {
		if strings.EqualFold(m, mech) {
			offered = true
		}
	}
	if !offered {
		return nil, smtp.ErrAuthUnknownMechanism
	}
	switch strings.ToUpper(mech) {
	case sasl.Plain:
		return sasl.NewPlainServer(func(identity, user, pass string) error {
			if identity != "" && identity != user {
				return smtp.ErrAuthFailed
			}
			return check(user, pass)
		}), nil
	case sasl.Login:
		return &loginServer{check: check}, nil
	default:
		return nil, smtp.ErrAuthUnknownMechanism
	}
}

func (ss *session) Mail(from string, _ *smtp.MailOptions) error {
	if failing, _ := ss.srv.state(); failing {
		return errOutage
	}
	if ss.srv.cfg.user != "" && ss.authUser == "" {
		return errAuthRequired
	}
	ss.from = from
	ss.to = nil
	return nil
}

func (ss *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	if _, rejecting := ss.srv.state(); rejecting {
		return errRejected
	}
	ss.to = append(ss.to, to)
	return nil
}

func (ss *session) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	rec := parseMessage(raw)
	rec.From = ss.from
	rec.To = append([]string(nil), ss.to...)
	_, rec.TLS = ss.conn.TLSConnectionState()
	rec.AuthUser = ss.authUser
	rec.Received = time.Now()
	ss.srv.record(rec)
	return nil
}

func (ss *session) Reset() {
	ss.from = ""
	ss.to = nil
}

func (ss *session) Logout() error { return nil }

// loginServer implements the server side of the (obsolete but common) LOGIN
// SASL mechanism, which go-sasl only provides as a client.
type loginServer struct {
	check    func(user, pass string) error
	step     int
	username string
}

func (l *loginServer) Next(response []byte) (challenge []byte, done bool, err error) {
	switch l.step {
	case 0:
		l.step++
		if response != nil { // initial response carries the user name
			l.username = string(response)
			l.step++
			return []byte("Password:"), false, nil
		}
		return []byte("Username:"), false, nil
	case 1:
		l.step++
		l.username = string(response)
		return []byte("Password:"), false, nil
	case 2:
		l.step++
		return nil, true, l.check(l.username, string(response))
	default:
		return nil, false, errors.New("mailtest: unexpected LOGIN response")
	}
}
