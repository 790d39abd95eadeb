package preferences_test

import (
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/preferences"
)

func catalogue(t *testing.T, extra ...string) preferences.Catalogue {
	t.Helper()
	c, err := preferences.NewCatalogue(extra)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestNewCatalogue(t *testing.T) {
	for _, tc := range []struct {
		extra []string
		ok    bool
	}{
		{nil, true},
		{[]string{"promotions", "vpn-tips", "a_1"}, true},
		{[]string{""}, false},
		{[]string{"Promotions"}, false},
		{[]string{"has space"}, false},
		{[]string{"security"}, false},
		{[]string{"tips", "tips"}, false},
		{[]string{"abcdefghijklmnopqrstuvwxyz0123456"}, false}, // 33
	} {
		_, err := preferences.NewCatalogue(tc.extra)
		if (err == nil) != tc.ok {
			t.Errorf("NewCatalogue(%q): err %v, want ok %v", tc.extra, err, tc.ok)
		}
	}
	c := catalogue(t, "tips")
	var names []string
	for _, k := range c.Categories() {
		names = append(names, k.Name)
		if k.Critical != (k.Name == preferences.CategorySecurity || k.Name == preferences.CategoryBilling) {
			t.Errorf("%s: critical %v", k.Name, k.Critical)
		}
	}
	if got := c.Names(); got != "security, billing, service, product, messages, tips" || got != strings.Join(names, ", ") {
		t.Errorf("names %q, categories %q", got, names)
	}
}

func TestEffectiveAndAllows(t *testing.T) {
	c := catalogue(t, "tips")
	stored := []preferences.Setting{
		{Category: "product", Channel: "push", Enabled: false},
		{Category: "product", Channel: "email", Enabled: true},
		{Category: "tips", Channel: "telegram", Enabled: false},
		{Category: "security", Channel: "push", Enabled: false}, // never stored by Check; ignored anyway
		{Category: "gone", Channel: "push", Enabled: false},     // a category removed from the configuration
	}
	p := c.Effective(stored)
	if len(p.Categories) != 6 {
		t.Fatalf("%d categories, want 6", len(p.Categories))
	}
	off := map[[2]string]bool{{"product", "push"}: true, {"tips", "telegram"}: true}
	for _, k := range p.Categories {
		if len(k.Channels) != len(preferences.Channels) {
			t.Errorf("%s: %d channels", k.Category, len(k.Channels))
		}
		for _, ch := range preferences.Channels {
			want := !off[[2]string{k.Category, ch}]
			if k.Channels[ch] != want {
				t.Errorf("Effective %s/%s = %v, want %v", k.Category, ch, k.Channels[ch], want)
			}
			if got := c.Allows(stored, k.Category, ch); got != want {
				t.Errorf("Allows %s/%s = %v, want %v", k.Category, ch, got, want)
			}
		}
	}
}

func TestCheck(t *testing.T) {
	c := catalogue(t)
	set := func(category, channel string, on bool) preferences.Setting {
		return preferences.Setting{Category: category, Channel: channel, Enabled: on}
	}
	for _, tc := range []struct {
		name    string
		changes []preferences.Setting
		field   string // "" when accepted
	}{
		{"product off", []preferences.Setting{set("product", "push", false), set("product", "email", false)}, ""},
		{"security on changes nothing", []preferences.Setting{set("security", "push", true)}, ""},
		{"nothing", nil, "settings"},
		{"unknown category", []preferences.Setting{set("promotions", "push", false)}, "category"},
		{"unknown channel", []preferences.Setting{set("product", "sms", false)}, "channel"},
		{"security off", []preferences.Setting{set("security", "push", false)}, "category"},
		{"billing off", []preferences.Setting{set("product", "push", false), set("billing", "email", false)}, "category"},
		{"twice", []preferences.Setting{set("product", "push", false), set("product", "push", true)}, "channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := c.Check(preferences.Change{Settings: tc.changes})
			if tc.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ae := apperr.As(err)
			if ae.Code != apperr.ValidationError || ae.Details["field"] != tc.field {
				t.Fatalf("got %v %v, want VALIDATION_ERROR on %s", ae.Code, ae.Details, tc.field)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	c := catalogue(t, "tips")
	for in, want := range map[string]string{"": preferences.DefaultCategory, "tips": "tips", "billing": "billing", "nope": ""} {
		got, ok := c.Resolve(in)
		if ok != (want != "") || (ok && got != want) {
			t.Errorf("Resolve(%q) = %q %v, want %q", in, got, ok, want)
		}
	}
}
