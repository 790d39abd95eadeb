// Package httpsend delivers signed webhooks over HTTP: one POST per
// attempt, no redirect followed, at most webhooks.Timeout (a connection
// within webhooks.ConnectTimeout), the answer's body read to 64 KiB. Every
// connection goes to an address the webhooks.AddressPolicy allows: the
// host is resolved here, each address is checked before it is dialled, and
// the dialer's Control checks the socket's address again, so a DNS change
// after registration cannot point Herald at its own network. A failure is
// a *webhooks.SendError: a coarse class, never the raw error (which names
// the URL and tells an open port from a closed one).
package httpsend

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// MaxResponseBody is how much of an answer's body is read.
const MaxResponseBody = 64 << 10

// UserAgent names Herald to receivers.
const UserAgent = "Herald-Webhooks/1"

// Options configure a Sender.
type Options struct {
	// Policy is where deliveries may go.
	Policy webhooks.AddressPolicy
	// Resolver resolves endpoint hosts (net.DefaultResolver).
	Resolver webhooks.Resolver
}

// Sender implements webhooks.Sender.
type Sender struct {
	client   *http.Client
	policy   webhooks.AddressPolicy
	resolver webhooks.Resolver
	dialer   *net.Dialer
	now      func() time.Time
}

// New returns a sender.
func New(o Options) *Sender {
	s := &Sender{policy: o.Policy, resolver: o.Resolver, now: time.Now}
	if s.resolver == nil {
		s.resolver = net.DefaultResolver
	}
	s.dialer = &net.Dialer{
		Timeout:   webhooks.ConnectTimeout,
		KeepAlive: 30 * time.Second,
		Control:   func(_, address string, _ syscall.RawConn) error { return s.policy.CheckDial(address) },
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial for us, past the address check
		DialContext:           s.dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   webhooks.TLSHandshakeTimeout,
		ResponseHeaderTimeout: webhooks.Timeout,
	}
	s.client = &http.Client{
		Transport:     tr,
		Timeout:       webhooks.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s
}

// dial resolves the host itself and dials only the addresses the policy
// allows, one after the other.
func (s *Sender) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else if addrs, err = s.resolver.LookupNetIP(ctx, "ip", host); err != nil {
		return nil, err
	}
	err = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	for _, a := range addrs {
		ap := netip.AddrPortFrom(a, uint16(port))
		if cerr := s.policy.Check(ap); cerr != nil {
			err = cerr
			continue
		}
		c, derr := s.dialer.DialContext(ctx, network, ap.String())
		if derr == nil {
			return c, nil
		}
		err = derr
	}
	return nil, err
}

// Send implements webhooks.Sender.
func (s *Sender) Send(ctx context.Context, r webhooks.Request) (webhooks.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, bytes.NewReader(r.Body))
	if err != nil {
		return webhooks.Response{}, &webhooks.SendError{Class: webhooks.ErrorUnreachable, Reason: "malformed URL"}
	}
	// The spec's header names, written as it writes them.
	req.Header["content-type"] = []string{"application/json"}
	req.Header["user-agent"] = []string{UserAgent}
	req.Header["webhook-id"] = []string{r.Headers.ID}
	req.Header["webhook-timestamp"] = []string{r.Headers.Timestamp}
	req.Header["webhook-signature"] = []string{r.Headers.Signature}
	res, err := s.client.Do(req)
	if err != nil {
		return webhooks.Response{}, Classify(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, MaxResponseBody))
	return webhooks.Response{StatusCode: res.StatusCode, RetryAfter: retryAfter(res.Header.Get("Retry-After"), s.now())}, nil
}

// Classify turns a client error into its class and a short reason of a
// fixed vocabulary, for the log.
func Classify(err error) *webhooks.SendError {
	var (
		netErr   net.Error
		dnsErr   *net.DNSError
		recErr   tls.RecordHeaderError
		alertErr tls.AlertError
		verifErr *tls.CertificateVerificationError
		authErr  x509.UnknownAuthorityError
		hostErr  x509.HostnameError
		certErr  x509.CertificateInvalidError
	)
	fail := func(class, reason string) *webhooks.SendError {
		return &webhooks.SendError{Class: class, Reason: reason}
	}
	switch {
	case errors.Is(err, webhooks.ErrNotPublic):
		return fail(webhooks.ErrorUnreachable, "not a public address")
	case errors.Is(err, webhooks.ErrPortNotAllowed):
		return fail(webhooks.ErrorUnreachable, "port not allowed")
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fail(webhooks.ErrorTimeout, "no answer in time")
	case errors.As(err, &verifErr), errors.As(err, &authErr), errors.As(err, &hostErr), errors.As(err, &certErr):
		return fail(webhooks.ErrorTLS, "certificate not accepted")
	case errors.As(err, &recErr), errors.As(err, &alertErr), strings.Contains(err.Error(), "tls: "):
		return fail(webhooks.ErrorTLS, "TLS handshake failed")
	case errors.As(err, &dnsErr):
		return fail(webhooks.ErrorUnreachable, "the name does not resolve")
	case errors.Is(err, syscall.ECONNREFUSED):
		return fail(webhooks.ErrorUnreachable, "connection refused")
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return fail(webhooks.ErrorUnreachable, "no route")
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return fail(webhooks.ErrorUnreachable, "connection closed")
	}
	return fail(webhooks.ErrorUnreachable, "no connection")
}

// retryAfter reads Retry-After: seconds or an HTTP date; 0 when absent or
// unreadable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

var _ webhooks.Sender = (*Sender)(nil)
