package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
)

// forbiddenPrefixes are the ranges an endpoint may not resolve to (unless
// private addresses are allowed): Herald's own host, its networks, link
// local and the cloud metadata services on it, and what no public server
// has. Checked at registration and again when each connection is dialled,
// since DNS can change in between.
var forbiddenPrefixes = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",          // "this" network
		"10.0.0.0/8",         // private
		"100.64.0.0/10",      // carrier-grade NAT
		"127.0.0.0/8",        // loopback
		"169.254.0.0/16",     // link local, 169.254.169.254 metadata among it
		"172.16.0.0/12",      // private
		"192.0.0.0/24",       // IETF protocol assignments (192.0.0.192 is Oracle's metadata)
		"192.168.0.0/16",     // private
		"198.18.0.0/15",      // benchmarking
		"224.0.0.0/4",        // multicast
		"240.0.0.0/4",        // reserved, broadcast
		"::/128",             // unspecified
		"::1/128",            // loopback
		"64:ff9b::/96",       // NAT64 of any IPv4, private ones included
		"fc00::/7",           // unique local (fd00:ec2::254 is AWS's metadata)
		"fe80::/10",          // link local
		"ff00::/8",           // multicast
		"2001:db8::/32",      // documentation
		"100::/64",           // discard
		"::ffff:0:0/96",      // IPv4-mapped: checked unmapped instead
		"fec0::/10",          // site local (deprecated)
		"2002::/16",          // 6to4, which can wrap any IPv4
		"2001::/32",          // Teredo, likewise
		"192.88.99.0/24",     // 6to4 relays
		"255.255.255.255/32", // broadcast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// Forbidden reports whether an endpoint may not be reached at ip.
func Forbidden(ip netip.Addr) bool {
	ip = ip.Unmap()
	for _, p := range forbiddenPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Resolver resolves a host name (net.DefaultResolver).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ValidateURL checks an endpoint's URL: absolute, https (or http when
// allowInsecure), a host, no user info, at most 2048 bytes.
func ValidateURL(raw string, allowInsecure bool) (*url.URL, error) {
	invalid := func(constraint string) error { return apperr.Invalid("url", constraint, raw) }
	if len(raw) > 2048 {
		return nil, invalid("a URL of at most 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Hostname() == "" {
		return nil, invalid("an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && allowInsecure:
	case u.Scheme == "http":
		return nil, invalid("an https URL (http needs HERALD_WEBHOOKS_ALLOW_INSECURE)")
	default:
		return nil, invalid("an https URL")
	}
	if u.User != nil {
		return nil, invalid("a URL without user info")
	}
	if u.Fragment != "" {
		return nil, invalid("a URL without a fragment")
	}
	return u, nil
}

// CheckHost refuses a host that is, or resolves to, a forbidden address.
func CheckHost(ctx context.Context, r Resolver, host string) error {
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = r.LookupNetIP(ctx, "ip", host)
		if err != nil || len(addrs) == 0 {
			return apperr.Invalid("url", "a host name that resolves", host)
		}
	}
	for _, a := range addrs {
		if Forbidden(a) {
			return apperr.Invalid("url", "a public address (HERALD_WEBHOOKS_ALLOW_PRIVATE allows others)", fmt.Sprintf("%s resolves to %s", host, a))
		}
	}
	return nil
}

// DialAllowed is the check of each connection a delivery makes, for
// net.Dialer.Control: address is the resolved "ip:port" about to be
// dialled.
func DialAllowed(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhooks: refusing to dial %q: %w", address, err)
	}
	if Forbidden(ap.Addr()) {
		return fmt.Errorf("webhooks: refusing to dial %s: not a public address", ap.Addr())
	}
	return nil
}

var _ Resolver = (*net.Resolver)(nil)
