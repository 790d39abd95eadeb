package preferences_test

import (
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
)

func TestParseCap(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want int // 0: refused
	}{
		{"3/day", 3},
		{"1/day", 1},
		{"1000/day", 1000},
		{"1001/day", 0},
		{"0/day", 0},
		{"-1/day", 0},
		{"+3/day", 0},
		{" 3/day", 0},
		{"3/hour", 0},
		{"3/Day", 0},
		{"3", 0},
		{"three/day", 0},
		{"", 0},
	} {
		got, err := preferences.ParseCap(tc.spec)
		if got != tc.want || (err == nil) != (tc.want > 0) {
			t.Errorf("ParseCap(%q) = %d, %v; want %d", tc.spec, got, err, tc.want)
		}
	}
}

func TestCataloguesCaps(t *testing.T) {
	for _, tc := range []struct {
		extra []string
		caps  map[string]int // the categories' caps; absent ones 0
		err   string         // a part of the refusal
	}{
		{extra: nil},
		{extra: []string{"product:3/day"}, caps: map[string]int{"product": 3}},
		{extra: []string{"offers:2/day", "tips", "product:5/day"}, caps: map[string]int{"offers": 2, "product": 5}},
		{extra: []string{"security:3/day"}, err: "cannot be capped"},
		{extra: []string{"billing:1/day"}, err: "cannot be capped"},
		{extra: []string{"product"}, err: "named twice"},                        // a built-in named without a cap
		{extra: []string{"product:3/day", "product:4/day"}, err: "named twice"}, // capped twice
		{extra: []string{"offers", "offers:2/day"}, err: "named twice"},
		{extra: []string{"offers:0/day"}, err: "1 to 1000"},
		{extra: []string{"offers:2/week"}, err: "N/day"},
		{extra: []string{"offers:"}, err: "N/day"},
		{extra: []string{":3/day"}, err: "lowercase"},
		{extra: []string{"Offers:3/day"}, err: "lowercase"},
	} {
		c, err := preferences.NewCatalogue(tc.extra)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("NewCatalogue(%q): %v, want an error with %q", tc.extra, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("NewCatalogue(%q): %v", tc.extra, err)
			continue
		}
		for _, k := range c.Categories() {
			if k.Cap != tc.caps[k.Name] {
				t.Errorf("NewCatalogue(%q): %s cap %d, want %d", tc.extra, k.Name, k.Cap, tc.caps[k.Name])
			}
		}
	}
	// Capping a built-in keeps its place in the catalogue.
	if got := catalogue(t, "product:3/day", "tips").Names(); got != "security, billing, service, product, messages, tips" {
		t.Errorf("names %q", got)
	}
}

func TestCapOf(t *testing.T) {
	c := catalogue(t, "product:3/day", "offers:1/day", "tips")
	for _, tc := range []struct {
		category string
		urgent   bool
		want     int
	}{
		{"product", false, 3},
		{"product", true, 0}, // urgent sends are never capped
		{"offers", false, 1},
		{"tips", false, 0},
		{"service", false, 0},
		{"security", false, 0},
		{"billing", false, 0},
		{"unknown", false, 0},
	} {
		if got := c.CapOf(tc.category, tc.urgent); got != tc.want {
			t.Errorf("CapOf(%q, urgent %v) = %d, want %d", tc.category, tc.urgent, got, tc.want)
		}
	}
}

func TestCapWindowIsTheUsersDay(t *testing.T) {
	at := func(s string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		zone string
		now  string
		want string
	}{
		{"", "2026-11-29T23:30:00Z", "2026-11-29"},
		{"Europe/Berlin", "2026-11-29T23:30:00Z", "2026-11-30"},    // 00:30 in Berlin
		{"America/New_York", "2026-11-30T03:00:00Z", "2026-11-29"}, // 22:00 the day before
		{"Pacific/Kiritimati", "2026-11-29T10:30:00Z", "2026-11-30"},
		{"Europe/Berlin", "2026-03-29T21:59:00Z", "2026-03-29"}, // 23:59 CEST on the day the clocks jump
		{"Europe/Berlin", "2026-03-29T22:00:00Z", "2026-03-30"},
		{"Nowhere/Gone", "2026-11-29T23:30:00Z", "2026-11-29"}, // a zone the database lost: UTC
	} {
		s := preferences.Schedule{TimeZone: tc.zone}
		if got := s.CapWindow(at(tc.now)); got != tc.want {
			t.Errorf("%q at %s: window %s, want %s", tc.zone, tc.now, got, tc.want)
		}
	}
}

func TestCapped(t *testing.T) {
	for _, tc := range []struct {
		count, limit int
		want         bool
	}{
		{0, 0, false}, {100, 0, false}, // no cap
		{0, 3, false}, {2, 3, false}, {3, 3, true}, {4, 3, true},
		{0, 1, false}, {1, 1, true},
	} {
		if got := preferences.Capped(tc.count, tc.limit); got != tc.want {
			t.Errorf("Capped(%d, %d) = %v, want %v", tc.count, tc.limit, got, tc.want)
		}
	}
}
