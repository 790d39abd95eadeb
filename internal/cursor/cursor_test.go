package cursor_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
)

type position struct {
	Since time.Time `json:"s"`
	ID    string    `json:"i"`
}

var (
	ids       = cursor.New[string]("id")
	positions = cursor.New[position]("pos")
)

func TestRoundTrip(t *testing.T) {
	for _, id := range []string{"0192f0c4-7b1e-7c3a-9d2e-5f6a7b8c9d0e", "x", "a:b|c", "<&>", "é"} {
		c, err := ids.Encode(id)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := ids.Decode(c); err != nil || got != id {
			t.Errorf("Decode(Encode(%q)) = %q, %v", id, got, err)
		}
	}
	p := position{Since: time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC), ID: "42"}
	c, err := positions.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	got, err := positions.Decode(c)
	if err != nil || !got.Since.Equal(p.Since) || got.ID != p.ID {
		t.Errorf("Decode(Encode(%+v)) = %+v, %v", p, got, err)
	}
}

func TestOpaqueAndVersioned(t *testing.T) {
	c, _ := ids.Encode("abc")
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		t.Fatalf("%q is not unpadded base64url: %v", c, err)
	}
	if string(raw) != `v1:id:"abc"` {
		t.Errorf("cursor holds %q", raw)
	}
}

func TestEncodeFails(t *testing.T) {
	if _, err := positions.Encode(position{Since: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("a year past 9999 encoded")
	}
	if c, err := ids.Encode(""); err == nil {
		t.Errorf("the zero payload encoded as %q", c)
	}
	if c, err := positions.Encode(position{}); err == nil {
		t.Errorf("the zero payload encoded as %q", c)
	}
}

func TestAfter(t *testing.T) {
	if id, err := ids.After(""); err != nil || id != "" {
		t.Errorf(`After("") = %q, %v; want the start`, id, err)
	}
	c, _ := ids.Encode("abc")
	if id, err := ids.After(c); err != nil || id != "abc" {
		t.Errorf("After(%q) = %q, %v", c, id, err)
	}
	if _, err := ids.After("not a cursor"); !errors.Is(err, cursor.ErrInvalid) {
		t.Errorf("After of a bad cursor: %v", err)
	}
}

func TestCut(t *testing.T) {
	key := func(n int) string { return fmt.Sprint("item-", n) }
	for _, tc := range []struct {
		fetched []int
		first   int
		want    []int
		next    bool
	}{
		{nil, 2, nil, false},
		{[]int{1}, 2, []int{1}, false},
		{[]int{1, 2}, 2, []int{1, 2}, false},
		{[]int{1, 2, 3}, 2, []int{1, 2}, true},
	} {
		p, err := cursor.Cut(ids, tc.fetched, tc.first, key)
		if err != nil || !slices.Equal(p.Items, tc.want) || p.HasNextPage != tc.next {
			t.Fatalf("Cut(%v, %d) = %+v, %v", tc.fetched, tc.first, p, err)
		}
		if len(tc.want) == 0 {
			if p.EndCursor != "" {
				t.Fatalf("empty page with cursor %q", p.EndCursor)
			}
			continue
		}
		if last, err := ids.Decode(p.EndCursor); err != nil || last != key(tc.want[len(tc.want)-1]) {
			t.Fatalf("EndCursor %q holds %q, %v", p.EndCursor, last, err)
		}
	}
	if _, err := cursor.Cut(ids, []int{1}, 1, func(int) string { return "" }); err == nil {
		t.Error("a page ending on a zero payload got a cursor")
	}
}

func TestInvalid(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	other, _ := cursor.New[string]("other").Encode("abc")
	for _, c := range []string{
		"",
		"not a cursor",
		"djF8eHx5",              // "v1|x|y"
		other,                   // another listing's cursor
		enc(`v2:id:"abc"`),      // another version
		enc(`v1:id:`),           // no payload
		enc(`v1:id:"abc`),       // broken JSON
		enc(`v1:id:42`),         // wrong type
		enc(`v1:id:"abc" `),     // not canonical: trailing space
		enc(`v1:id:"\u0061bc"`), // not canonical: escaped letter
		enc(`v1:id:""`),         // the zero payload: "" is the start
		base64.URLEncoding.EncodeToString([]byte(`v1:id:"abc"`)) + "=", // padded
		base64.StdEncoding.EncodeToString([]byte(`v1:id:"a?aa"`)),      // "djE6aWQ6ImE/YWEi": not url-safe
	} {
		if got, err := ids.Decode(c); !errors.Is(err, cursor.ErrInvalid) || got != "" {
			t.Errorf("Decode(%q) = %q, %v; want ErrInvalid", c, got, err)
		}
	}
	for _, c := range []string{
		enc(`v1:pos:{"s":"2026-11-22T10:00:00Z"}`),               // missing field
		enc(`v1:pos:{"s":"2026-11-22T10:00:00Z","i":"1","x":1}`), // unknown field
		enc(`v1:pos:{"i":"1","s":"2026-11-22T10:00:00Z"}`),       // other order
		enc(`v1:pos:{"s":"yesterday","i":"1"}`),                  // not a time
		enc(`v1:pos:null`),
		enc(`v1:pos:{"s":"0001-01-01T00:00:00Z","i":""}`), // the zero payload
	} {
		if _, err := positions.Decode(c); !errors.Is(err, cursor.ErrInvalid) {
			t.Errorf("Decode(%q) = %v; want ErrInvalid", c, err)
		}
	}
}

func TestBadKind(t *testing.T) {
	for _, kind := range []string{"", "a:b"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(%q) did not panic", kind)
				}
			}()
			cursor.New[string](kind)
		}()
	}
}

// FuzzDecode checks that Decode never panics and accepts only what Encode
// makes (whatever it decodes encodes back to the same cursor), and that a
// payload comes back whole (any valid UTF-8 string but the zero one, as
// JSON keeps those).
func FuzzDecode(f *testing.F) {
	for _, id := range []string{"abc", "0192f0c4-7b1e-7c3a-9d2e-5f6a7b8c9d0e"} {
		c, _ := ids.Encode(id)
		f.Add(c)
	}
	p, _ := positions.Encode(position{Since: time.Date(2026, 11, 22, 10, 0, 0, 1, time.UTC), ID: "7"})
	f.Add(p)
	f.Add("")
	f.Add("djF8eHx5")
	f.Add("not a cursor")
	f.Fuzz(func(t *testing.T, c string) {
		if id, err := ids.Decode(c); err == nil {
			if again, err := ids.Encode(id); err != nil || again != c {
				t.Fatalf("Decode(%q) = %q, which encodes to %q, %v", c, id, again, err)
			}
		} else if !errors.Is(err, cursor.ErrInvalid) {
			t.Fatalf("Decode(%q): %v", c, err)
		}
		if pos, err := positions.Decode(c); err == nil {
			if again, err := positions.Encode(pos); err != nil || again != c {
				t.Fatalf("Decode(%q) = %+v, which encodes to %q, %v", c, pos, again, err)
			}
		} else if !errors.Is(err, cursor.ErrInvalid) {
			t.Fatalf("Decode(%q): %v", c, err)
		}
		if c != "" && utf8.ValidString(c) {
			enc, err := ids.Encode(c)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := ids.Decode(enc); err != nil || got != c {
				t.Fatalf("Decode(Encode(%q)) = %q, %v", c, got, err)
			}
		}
	})
}

func TestPageSize(t *testing.T) {
	for _, c := range []struct {
		first, want int
		invalid     bool
	}{
		{0, 50, false}, {1, 1, false}, {500, 500, false}, {501, 0, true}, {-1, 0, true},
	} {
		got, err := cursor.PageSize(c.first, 50, 500)
		if c.invalid != (err != nil) || got != c.want {
			t.Errorf("PageSize(%d) = %d, %v", c.first, got, err)
		}
		if err != nil && !apperr.Is(err, apperr.ValidationError) {
			t.Errorf("PageSize(%d): %v, want VALIDATION_ERROR", c.first, err)
		}
	}
}
