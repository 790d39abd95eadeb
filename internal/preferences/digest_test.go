package preferences

import (
	"strings"
	"testing"
	"time"
)

func TestParseDigests(t *testing.T) {
	cat, err := NewCatalogue([]string{"vpn-tips"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec string
		want Digests
		err  string // a part of the error; "" for none
	}{
		{"", Digests{}, ""},
		{"messages=15m", Digests{"messages": 15 * time.Minute}, ""},
		{" messages = 15m , vpn-tips=24h", Digests{"messages": 15 * time.Minute, "vpn-tips": 24 * time.Hour}, ""},
		{"messages=1m", Digests{"messages": time.Minute}, ""},
		{"messages", nil, "category=window"},
		{"messages=", nil, "category=window"},
		{"=15m", nil, "category=window"},
		{"Messages=15m", nil, "not a category name"},
		{"messages=15m,messages=1h", nil, "twice"},
		{"messages=soon", nil, "not a duration"},
		{"messages=59s", nil, "outside"},
		{"messages=25h", nil, "outside"},
		{"messages=-5m", nil, "outside"},
		{"unknown=15m", nil, "no notification category"},
		{"security=15m", nil, "critical"},
		{"billing=1h", nil, "critical"},
	} {
		d, err := ParseDigests(tc.spec)
		if err == nil {
			err = cat.CheckDigests(d)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want one saying %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.spec, err)
			continue
		}
		if len(d) != len(tc.want) {
			t.Errorf("%q = %v, want %v", tc.spec, d, tc.want)
		}
		for k, w := range tc.want {
			if d[k] != w {
				t.Errorf("%q: %s = %v, want %v", tc.spec, k, d[k], w)
			}
		}
	}
}

// Whatever the text, ParseDigests answers a map within the rules or an
// error, and never panics.
func FuzzParseDigests(f *testing.F) {
	for _, s := range []string{"", "messages=15m", "a=1m,b=24h", "x=", "=", ",,", "m=1h30m", "m=9223372036854775807ns"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		d, err := ParseDigests(spec)
		if err != nil {
			return
		}
		for name, w := range d {
			if !validName(name) || w < MinDigestWindow || w > MaxDigestWindow {
				t.Fatalf("%q gave %s=%v", spec, name, w)
			}
		}
	})
}
