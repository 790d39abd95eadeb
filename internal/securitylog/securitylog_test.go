package securitylog_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/securitylog"
)

func TestKindsAreUniqueAndWebhookTyped(t *testing.T) {
	seen := map[securitylog.Kind]bool{}
	for _, k := range securitylog.Kinds {
		if seen[k] {
			t.Fatalf("kind %q listed twice", k)
		}
		seen[k] = true
		if !securitylog.Known(k) {
			t.Fatalf("Known(%q) = false", k)
		}
	}
	if securitylog.Known("nope") {
		t.Fatal("Known(nope) = true")
	}
	// The existing webhook security.mfa_reset is MFAReset's.
	if got := securitylog.WebhookType(securitylog.MFAReset); got != "security.mfa_reset" {
		t.Fatalf("WebhookType(MFAReset) = %q", got)
	}
}

func TestParseActor(t *testing.T) {
	for _, c := range []struct{ in, kind, id string }{
		{"user", "user", ""}, {"system", "system", ""}, {"admin:op_1", "admin", "op_1"},
	} {
		k, id, err := securitylog.ParseActor(c.in)
		if err != nil || k != c.kind || id != c.id {
			t.Fatalf("ParseActor(%q) = %q, %q, %v", c.in, k, id, err)
		}
	}
	for _, bad := range []string{"", "admin", "admin:", "admin:a b", "root", "admin:" + strings.Repeat("a", 65)} {
		if _, _, err := securitylog.ParseActor(bad); err == nil {
			t.Fatalf("ParseActor(%q) accepted", bad)
		}
	}
}

func TestNormalize(t *testing.T) {
	e := securitylog.Event{Kind: securitylog.LoginFailed, Outcome: securitylog.Failed, Actor: "user",
		IP: "::ffff:203.0.113.9", UserAgent: strings.Repeat("é", 400), Detail: map[string]string{"reason": strings.Repeat("x", 300)}}
	if err := e.Normalize(); err != nil {
		t.Fatal(err)
	}
	if e.IP != "203.0.113.9" {
		t.Fatalf("IP = %q, want the unmapped IPv4", e.IP)
	}
	if len(e.UserAgent) > securitylog.MaxUserAgent || !utf8.ValidString(e.UserAgent) {
		t.Fatalf("user agent not cut to a valid %d bytes: %d", securitylog.MaxUserAgent, len(e.UserAgent))
	}
	if len(e.Detail["reason"]) != securitylog.MaxDetailValue {
		t.Fatalf("detail value = %d bytes", len(e.Detail["reason"]))
	}
	for _, bad := range []securitylog.Event{
		{Kind: "x", Outcome: securitylog.OK, Actor: "user"},
		{Kind: securitylog.Logout, Outcome: "maybe", Actor: "user"},
		{Kind: securitylog.Logout, Outcome: securitylog.OK, Actor: "someone"},
	} {
		if err := bad.Normalize(); err == nil {
			t.Fatalf("Normalize accepted %+v", bad)
		}
	}
}

func TestDeviceKey(t *testing.T) {
	chrome120 := "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36"
	chrome121 := strings.Replace(chrome120, "Chrome/120.0.0.0", "Chrome/121.0.6167.85", 1)
	firefox := "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0"
	cases := []struct {
		name       string
		a, b       [2]string
		sameDevice bool
	}{
		{"a version bump on the same /24", [2]string{chrome120, "203.0.113.9"}, [2]string{chrome121, "203.0.113.200"}, true},
		{"another browser", [2]string{chrome120, "203.0.113.9"}, [2]string{firefox, "203.0.113.9"}, false},
		{"another IPv4 /24", [2]string{chrome120, "203.0.113.9"}, [2]string{chrome120, "203.0.114.9"}, false},
		{"the same IPv6 /48", [2]string{firefox, "2001:db8:1:2::1"}, [2]string{firefox, "2001:db8:1:ffff::9"}, true},
		{"another IPv6 /48", [2]string{firefox, "2001:db8:1::1"}, [2]string{firefox, "2001:db8:2::1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ka, kb := securitylog.DeviceKey(c.a[0], c.a[1]), securitylog.DeviceKey(c.b[0], c.b[1])
			if (ka == kb) != c.sameDevice {
				t.Fatalf("keys %q and %q: same = %v, want %v", ka, kb, ka == kb, c.sameDevice)
			}
		})
	}
	if got := securitylog.Network("203.0.113.9"); got != "203.0.113.0/24" {
		t.Fatalf("Network = %q", got)
	}
	if got := securitylog.UAFamily(chrome120); got != "Mozilla AppleWebKit Chrome Safari" {
		t.Fatalf("UAFamily = %q", got)
	}
}

func TestAlertsFor(t *testing.T) {
	if securitylog.AlertsFor(false, false) {
		t.Fatal("the first sign-in of an account alerted")
	}
	if securitylog.AlertsFor(true, true) {
		t.Fatal("a seen device alerted")
	}
	if !securitylog.AlertsFor(true, false) {
		t.Fatal("a new device did not alert")
	}
}

func FuzzParseActor(f *testing.F) {
	for _, s := range []string{"user", "system", "admin:op_1", "admin:", "admin:a:b", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		kind, id, err := securitylog.ParseActor(s)
		if err != nil {
			return
		}
		round := kind
		if kind == "admin" {
			round = securitylog.AdminActor(id)
		}
		if round != s {
			t.Fatalf("ParseActor(%q) = %q, %q does not round-trip (%q)", s, kind, id, round)
		}
	})
}

func FuzzDeviceKey(f *testing.F) {
	f.Add("Mozilla/5.0 (X11; Linux) Firefox/121.0", "203.0.113.9")
	f.Add("((((", "::ffff:1.2.3.4")
	f.Fuzz(func(t *testing.T, ua, ip string) {
		k := securitylog.DeviceKey(ua, ip)
		if k != securitylog.DeviceKey(ua, ip) {
			t.Fatal("DeviceKey is not deterministic")
		}
		e := securitylog.Event{Kind: securitylog.LoginOK, Outcome: securitylog.OK, Actor: "user", IP: ip, UserAgent: ua}
		if err := e.Normalize(); err != nil {
			t.Fatal(err)
		}
		if len(e.UserAgent) > securitylog.MaxUserAgent || (utf8.ValidString(ua) && !utf8.ValidString(e.UserAgent)) {
			t.Fatalf("Normalize left a user agent of %d bytes", len(e.UserAgent))
		}
	})
}
