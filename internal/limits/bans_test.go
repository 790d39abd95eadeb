package limits_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/limits"
)

// An operator's ban is stored under the key the gate matches: the address,
// or an IPv6 address's /64; what is not an address is refused, naming ip.
func TestBansAddNormalizesAndRefuses(t *testing.T) {
	ctx := context.Background()
	bans := limits.NewBans(banStore(t), nil)
	for _, c := range []struct{ in, subject string }{
		{"203.0.113.9", "203.0.113.9"},
		{" 203.0.113.10 ", "203.0.113.10"},
		{"::ffff:203.0.113.11", "203.0.113.11"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:9::/64", "2001:db8:9::/64"},
		{"2001:db8:a::1/64", "2001:db8:a::/64"},
	} {
		b, err := bans.Add(ctx, c.in, "")
		if err != nil || b.IP != c.subject || b.Reason != limits.DefaultBanReason {
			t.Errorf("Add(%q) = %+v, %v; want %s with the default reason", c.in, b, err, c.subject)
		}
	}
	for _, in := range []string{"", "nope", "203.0.113.0/24", "203.0.113.9/32", "2001:db8::/48", "2001:db8::/128", "203.0.113.256", strings.Repeat("1", 100)} {
		_, addErr := bans.Add(ctx, in, "")
		_, liftErr := bans.Lift(ctx, in)
		for what, err := range map[string]error{"Add": addErr, "Lift": liftErr} {
			if ae := apperr.As(err); ae.Code != apperr.ValidationError || ae.Details["field"] != "ip" {
				t.Errorf("%s(%q): %v, want VALIDATION_ERROR naming ip", what, in, err)
			}
		}
	}
	for _, reason := range []string{strings.Repeat("x", limits.MaxBanReasonLen+1), "two\nlines"} {
		_, err := bans.Add(ctx, "198.51.100.1", reason)
		if ae := apperr.As(err); ae.Code != apperr.ValidationError || ae.Details["field"] != "reason" {
			t.Errorf("reason %.20q: %v, want VALIDATION_ERROR naming reason", reason, err)
		}
	}
}

// Banning twice keeps the first ban; lifting lifts the /64 of an IPv6
// address; lifting what is not banned is BAN_NOT_FOUND.
func TestBansAddTwiceAndLift(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	bans := limits.NewBans(banStore(t), func() time.Time { return now })
	first, err := bans.Add(ctx, "2001:db8::1", "spam")
	if err != nil || !first.CreatedAt.Equal(now) {
		t.Fatalf("%+v %v", first, err)
	}
	now = now.Add(time.Hour)
	again, err := bans.Add(ctx, "2001:db8::2", "other reason")
	if err != nil || again != first {
		t.Fatalf("banned again: %+v %v; want the first ban %+v", again, err, first)
	}
	if lifted, err := bans.Lift(ctx, "2001:db8::ffff"); err != nil || lifted != "2001:db8::/64" {
		t.Fatalf("lift by another address of the /64: %q %v", lifted, err)
	}
	if _, err := bans.Lift(ctx, "2001:db8::1"); !apperr.Is(err, apperr.BanNotFound) {
		t.Fatalf("lifting twice: %v, want BAN_NOT_FOUND", err)
	}
	if p, err := bans.List(ctx, 0, ""); err != nil || len(p.Items) != 0 || p.HasNextPage {
		t.Fatalf("after the lift: %+v %v", p, err)
	}
	for _, c := range []struct {
		first int
		after string
	}{{-1, ""}, {limits.MaxBansPage + 1, ""}, {1, "nope"}} {
		if _, err := bans.List(ctx, c.first, c.after); !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("List(%d, %q): %v, want VALIDATION_ERROR", c.first, c.after, err)
		}
	}
}
