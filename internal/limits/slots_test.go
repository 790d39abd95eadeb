package limits

import (
	"net/netip"
	"testing"
)

func TestSlots(t *testing.T) {
	var s Slots
	a := AddressSlot(netip.MustParseAddr("2001:db8:1:2::1"))
	if b := AddressSlot(netip.MustParseAddr("2001:db8:1:2:ffff::9")); a != b {
		t.Fatalf("one /64, two keys: %q, %q", a, b)
	}
	if c := AddressSlot(netip.MustParseAddr("2001:db8:1:3::1")); c == a {
		t.Fatalf("the next /64 shares the key %q", c)
	}
	if AddressSlot(netip.MustParseAddr("::ffff:192.0.2.1")) != AddressSlot(netip.MustParseAddr("192.0.2.1")) {
		t.Fatal("an IPv4-mapped address is not counted as the IPv4 address")
	}
	for i := range 2 {
		if !s.Take(a, 2) {
			t.Fatalf("take %d of 2 refused", i+1)
		}
	}
	if s.Take(a, 2) {
		t.Fatal("a third place taken under a bound of 2")
	}
	if !s.Take("other", 2) {
		t.Fatal("another key refused")
	}
	s.Release(a)
	if !s.Take(a, 2) {
		t.Fatal("a released place not free")
	}
	if !s.Take(a, 0) {
		t.Fatal("no bound refused")
	}
}
