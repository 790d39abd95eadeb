package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
)

// SpecialRange is one range of the IANA IPv4 or IPv6 Special-Purpose
// Address Registry (or of the multicast and reserved space beside it).
type SpecialRange struct {
	Prefix netip.Prefix
	Name   string
}

// SpecialRanges are the ranges no delivery may go to: every entry of the
// IANA IPv4 and IPv6 Special-Purpose Address Registries, globally
// reachable or not, with multicast, the reserved space and the deprecated
// IPv4-compatible and site-local IPv6 ranges. An IPv6 address outside
// 2000::/3 is refused whether or not it is listed (see Public); the ones
// outside it are listed so that the table is the whole registry.
var SpecialRanges = func() []SpecialRange {
	var out []SpecialRange
	for _, r := range [][2]string{
		// IPv4 (RFC 6890 and its updates).
		{"0.0.0.0/8", `"this network"`},
		{"10.0.0.0/8", "private use"},
		{"100.64.0.0/10", "shared address space (carrier-grade NAT)"},
		{"127.0.0.0/8", "loopback"},
		{"169.254.0.0/16", "link local (169.254.169.254: cloud metadata)"},
		{"172.16.0.0/12", "private use"},
		{"192.0.0.0/24", "IETF protocol assignments (192.0.0.192: Oracle's metadata)"},
		{"192.0.2.0/24", "documentation (TEST-NET-1)"},
		{"192.31.196.0/24", "AS112-v4"},
		{"192.52.193.0/24", "AMT"},
		{"192.88.99.0/24", "6to4 relay anycast (deprecated)"},
		{"192.168.0.0/16", "private use"},
		{"192.175.48.0/24", "AS112 direct delegation"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation (TEST-NET-2)"},
		{"203.0.113.0/24", "documentation (TEST-NET-3)"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved"},
		{"255.255.255.255/32", "limited broadcast"},
		// IPv6.
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"::ffff:0:0/96", "IPv4-mapped"},
		{"64:ff9b::/96", "IPv4/IPv6 translation (NAT64 of any IPv4)"},
		{"64:ff9b:1::/48", "local-use IPv4/IPv6 translation"},
		{"100::/64", "discard-only"},
		{"100:0:0:1::/64", "dummy IPv6 prefix"},
		{"2001::/23", "IETF protocol assignments"},
		{"2001::/32", "Teredo"},
		{"2001:2::/48", "benchmarking"},
		{"2001:db8::/32", "documentation"},
		{"2002::/16", "6to4"},
		{"2620:4f:8000::/48", "AS112 direct delegation"},
		{"3fff::/20", "documentation"},
		{"5f00::/16", "segment routing (SRv6) SIDs"},
		{"fc00::/7", "unique local (fd00:ec2::254: AWS's metadata)"},
		{"fe80::/10", "link-local unicast"},
		{"fec0::/10", "site local (deprecated)"},
		{"ff00::/8", "multicast"},
	} {
		out = append(out, SpecialRange{netip.MustParsePrefix(r[0]), r[1]})
	}
	return out
}()

// globalUnicast6 is the only IPv6 space IANA allocates as global unicast.
var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// Public reports whether a delivery may go to ip: an allow-list, not a
// deny-list. IPv4 must be global unicast and IPv6 in 2000::/3, in neither
// case in a special-purpose range, and no address may carry a zone (a
// zoned address is never in a prefix, so it must be refused first).
// IPv4-mapped and IPv4-compatible IPv6 forms are refused as such.
func Public(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	if ip.Is4() {
		if !ip.IsGlobalUnicast() {
			return false
		}
	} else if !globalUnicast6.Contains(ip) {
		return false
	}
	return !slices.ContainsFunc(SpecialRanges, func(r SpecialRange) bool { return r.Prefix.Contains(ip) })
}

// ErrNotPublic refuses a connection to an address that is not public (or
// is zoned); ErrPortNotAllowed one to a port not allowed.
var (
	ErrNotPublic      = errors.New("not a public address")
	ErrPortNotAllowed = errors.New("port not allowed")
)

// AddressPolicy is where deliveries may go. Its Check is the one rule, run
// at registration on every address the host resolves to, and again on
// every connection a delivery dials (the dialer's Control), so a name that
// resolves elsewhere later (DNS rebinding) is refused too.
type AddressPolicy struct {
	// AllowPrivate admits any address and port but a zoned one
	// (HERALD_WEBHOOKS_ALLOW_PRIVATE: development, tests).
	AllowPrivate bool
	// AllowInsecure admits port 80 beside 443 (HERALD_WEBHOOKS_ALLOW_INSECURE).
	AllowInsecure bool
	// Ports are further allowed ports (HERALD_WEBHOOKS_ALLOWED_PORTS).
	Ports []uint16
}

// PortAllowed reports whether deliveries may go to port.
func (p AddressPolicy) PortAllowed(port uint16) bool {
	return p.AllowPrivate || port == 443 || (port == 80 && p.AllowInsecure) || slices.Contains(p.Ports, port)
}

// Check is the rule of one address and port. A zoned address is refused
// whatever AllowPrivate says.
func (p AddressPolicy) Check(ap netip.AddrPort) error {
	a := ap.Addr()
	if !a.IsValid() || a.Zone() != "" {
		return ErrNotPublic
	}
	if !p.AllowPrivate && !Public(a) {
		return ErrNotPublic
	}
	if !p.PortAllowed(ap.Port()) {
		return ErrPortNotAllowed
	}
	return nil
}

// CheckDial is Check for net.Dialer.Control: address is the "ip:port"
// about to be dialled.
func (p AddressPolicy) CheckDial(address string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("webhooks: refusing to dial %q: %w", address, ErrNotPublic)
	}
	if err := p.Check(ap); err != nil {
		return fmt.Errorf("webhooks: refusing to dial %s: %w", address, err)
	}
	return nil
}

// Resolver resolves a host name (net.DefaultResolver).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ValidateURL checks an endpoint's URL: absolute, https (or http when
// allowInsecure), a host without a % (zones and escapes are refused), no
// user info, no fragment, a numeric port if any, at most 2048 bytes.
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
	// A zone (`[::1%25lo]`) or a percent-escape in the host: the parsed
	// host holds the unescaped %, the raw one the escape.
	if strings.Contains(u.Host, "%") || strings.Contains(rawAuthority(raw), "%") {
		return nil, invalid("a host without % (no zone, no escapes)")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return nil, invalid("a port from 1 to 65535")
		}
	}
	return u, nil
}

// rawAuthority is the authority of a raw absolute URL, as written.
func rawAuthority(raw string) string {
	_, rest, ok := strings.Cut(raw, "//")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// Port is the port a URL checked by ValidateURL is delivered to.
func Port(u *url.URL) uint16 {
	if p := u.Port(); p != "" {
		n, _ := strconv.ParseUint(p, 10, 16)
		return uint16(n)
	}
	if u.Scheme == "http" {
		return 80
	}
	return 443
}

// CheckURL validates raw and checks its port and every address its host
// is or resolves to with the policy. The error never says what the host
// resolved to: a caller learns nothing of the names Herald can resolve.
func (p AddressPolicy) CheckURL(ctx context.Context, r Resolver, raw string) error {
	u, err := ValidateURL(raw, p.AllowInsecure)
	if err != nil {
		return err
	}
	port := Port(u)
	if !p.PortAllowed(port) {
		return apperr.Invalid("url", "port 443 (80 with HERALD_WEBHOOKS_ALLOW_INSECURE) or one of HERALD_WEBHOOKS_ALLOWED_PORTS", strconv.Itoa(int(port)))
	}
	if p.AllowPrivate {
		// Any address goes; a zone cannot be written (no % in the host)
		// and is refused again at each dial.
		return nil
	}
	host := u.Hostname()
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
		if err := p.Check(netip.AddrPortFrom(a, port)); err != nil {
			return apperr.Invalid("url", "a public address (HERALD_WEBHOOKS_ALLOW_PRIVATE allows others)", host+" is not a public address")
		}
	}
	return nil
}

var _ Resolver = (*net.Resolver)(nil)
