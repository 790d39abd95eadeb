package gqltransport

import (
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/auth"
)

func TestInitCredential(t *testing.T) {
	for _, c := range []struct {
		payload string
		want    auth.Credential
		ok      bool
	}{
		{``, auth.Credential{}, true},
		{`null`, auth.Credential{}, true},
		{`{}`, auth.Credential{}, true},
		{`{"token":" abc "}`, auth.Credential{Present: true, Bearer: "abc"}, true},
		{`{"authorization":"Bearer abc"}`, auth.Credential{Present: true, Bearer: "abc"}, true},
		{`{"Authorization":"bearer hk_1_x"}`, auth.Credential{Present: true, Bearer: "hk_1_x"}, true},
		{`{"authorization":"Basic abc"}`, auth.Credential{Present: true}, true},
		{`{"apiKey":"hk_1_x"}`, auth.Credential{APIKey: "hk_1_x"}, true},
		{`{"X-API-Key":"hk_1_x"}`, auth.Credential{APIKey: "hk_1_x"}, true},
		{`{"token":"abc","apiKey":"hk_1_x"}`, auth.Credential{Present: true}, true},
		{`{"token":"abc","authorization":"Bearer abc"}`, auth.Credential{Present: true}, true},
		{`"abc"`, auth.Credential{}, false},
		{`{"token":1}`, auth.Credential{}, false},
	} {
		got, ok := InitCredential([]byte(c.payload))
		if got != c.want || ok != c.ok {
			t.Errorf("InitCredential(%s) = %+v, %v; want %+v, %v", c.payload, got, ok, c.want, c.ok)
		}
	}
}

// FuzzInitCredential: any payload is read without panicking, and what is
// read is one credential at most, trimmed.
func FuzzInitCredential(f *testing.F) {
	for _, s := range []string{`{"token":"a"}`, `{"authorization":"Bearer b"}`, `{"apiKey":"hk_c"}`, `null`, `{"token":"a","apiKey":"b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c, ok := InitCredential(raw)
		if !ok {
			return
		}
		if c.Bearer != "" && !c.Present {
			t.Fatalf("a bearer without Present: %+v", c)
		}
		if c.APIKey != "" && c.Present {
			t.Fatalf("a key and an Authorization at once: %+v", c)
		}
		if c.Bearer != strings.TrimSpace(c.Bearer) || c.APIKey != strings.TrimSpace(c.APIKey) {
			t.Fatalf("untrimmed: %+v", c)
		}
	})
}
