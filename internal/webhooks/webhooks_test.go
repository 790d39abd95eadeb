package webhooks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// headersOf is a delivery's headers as a receiver reads them.
func headersOf(h webhooks.Headers) http.Header {
	out := http.Header{}
	out.Set("webhook-id", h.ID)
	out.Set("webhook-timestamp", h.Timestamp)
	out.Set("webhook-signature", h.Signature)
	return out
}

// The signature is what the reference library verifies, with either secret
// of a rotation, and nothing else.
func TestSignaturesVerifyWithTheReferenceLibrary(t *testing.T) {
	cur, err := webhooks.NewSecret()
	if err != nil || !strings.HasPrefix(cur, "whsec_") {
		t.Fatalf("%q %v", cur, err)
	}
	prev, _ := webhooks.NewSecret()
	other, _ := webhooks.NewSecret()
	ev, err := webhooks.NewEvent(webhooks.UserCreated, time.Now(), map[string]any{"userId": "u1"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := webhooks.SignedHeaders([]string{cur, prev}, ev.ID, time.Now(), ev.Payload)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(strings.Fields(h.Signature)); n != 2 {
		t.Fatalf("%d signatures in %q", n, h.Signature)
	}
	for name, c := range map[string]struct {
		secret string
		body   []byte
		ok     bool
	}{
		"current secret":  {cur, ev.Payload, true},
		"previous secret": {prev, ev.Payload, true},
		"another secret":  {other, ev.Payload, false},
		"altered body":    {cur, append([]byte(" "), ev.Payload...), false},
	} {
		wh, err := standardwebhooks.NewWebhook(c.secret)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.Verify(c.body, headersOf(h)); (err == nil) != c.ok {
			t.Errorf("%s: verify = %v, want ok=%v", name, err, c.ok)
		}
	}
	var p struct {
		Type      string         `json:"type"`
		Timestamp time.Time      `json:"timestamp"`
		Data      map[string]any `json:"data"`
	}
	if err := json.Unmarshal(ev.Payload, &p); err != nil || p.Type != webhooks.UserCreated || p.Timestamp.IsZero() || p.Data["userId"] != "u1" {
		t.Fatalf("payload %s: %v", ev.Payload, err)
	}
}

func TestSigningSecretsDuringRotation(t *testing.T) {
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	until := now.Add(24 * time.Hour)
	e := webhooks.Endpoint{Secret: "whsec_bmV3", PreviousSecret: "whsec_b2xk", PreviousSecretUntil: &until}
	if got := e.SigningSecrets(now); len(got) != 2 || got[0] != e.Secret {
		t.Fatalf("during the overlap: %v", got)
	}
	if got := e.SigningSecrets(until); len(got) != 1 || got[0] != e.Secret {
		t.Fatalf("after the overlap: %v", got)
	}
}

// addrsIn are addresses inside prefix p: its first, one in the middle
// and its last.
func addrsIn(p netip.Prefix) []netip.Addr {
	first := p.Masked().Addr()
	b := first.AsSlice()
	last := slices.Clone(b)
	for i := range last {
		keep := max(0, min(8, p.Bits()-8*i))
		last[i] |= byte(0xff >> keep)
	}
	mid := slices.Clone(b)
	mid[len(mid)-1] |= 0x5a & byte(0xff>>max(0, min(8, p.Bits()-8*(len(mid)-1))))
	lastAddr, _ := netip.AddrFromSlice(last)
	midAddr, _ := netip.AddrFromSlice(mid)
	return []netip.Addr{first, midAddr, lastAddr}
}

// zoned is a with a zone; an IPv4 address takes one in its IPv6 form.
func zoned(a netip.Addr, zone string) netip.Addr {
	if a.Is4() {
		a = netip.AddrFrom16(a.As16())
	}
	return a.WithZone(zone)
}

// The address rules: every special-purpose range is refused (its first,
// a middle and its last address), and so is each of those zoned, in its
// IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms; public addresses
// pass, but not zoned.
func TestAddressRules(t *testing.T) {
	policy := webhooks.AddressPolicy{}
	refused := func(a netip.Addr, why string) {
		t.Helper()
		if webhooks.Public(a) {
			t.Errorf("Public(%s) = true: %s", a, why)
		}
		if err := policy.Check(netip.AddrPortFrom(a, 443)); !errors.Is(err, webhooks.ErrNotPublic) {
			t.Errorf("Check(%s) = %v: %s", a, err, why)
		}
		// Even with private addresses allowed, a zone never is.
		if a.Zone() != "" {
			if err := (webhooks.AddressPolicy{AllowPrivate: true}).Check(netip.AddrPortFrom(a, 443)); !errors.Is(err, webhooks.ErrNotPublic) {
				t.Errorf("AllowPrivate Check(%s) = %v", a, err)
			}
		}
	}
	for _, r := range webhooks.SpecialRanges {
		for _, a := range addrsIn(r.Prefix) {
			refused(a, r.Name)
			for _, zone := range []string{"lo", "eth0", "1", "x"} {
				refused(zoned(a, zone), r.Name+", zoned")
			}
			if a.Is4() {
				v4 := a.As4()
				mapped := netip.AddrFrom16(a.As16())
				compatible := netip.AddrFrom16([16]byte{12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
				nat64 := netip.AddrFrom16([16]byte{0: 0x00, 1: 0x64, 2: 0xff, 3: 0x9b, 12: v4[0], 13: v4[1], 14: v4[2], 15: v4[3]})
				sixToFour := netip.AddrFrom16([16]byte{0: 0x20, 1: 0x02, 2: v4[0], 3: v4[1], 4: v4[2], 5: v4[3], 15: 1})
				for name, x := range map[string]netip.Addr{"mapped": mapped, "compatible": compatible, "NAT64": nat64, "6to4": sixToFour} {
					refused(x, r.Name+", "+name)
				}
			}
		}
	}
	// What the issue reported, and the cloud metadata addresses.
	for _, s := range []string{"::1", "fe80::1", "fd00:ec2::254", "64:ff9b::a9fe:a9fe", "fc00::1", "::7f00:1", "64:ff9b:1::1",
		"169.254.169.254", "192.0.0.192", "100.100.100.200", "::ffff:127.0.0.1", "::ffff:8.8.8.8", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
		"2002:7f00:1::1", "::", "0.0.0.0", "255.255.255.255", "224.0.0.251", "ff02::1", "fec0::1", "5f00::1", "3fff::1", "100::1"} {
		refused(netip.MustParseAddr(s), "reported")
		refused(zoned(netip.MustParseAddr(s), "eth0"), "reported, zoned")
	}
	// IPv6 outside 2000::/3 is refused, listed or not.
	for _, s := range []string{"4000::1", "1::1", "e000::1", "8000::1"} {
		refused(netip.MustParseAddr(s), "outside 2000::/3")
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "93.184.216.34", "172.32.0.1", "100.128.0.1", "192.0.1.1", "198.20.0.1", "223.255.255.254",
		"2606:4700:4700::1111", "2a00:1450:4001:81b::200e", "2001:4860:4860::8888", "2001:200::1", "3ffe::1"} {
		a := netip.MustParseAddr(s)
		if !webhooks.Public(a) || policy.Check(netip.AddrPortFrom(a, 443)) != nil {
			t.Errorf("%s refused, want public", s)
		}
		refused(zoned(a, "eth0"), "public, zoned")
	}
}

func TestPorts(t *testing.T) {
	pub := netip.MustParseAddr("8.8.8.8")
	for _, c := range []struct {
		policy webhooks.AddressPolicy
		port   uint16
		ok     bool
	}{
		{webhooks.AddressPolicy{}, 443, true},
		{webhooks.AddressPolicy{}, 80, false},
		{webhooks.AddressPolicy{}, 6379, false},
		{webhooks.AddressPolicy{AllowInsecure: true}, 80, true},
		{webhooks.AddressPolicy{AllowInsecure: true}, 8080, false},
		{webhooks.AddressPolicy{Ports: []uint16{8443}}, 8443, true},
		{webhooks.AddressPolicy{Ports: []uint16{8443}}, 8444, false},
		{webhooks.AddressPolicy{AllowPrivate: true}, 6379, true},
	} {
		err := c.policy.Check(netip.AddrPortFrom(pub, c.port))
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, webhooks.ErrPortNotAllowed)) {
			t.Errorf("%+v port %d: %v, want ok=%v", c.policy, c.port, err, c.ok)
		}
	}
}

// fixedResolver resolves every name to its addresses.
type fixedResolver map[string][]netip.Addr

func (r fixedResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return r[host], nil
}

func TestCheckURL(t *testing.T) {
	r := fixedResolver{
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
		"internal.example": {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")},
		"meta.example":     {netip.MustParseAddr("169.254.169.254")},
		"localhost":        {netip.MustParseAddr("::ffff:127.0.0.1")},
		"zoned.example":    {netip.MustParseAddr("fe80::1%eth0")},
	}
	strict := webhooks.AddressPolicy{}
	insecure := webhooks.AddressPolicy{AllowInsecure: true}
	private := webhooks.AddressPolicy{AllowPrivate: true, AllowInsecure: true}
	for _, c := range []struct {
		policy webhooks.AddressPolicy
		url    string
		ok     bool
	}{
		{strict, "https://public.example/hook", true},
		{strict, "https://public.example:443/hook", true},
		{strict, "https://8.8.8.8/", true},
		{strict, "https://[2606:4700:4700::1111]/", true},
		{strict, "https://internal.example/", false},
		{strict, "https://meta.example/", false},
		{strict, "https://localhost/", false},
		{strict, "https://zoned.example/", false},
		{strict, "https://nowhere.example/", false},
		{strict, "https://127.0.0.1/", false},
		{strict, "https://[::1]/", false},
		{strict, "https://[::7f00:1]/", false},
		{strict, "https://[64:ff9b:1::a00:1]/", false},
		{strict, "https://1.1.1.1:6379/", false},
		{strict, "https://public.example:8443/", false},
		{webhooks.AddressPolicy{Ports: []uint16{8443}}, "https://public.example:8443/", true},
		{strict, "http://public.example/", false},
		{insecure, "http://public.example/", true},
		{insecure, "http://public.example:8080/", false},
		// Zones and escapes in the host, whatever the policy.
		{strict, "https://[::1%25lo]:18099/hook", false},
		{private, "https://[::1%25lo]:18099/hook", false},
		{private, "https://[fe80::1%25eth0]/", false},
		{private, "https://[fd00:ec2::254%25eth0]/", false},
		{private, "https://[64:ff9b::a9fe:a9fe%25eth0]/", false},
		{private, "https://[fc00::1%25x]/", false},
		{private, "https://pub%6cic.example/", false},
		{private, "http://127.0.0.1:18099/", true},
		{private, "http://[::1]:18099/", true},
	} {
		err := c.policy.CheckURL(context.Background(), r, c.url)
		if (err == nil) != c.ok {
			t.Errorf("%+v CheckURL(%s) = %v, want ok=%v", c.policy, c.url, err, c.ok)
		}
		if err != nil && !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("CheckURL(%s): %v is not VALIDATION_ERROR", c.url, err)
		}
	}
	// The refusal says what is wrong, not what the name resolved to.
	err := strict.CheckURL(context.Background(), r, "https://localhost/")
	ae := apperr.As(err)
	if !strings.Contains(fmt.Sprint(ae.Details), "not a public address") || strings.Contains(fmt.Sprint(ae.Details), "127.0.0.1") || strings.Contains(ae.Message, "127.0.0.1") {
		t.Fatalf("refusal %v %v", ae.Message, ae.Details)
	}
}

func TestValidateURL(t *testing.T) {
	for _, c := range []struct {
		url              string
		insecure, wantOK bool
	}{
		{"https://example.com/hook", false, true},
		{"https://example.com:8443/hook?x=1", false, true},
		{"http://example.com/hook", false, false},
		{"http://example.com/hook", true, true},
		{"ftp://example.com/hook", true, false},
		{"https://user:pw@example.com/hook", false, false},
		{"https://example.com/hook#frag", false, false},
		{"/relative", false, false},
		{"https://", false, false},
		{"https://:443/x", false, false},
		{"https://example.com:0/", false, false},
		{"https://example.com:70000/", false, false},
		{"https://[::1%25lo]/", false, false},
		{"https://ex%61mple.com/", false, false},
		{"https://example.com/a%20b?q=%25", false, true},
		{"https://example.com/" + strings.Repeat("a", 2048), false, false},
	} {
		_, err := webhooks.ValidateURL(c.url, c.insecure)
		if (err == nil) != c.wantOK {
			t.Errorf("ValidateURL(%q, insecure=%v) = %v, want ok=%v", c.url, c.insecure, err, c.wantOK)
		}
	}
}

func FuzzValidateURL(f *testing.F) {
	for _, s := range []string{"https://example.com/hook", "http://[::1]:80/", "https://a@b/", "https://%zz", "javascript:alert(1)", "https://[::1%25lo]/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		u, err := webhooks.ValidateURL(raw, true)
		if err != nil {
			if !apperr.Is(err, apperr.ValidationError) {
				t.Fatalf("%q: %v", raw, err)
			}
			return
		}
		if (u.Scheme != "https" && u.Scheme != "http") || u.Hostname() == "" || u.User != nil || strings.Contains(u.Host, "%") {
			t.Fatalf("%q accepted as %#v", raw, u)
		}
	})
}

// notPublic is an oracle apart from the rules: the standard library's
// own tests of an address, on the address with its zone cut off and
// unmapped.
func notPublic(a netip.Addr) bool {
	ip := net.IP(a.WithZone("").Unmap().AsSlice())
	return a.Zone() != "" || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || a.Unmap().Is4() && a.Unmap().As4()[0] == 0
}

// No URL and no address the resolver answers is ever allowed when the
// address, or the address its host is, is loopback, private, link-local,
// multicast, unspecified or zoned.
func FuzzAddressPolicy(f *testing.F) {
	for _, s := range [][2]string{
		{"https://[::1%25lo]:18099/hook", "::1"},
		{"https://rebound.example/hook", "::1%lo"},
		{"https://rebound.example/hook", "fe80::1%eth0"},
		{"https://[fd00:ec2::254%25eth0]/", "fd00:ec2::254"},
		{"https://[64:ff9b::a9fe:a9fe%25eth0]/", "64:ff9b::a9fe:a9fe"},
		{"https://[::ffff:127.0.0.1]/", "127.0.0.1"},
		{"https://[::7f00:1]/", "::7f00:1"},
		{"https://example.com/", "::ffff:10.0.0.1"},
		{"https://example.com/", "169.254.169.254"},
		{"https://8.8.8.8/", "8.8.8.8"},
		{"https://example.com/", "2606:4700:4700::1111"},
		{"https://example.com:6379/", "1.1.1.1"},
		{"https://0x7f.1/", "127.0.0.1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, raw, answer string) {
		resolved, err := netip.ParseAddr(answer)
		if err != nil {
			resolved = netip.Addr{}
		}
		r := fixedResolver{}
		for _, policy := range []webhooks.AddressPolicy{{}, {AllowInsecure: true, Ports: []uint16{8080}}} {
			u, _ := url.Parse(raw)
			if u != nil {
				r[u.Hostname()] = []netip.Addr{resolved}
			}
			if policy.CheckURL(context.Background(), r, raw) == nil {
				if host, err := netip.ParseAddr(u.Hostname()); err == nil && notPublic(host) {
					t.Fatalf("%q allowed, its host %s is not public", raw, host)
				}
				if _, err := netip.ParseAddr(u.Hostname()); err != nil && notPublic(resolved) {
					t.Fatalf("%q allowed, resolving to %s", raw, resolved)
				}
			}
			if resolved.IsValid() {
				ap := netip.AddrPortFrom(resolved, 443)
				if policy.Check(ap) == nil && notPublic(resolved) {
					t.Fatalf("Check(%s) allowed", ap)
				}
				if policy.CheckDial(ap.String()) == nil && notPublic(resolved) {
					t.Fatalf("CheckDial(%s) allowed", ap)
				}
			}
			if policy.CheckDial(answer) == nil {
				if ap, err := netip.ParseAddrPort(answer); err != nil || notPublic(ap.Addr()) {
					t.Fatalf("CheckDial(%q) allowed", answer)
				}
			}
		}
		// With private addresses allowed, a zone still never passes.
		if resolved.IsValid() && resolved.Zone() != "" && (webhooks.AddressPolicy{AllowPrivate: true}).Check(netip.AddrPortFrom(resolved, 443)) == nil {
			t.Fatalf("AllowPrivate: zoned %s allowed", resolved)
		}
	})
}

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range webhooks.Catalogue {
		if seen[typ] || !webhooks.Known(typ) {
			t.Fatalf("catalogue: %s", typ)
		}
		seen[typ] = true
	}
	if len(seen) != 53 || webhooks.Known(webhooks.Ping) {
		t.Fatalf("catalogue of %d, ping known: %v", len(seen), webhooks.Known(webhooks.Ping))
	}
}

// The breaker: closed below Threshold failures in a row, then open for
// the n-th cooldown of the n-th opening in a row (the last repeating),
// half-open (one delivery) after it; a success closes it at any time.
func TestBreaker(t *testing.T) {
	s := webhooks.Slots{Concurrency: 3, Threshold: 2, Cooldowns: []time.Duration{time.Second, time.Minute}}
	now := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	var b webhooks.Breaker
	if s.Limit(b, now) != 3 {
		t.Fatal("a new breaker is not closed")
	}
	b = s.After(b, false, now)
	if s.Limit(b, now) != 3 || b.Until != nil {
		t.Fatalf("one failure opened it: %+v", b)
	}
	b = s.After(b, false, now)
	if s.Limit(b, now) != 0 || !b.Until.Equal(now.Add(time.Second)) || !s.Open(b, now) {
		t.Fatalf("two failures: %+v", b)
	}
	// A failure while open (an attempt already in flight) does not move it.
	if b2 := s.After(b, false, now.Add(time.Millisecond)); !b2.Until.Equal(*b.Until) || b2.Opens != 1 {
		t.Fatalf("a failure while open: %+v", b2)
	}
	now = now.Add(time.Second)
	if s.Limit(b, now) != 1 {
		t.Fatal("not half-open after the cooldown")
	}
	for i, want := range []time.Duration{time.Minute, time.Minute} {
		b = s.After(b, false, now)
		if !b.Until.Equal(now.Add(want)) {
			t.Fatalf("probe failure %d: open until %v, want %v", i, b.Until, now.Add(want))
		}
		now = *b.Until
	}
	if b = s.After(b, true, now); s.Limit(b, now) != 3 || b != (webhooks.Breaker{}) {
		t.Fatalf("a success: %+v", b)
	}
}

// Scrub drops an event about the account, and removes the account from
// another's, keeping every other byte of it.
func TestScrub(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{`{"type":"user.created","timestamp":"2026-11-26T10:00:00.123456Z","data":{"email":"ann@example.com","userId":"u1"}}`, ""},
		{`{"type":"device.removed","timestamp":"2026-11-26T10:00:00Z","data":{"deviceId":"d1","userId":"u1"}}`, ""},
		{`{"type":"user.created","timestamp":"2026-11-26T10:00:00.123456Z","data":{"email":"bob@example.com","emailVerified":false,"expiresAt":"2026-12-04T10:00:00.123456Z","plan":"trial","referrerId":"u1","userId":"u2"}}`,
			`{"type":"user.created","timestamp":"2026-11-26T10:00:00.123456Z","data":{"email":"bob@example.com","emailVerified":false,"expiresAt":"2026-12-04T10:00:00.123456Z","plan":"trial","userId":"u2"}}`},
		{`{"type":"user.created","timestamp":"2026-11-26T10:00:00Z","data":{"referrerId":"u3","userId":"u2"}}`, `{"type":"user.created","timestamp":"2026-11-26T10:00:00Z","data":{"referrerId":"u3","userId":"u2"}}`},
	} {
		out, drop, err := webhooks.Scrub([]byte(c.in), "u1")
		if err != nil || drop != (c.out == "") || (!drop && string(out) != c.out) {
			t.Errorf("Scrub(%s) = %s, drop %v, %v; want %q", c.in, out, drop, err, c.out)
		}
	}
	if got := webhooks.NamedAccounts(mustNewEvent(t, webhooks.UserCreated, map[string]any{"userId": "u2", "referrerId": "u1", "email": "x"})); !slices.Equal(got, []string{"u2", "u1"}) {
		t.Errorf("NamedAccounts = %v", got)
	}
	if got := webhooks.NamedAccounts(mustNewEvent(t, webhooks.UserDeleted, map[string]any{"userId": "u2"})); got != nil {
		t.Errorf("user.deleted names %v", got)
	}
}

// An event is for an endpoint that subscribes to its type and existed
// when it was written; a ping for the endpoint it names.
func TestEndpointReceived(t *testing.T) {
	at := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	ev, _ := webhooks.NewEvent(webhooks.UserCreated, at, map[string]any{"userId": "u1"})
	ping, _ := webhooks.NewEvent(webhooks.Ping, at, map[string]any{"endpointId": "ep1"})
	ep := webhooks.Endpoint{ID: "ep1", EventTypes: []string{webhooks.UserCreated}, CreatedAt: at.Add(-time.Hour)}
	for name, c := range map[string]struct {
		e    webhooks.Endpoint
		ev   webhooks.Event
		want bool
	}{
		"subscribed, older":       {ep, ev, true},
		"same instant":            {webhooks.Endpoint{ID: "ep1", EventTypes: ep.EventTypes, CreatedAt: at}, ev, true},
		"subscribed, younger":     {webhooks.Endpoint{ID: "ep1", EventTypes: ep.EventTypes, CreatedAt: at.Add(time.Second)}, ev, false},
		"another type":            {webhooks.Endpoint{ID: "ep1", EventTypes: []string{webhooks.UserDeleted}, CreatedAt: ep.CreatedAt}, ev, false},
		"its ping":                {ep, ping, true},
		"another endpoint's ping": {webhooks.Endpoint{ID: "ep2", EventTypes: webhooks.Catalogue, CreatedAt: ep.CreatedAt}, ping, false},
	} {
		if got := c.e.Received(c.ev); got != c.want {
			t.Errorf("%s: Received = %v", name, got)
		}
	}
}

func mustNewEvent(t *testing.T, typ string, data map[string]any) webhooks.Event {
	t.Helper()
	ev, err := webhooks.NewEvent(typ, time.Now(), data)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}
