package pwned_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/pwned"
	"github.com/herald-vpn/herald/internal/pwned/pwnedtest"
)

func TestBreached(t *testing.T) {
	srv := pwnedtest.New("Password1")
	defer srv.Close()
	c := pwned.New(pwned.Config{URL: srv.URL})
	ctx := context.Background()
	cases := []struct {
		plain string
		want  int
	}{
		{"Password1", 42},
		{"Correct-Horse-7-Battery", 0},
	}
	for _, tc := range cases {
		got, err := c.Breached(ctx, tc.plain)
		if err != nil {
			t.Fatalf("Breached(%q): %v", tc.plain, err)
		}
		if got != tc.want {
			t.Errorf("Breached(%q) = %d, want %d", tc.plain, got, tc.want)
		}
	}
	// Only the five-digit prefix of SHA-1("Password1") leaves the process,
	// and every request asks for padding.
	if p := srv.Prefixes(); len(p) != 2 || p[0] != "70CCD" {
		t.Errorf("prefixes sent = %q, want 70CCD first of 2", p)
	}
	if srv.Padded() != srv.Requests() {
		t.Errorf("%d of %d requests asked for padding", srv.Padded(), srv.Requests())
	}
}

func TestBreachedCache(t *testing.T) {
	srv := pwnedtest.New("Password1")
	defer srv.Close()
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	c := pwned.New(pwned.Config{URL: srv.URL, CacheTTL: time.Minute, Now: func() time.Time { return now }})
	for range 3 {
		if n, err := c.Breached(context.Background(), "Password1"); err != nil || n != 42 {
			t.Fatalf("Breached = %d, %v", n, err)
		}
	}
	if got := srv.Requests(); got != 1 {
		t.Fatalf("3 checks within the TTL made %d requests, want 1", got)
	}
	now = now.Add(time.Minute)
	if _, err := c.Breached(context.Background(), "Password1"); err != nil {
		t.Fatal(err)
	}
	if got := srv.Requests(); got != 2 {
		t.Fatalf("a check after the TTL made %d requests in all, want 2", got)
	}
}

// A silent server is an error within the timeout (the caller fails open),
// not a wait for good.
func TestBreachedTimeout(t *testing.T) {
	srv := pwnedtest.New("Password1")
	defer srv.Close()
	srv.Hang(true)
	c := pwned.New(pwned.Config{URL: srv.URL, Timeout: 50 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := c.Breached(ctx, "Password1")
	if err == nil || n != 0 {
		t.Fatalf("Breached against a silent server = %d, %v; want 0 and an error", n, err)
	}
	if ctx.Err() != nil {
		t.Fatal("the check waited for the test's bound, not its own timeout")
	}
}

func TestParseRange(t *testing.T) {
	cases := []struct {
		name, body string
		want       map[string]int
		bad        bool
	}{
		{"counts", "0018A45C4D1DEF81644B54AB7F969B88D65:1\r\n00D4F6E8FA6EECAD2A3AA415EEC418D38EC:2\r\n", map[string]int{"0018A45C4D1DEF81644B54AB7F969B88D65": 1, "00D4F6E8FA6EECAD2A3AA415EEC418D38EC": 2}, false},
		{"padding dropped", "0018A45C4D1DEF81644B54AB7F969B88D65:0\n", map[string]int{}, false},
		{"lower case kept upper", "0018a45c4d1def81644b54ab7f969b88d65:3\n", map[string]int{"0018A45C4D1DEF81644B54AB7F969B88D65": 3}, false},
		{"empty", "", map[string]int{}, false},
		{"html", "<html>blocked</html>\n", nil, true},
		{"short suffix", "0018A45C:1\n", nil, true},
		{"no count", "0018A45C4D1DEF81644B54AB7F969B88D65:\n", nil, true},
		{"negative", "0018A45C4D1DEF81644B54AB7F969B88D65:-1\n", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pwned.ParseRange(strings.NewReader(tc.body))
			if tc.bad {
				if err == nil {
					t.Fatalf("ParseRange(%q) = %v, want an error", tc.body, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ParseRange = %v, want %v", got, tc.want)
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s = %d, want %d", k, got[k], v)
				}
			}
		})
	}
}

func FuzzParseRange(f *testing.F) {
	f.Add("0018A45C4D1DEF81644B54AB7F969B88D65:1\r\n00D4F6E8FA6EECAD2A3AA415EEC418D38EC:0\r\n")
	f.Add("")
	f.Add(":\n:::\n")
	f.Fuzz(func(t *testing.T, body string) {
		got, err := pwned.ParseRange(strings.NewReader(body))
		if err != nil {
			return
		}
		for k, v := range got {
			if len(k) != 35 || strings.ToUpper(k) != k || v <= 0 {
				t.Fatalf("ParseRange(%q) kept %q:%d", body, k, v)
			}
		}
	})
}
