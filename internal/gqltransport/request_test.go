package gqltransport

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
)

func TestDecodeRequest(t *testing.T) {
	cases := []struct {
		name string
		body string
		code apperr.Code // "" means accepted
	}{
		{"minimal", `{"query":"{ version }"}`, ""},
		{"with variables", `{"query":"mutation($e:String!){resendVerificationEmail(email:$e)}","variables":{"e":"a@b.co","n":12,"f":1.5}}`, ""},
		{"null variables", `{"query":"{ version }","variables":null}`, ""},
		{"empty body", ``, apperr.ValidationError},
		{"not json", `query { version }`, apperr.ValidationError},
		{"array", `[{"query":"{ version }"}]`, apperr.ValidationError},
		{"missing query", `{"variables":{}}`, apperr.ValidationError},
		{"query not string", `{"query":12}`, apperr.ValidationError},
		{"variables not object", `{"query":"{ version }","variables":[1]}`, apperr.ValidationError},
		{"trailing", `{"query":"{ version }"} {}`, apperr.ValidationError},
		{"stray closing brace", `{"query":"{ version }"}}`, apperr.ValidationError},
		{"stray closing bracket", `{"query":"{ version }"}]`, apperr.ValidationError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeRequest([]byte(c.body))
			if c.code == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apperr.Is(err, c.code) {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"query":"{ version }"}`,
		`{"query":"mutation($e:String!){signup(email:$e,password:\"x\")}","variables":{"e":"a@b.co","n":[1,2.5,{"x":null}]},"operationName":"x"}`,
		`{"query":""}`, `null`, `{}`, `{"query":"q","variables":{"big":123456789012345678901234567890}}`, "\x00", `{"query":"\ud800"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := DecodeRequest(body)
		if err != nil {
			if ae := apperr.As(err); ae.Code == apperr.Internal || ae.Status() < 400 || ae.Status() > 499 {
				t.Fatalf("decoder returned %v (status %d), want an application error with a 4xx", err, ae.Status())
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not one JSON value: %q", body)
		}
		if req.Query == "" || len(req.Query) > MaxQueryBytes || req.Variables == nil {
			t.Fatalf("accepted an invalid request: %+v", req)
		}
	})
}

func TestRequestFromQuery(t *testing.T) {
	cases := []struct {
		name, query string
		code        apperr.Code // "" means accepted
	}{
		{"query", "query=%7B%20version%20%7D", ""},
		{"all parameters", "query=query%20Q(%24n%3AString)%7Bversion%7D&operationName=Q&variables=%7B%22n%22%3A1%7D&extensions=%7B%7D", ""},
		{"null variables", "query=%7Bversion%7D&variables=null", ""},
		{"no query", "operationName=Q", apperr.ValidationError},
		{"variables not an object", "query=%7Bversion%7D&variables=%5B1%5D", apperr.ValidationError},
		{"variables not JSON", "query=%7Bversion%7D&variables=%7B", apperr.ValidationError},
		{"variables with a stray brace", "query=%7Bversion%7D&variables=%7B%7D%7D", apperr.ValidationError},
		{"extensions not an object", "query=%7Bversion%7D&extensions=1", apperr.ValidationError},
		{"malformed escape", "query=%zz", apperr.ValidationError},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := RequestFromQuery(c.query)
			if c.code == "" {
				if err != nil || req.Query == "" || req.Variables == nil {
					t.Fatalf("%+v, %v", req, err)
				}
				return
			}
			if !apperr.Is(err, c.code) {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
		})
	}
}

// FuzzRequestFromQuery reads GET /graphql query strings: a refusal is an
// application error with a 4xx; an accepted request has a bounded query,
// variables, and took only JSON values for its variables and extensions.
func FuzzRequestFromQuery(f *testing.F) {
	for _, seed := range []string{
		"query=%7B%20version%20%7D",
		"query=query%20Q(%24n%3AString)%7Bversion%7D&operationName=Q&variables=%7B%22n%22%3A1%7D&extensions=%7B%7D",
		"query=%7Bversion%7D&variables=%7B%22big%22%3A123456789012345678901234567890%7D",
		"query=%7Bversion%7D&variables=null", "query=%7Bversion%7D&variables=%7B%7D%7D", "query=%7Bversion%7D&variables=%5B1%5D",
		"", "query=", "query=%zz", "query=a;b", "query=%00", "query=%FF%FE", "variables=%7B%7D",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		req, err := RequestFromQuery(rawQuery)
		if err != nil {
			if ae := apperr.As(err); ae.Code == apperr.Internal || ae.Status() < 400 || ae.Status() > 499 {
				t.Fatalf("RequestFromQuery(%q) = %v (status %d), want an application error with a 4xx", rawQuery, err, ae.Status())
			}
			return
		}
		if strings.TrimSpace(req.Query) == "" || len(req.Query) > MaxQueryBytes || req.Variables == nil {
			t.Fatalf("RequestFromQuery(%q) accepted an invalid request: %+v", rawQuery, req)
		}
		values, _ := url.ParseQuery(rawQuery)
		for _, p := range []string{"variables", "extensions"} {
			if v := values.Get(p); v != "" && !json.Valid([]byte(v)) {
				t.Fatalf("RequestFromQuery(%q) accepted %s %q, which is not one JSON value", rawQuery, p, v)
			}
		}
	})
}
