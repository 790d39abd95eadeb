package mail

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"
)

// DefaultTimeout bounds one SMTPSender.Send call (dial, TLS, SMTP dialogue)
// unless WithTimeout says otherwise.
const DefaultTimeout = 10 * time.Second

// Option configures an SMTPSender.
type Option func(*smtpConfig)

type smtpConfig struct {
	tlsConfig *tls.Config
	timeout   time.Duration
}

// WithTLSConfig sets the TLS configuration used for STARTTLS (smtp://) and
// implicit TLS (smtps://), e.g. to trust a private CA in tests. The config is
// cloned; an empty ServerName is set to the URL's host.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *smtpConfig) { c.tlsConfig = cfg }
}

// WithTimeout bounds each Send as a whole (default DefaultTimeout). The
// caller's context can only shorten it.
func WithTimeout(d time.Duration) Option {
	return func(c *smtpConfig) { c.timeout = d }
}

// SMTPSender sends email through an SMTP server. It is safe for concurrent
// use; each Send opens its own connection.
type SMTPSender struct {
	host        string
	port        int
	addr        string // host:port, for error messages
	implicitTLS bool
	username    string
	password    string
	from        *netmail.Address
	msgIDDomain string
	tlsConfig   *tls.Config
	timeout     time.Duration
}

var _ Sender = (*SMTPSender)(nil)

// NewSMTP returns a Sender for rawURL, which is one of
//
//	smtp://[user:pass@]host:port   plain SMTP, upgraded with STARTTLS when the server offers it
//	smtps://[user:pass@]host:port  implicit TLS (usually port 465)
//
// User and password are percent-decoded. Authentication is attempted only when
// a user is given (SCRAM-SHA-256, SCRAM-SHA-1, PLAIN or LOGIN, whichever the
// server offers first in that order; PLAIN and LOGIN are refused by the client
// on an unencrypted connection unless the host is localhost/127.0.0.1/::1).
//
// from is the From header, e.g. "Herald <no-reply@example.com>".
// Errors never contain the password.
func NewSMTP(rawURL, from string, opts ...Option) (*SMTPSender, error) {
	cfg := smtpConfig{timeout: DefaultTimeout}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.timeout <= 0 {
		return nil, fmt.Errorf("mail: timeout must be positive, got %s", cfg.timeout)
	}

	u, err := url.Parse(rawURL)
	if err != nil {
		// url.Parse errors quote the input, which may contain a password.
		return nil, errors.New("mail: invalid SMTP URL: cannot be parsed (want smtp://[user:pass@]host:port or smtps://[user:pass@]host:port)")
	}
	shown := u.Redacted()
	var implicitTLS bool
	switch strings.ToLower(u.Scheme) {
	case "smtp":
	case "smtps":
		implicitTLS = true
	case "":
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: missing scheme (want smtp:// or smtps://)", shown)
	default:
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: unsupported scheme %q (want smtp or smtps)", shown, u.Scheme)
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: want %s://host:port", shown, u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: missing host", shown)
	}
	portStr := u.Port()
	if portStr == "" {
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: missing port", shown)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: invalid port %q", shown, portStr)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("mail: invalid SMTP URL %q: unexpected path, query or fragment", shown)
	}
	var username, password string
	if u.User != nil {
		username = u.User.Username()
		password, _ = u.User.Password()
		if username == "" {
			return nil, fmt.Errorf("mail: invalid SMTP URL %q: empty user name", shown)
		}
	}

	fromAddr, err := netmail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("mail: invalid from address %q: %w", from, err)
	}
	msgIDDomain := "localhost"
	if at := strings.LastIndexByte(fromAddr.Address, '@'); at >= 0 && at < len(fromAddr.Address)-1 {
		msgIDDomain = fromAddr.Address[at+1:]
	}

	var tlsConfig *tls.Config
	if cfg.tlsConfig != nil {
		tlsConfig = cfg.tlsConfig.Clone()
	} else {
		tlsConfig = &tls.Config{}
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = host
	}
	if tlsConfig.MinVersion == 0 {
		tlsConfig.MinVersion = tls.VersionTLS12
	}

	return &SMTPSender{
		host:        host,
		port:        port,
		addr:        net.JoinHostPort(host, portStr),
		implicitTLS: implicitTLS,
		username:    username,
		password:    password,
		from:        fromAddr,
		msgIDDomain: msgIDDomain,
		tlsConfig:   tlsConfig,
		timeout:     cfg.timeout,
	}, nil
}

// Send delivers m. It returns nil once the server accepted the message.
// On failure the error is a *SendError; use IsPermanent to decide whether to
// retry. ctx cancellation aborts the SMTP dialogue at any point.
func (s *SMTPSender) Send(ctx context.Context, m Message) error {
	msg, err := s.buildMsg(m)
	if err != nil {
		return &SendError{
			permanent: true,
			text:      fmt.Sprintf("mail: invalid message: %v", err),
		}
	}

	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	client, release, err := s.newClient(ctx)
	defer release()
	if err != nil {
		return err
	}
	if err := client.DialAndSendWithContext(ctx, msg); err != nil {
		return s.wrapErr(ctx, err)
	}
	return nil
}

// newClient is a go-mail client for one connection, dialled under ctx:
// when ctx ends the socket is closed. release stops that watch; call it
// once the client is done, whatever err is.
func (s *SMTPSender) newClient(ctx context.Context) (client *gomail.Client, release func(), err error) {
	// Dial ourselves so that ctx (not only go-mail's per-command deadline)
	// governs the whole connection: when ctx ends, the socket is closed.
	var stops []func() bool
	release = func() {
		for _, stop := range stops {
			stop()
		}
	}
	dial := func(dialCtx context.Context, network, address string) (net.Conn, error) {
		var d net.Dialer
		conn, err := d.DialContext(dialCtx, network, address)
		if err != nil {
			return nil, err
		}
		stops = append(stops, context.AfterFunc(ctx, func() { _ = conn.Close() }))
		if !s.implicitTLS {
			return conn, nil
		}
		tlsConn := tls.Client(conn, s.tlsConfig)
		if err := tlsConn.HandshakeContext(dialCtx); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return tlsConn, nil
	}

	clientOpts := []gomail.Option{
		gomail.WithPort(s.port),
		// Per-command deadline inside go-mail; kept longer than ctx so that
		// ctx (which closes the socket) fires first and is reported.
		gomail.WithTimeout(s.timeout + time.Second),
		gomail.WithTLSConfig(s.tlsConfig),
		gomail.WithDialContextFunc(dial),
	}
	if s.implicitTLS {
		clientOpts = append(clientOpts, gomail.WithSSL())
	} else {
		clientOpts = append(clientOpts, gomail.WithTLSPolicy(gomail.TLSOpportunistic))
	}
	if s.username != "" {
		clientOpts = append(clientOpts,
			gomail.WithUsername(s.username),
			gomail.WithPassword(s.password),
			// Tried in this order among what the server advertises; if none
			// matches go-mail falls back to its auto-discovery.
			gomail.WithOpportunisticSMTPAuth(
				gomail.SMTPAuthSCRAMSHA256,
				gomail.SMTPAuthSCRAMSHA1,
				gomail.SMTPAuthPlain,
				gomail.SMTPAuthLogin,
			),
		)
	}
	// A fresh client per Send: go-mail's Client mutates its auth state while
	// dialling, so it must not be shared between concurrent sends.
	client, err = gomail.NewClient(s.host, clientOpts...)
	if err != nil {
		return nil, release, &SendError{text: fmt.Sprintf("mail: smtp %s: configuring client: %v", s.addr, err)}
	}
	return client, release, nil
}

// CheckResult is what Check learnt of the SMTP server.
type CheckResult struct {
	// TLS is how the session was encrypted: "implicit TLS", "STARTTLS"
	// or "none" (the server offered no STARTTLS).
	TLS string
	// Authenticated says whether AUTH ran and succeeded (only tried when
	// the URL has a user).
	Authenticated bool
}

// Check does what Send does up to the first mail command (connect, TLS
// as Send would, AUTH when the URL has a user) and then quits: it sends
// nothing. The error is a *SendError, as Send's.
func (s *SMTPSender) Check(ctx context.Context) (CheckResult, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	client, release, err := s.newClient(ctx)
	defer release()
	if err != nil {
		return CheckResult{}, err
	}
	sc, err := client.DialToSMTPClientWithContext(ctx)
	if err != nil {
		return CheckResult{}, s.wrapErr(ctx, err)
	}
	res := CheckResult{TLS: "none", Authenticated: s.username != ""}
	if s.implicitTLS {
		res.TLS = "implicit TLS"
	} else if st, ok := sc.TLSConnectionState(); ok && st.HandshakeComplete {
		res.TLS = "STARTTLS"
	}
	if err := client.CloseWithSMTPClient(sc); err != nil {
		return res, s.wrapErr(ctx, err)
	}
	return res, nil
}

func (s *SMTPSender) buildMsg(m Message) (*gomail.Msg, error) {
	if strings.TrimSpace(m.To) == "" {
		return nil, errors.New("empty recipient")
	}
	if m.Text == "" && m.HTML == "" {
		return nil, errors.New("empty body: Text or HTML is required")
	}
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	msg.FromMailAddress(s.from)
	if err := msg.To(m.To); err != nil {
		return nil, fmt.Errorf("recipient %q: %w", m.To, err)
	}
	msg.Subject(m.Subject)
	if m.ListUnsubscribe != "" {
		// RFC 8058: one-click needs an https URL; an http one (a
		// development server) is offered as a plain RFC 2369 link.
		if err := msg.SetListUnsubscribeOneClick(m.ListUnsubscribe); err != nil {
			msg.SetListUnsubscribe(m.ListUnsubscribe)
		}
	}
	msg.SetDate()
	msg.SetMessageIDWithValue(rand.Text() + "@" + s.msgIDDomain)
	switch {
	case m.Text != "" && m.HTML != "":
		msg.SetBodyString(gomail.TypeTextPlain, m.Text)
		msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)
	case m.Text != "":
		msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	default:
		msg.SetBodyString(gomail.TypeTextHTML, m.HTML)
	}
	return msg, nil
}

// wrapErr turns a go-mail error into a *SendError. go-mail's own *SendError
// carries the *Msg (and so the body), so it is flattened to its text, which
// holds only the SMTP step, server reply, recipient and Message-ID.
func (s *SMTPSender) wrapErr(ctx context.Context, err error) error {
	e := &SendError{}
	if ge, ok := errors.AsType[*gomail.SendError](err); ok {
		e.Code = ge.ErrorCode()
	} else {
		e.cause = err
	}
	if te, ok := errors.AsType[*textproto.Error](err); ok && e.Code == 0 {
		e.Code = te.Code
	}
	ctxErr := context.Cause(ctx)
	if deadline, ok := ctx.Deadline(); ctxErr == nil && ok && !time.Now().Before(deadline) {
		ctxErr = context.DeadlineExceeded // the timer has not fired yet
	}
	if ctxErr != nil && e.Code == 0 {
		// The connection was torn down because ctx ended (deadline or
		// cancellation); report that rather than "use of closed connection".
		e.cause = errors.Join(ctxErr, e.cause)
		e.text = fmt.Sprintf("mail: smtp %s: aborted: %v (%v)", s.addr, ctxErr, err)
		return e
	}
	e.text = fmt.Sprintf("mail: smtp %s: %v", s.addr, err)
	return e
}
