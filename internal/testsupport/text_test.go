package testsupport_test

import (
	"encoding/json"
	"testing"

	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\nb\nc", 2, "b\nc"},
		{"a\nb\n", 5, "a\nb"},
		{"", 3, ""},
	} {
		if got := testsupport.Tail(tc.s, tc.n); got != tc.want {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}

func TestJSONPath(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"data":{"login":{"accessToken":"tok","n":2}},"list":[1]}`), &v); err != nil {
		t.Fatal(err)
	}
	if got := testsupport.JSONPath(v, "data", "login", "accessToken"); got != "tok" {
		t.Errorf("accessToken = %v", got)
	}
	if got := testsupport.JSONPath(v, "data", "login", "n"); got != 2.0 {
		t.Errorf("n = %v", got)
	}
	for _, keys := range [][]string{{"nope"}, {"data", "nope", "x"}, {"list", "0"}, {"data", "login", "accessToken", "x"}} {
		if got := testsupport.JSONPath(v, keys...); got != nil {
			t.Errorf("JSONPath(%q) = %v, want nil", keys, got)
		}
	}
	if got := testsupport.JSONPath(v); got == nil {
		t.Error("no keys: not the value itself")
	}
}

func TestListenAddr(t *testing.T) {
	cases := []struct{ name, log, want string }{
		{"not yet", `{"msg":"migrations applied"}` + "\n", ""},
		{"listening", `{"msg":"metrics listening","addr":"127.0.0.1:9"}` + "\n" + `{"level":"INFO","msg":"herald listening","addr":"127.0.0.1:4242","database":"sqlite"}` + "\n", "127.0.0.1:4242"},
		{"partial line", `{"msg":"herald listening","addr":"127.0.0.1:42`, ""},
		{"quoted elsewhere", `{"msg":"other","note":"herald listening"}`, ""},
	}
	for _, c := range cases {
		if got := testsupport.ListenAddr(c.log); got != c.want {
			t.Errorf("%s: ListenAddr = %q, want %q", c.name, got, c.want)
		}
	}
}
