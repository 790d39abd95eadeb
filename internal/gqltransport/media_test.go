package gqltransport

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestNegotiate(t *testing.T) {
	const gql, js, none = "graphql", "json", "406"
	cases := []struct {
		accept []string
		want   string
	}{
		{nil, js},
		{[]string{""}, js},
		{[]string{"application/json"}, js},
		{[]string{"application/graphql-response+json"}, gql},
		{[]string{"Application/GraphQL-Response+JSON"}, gql},
		{[]string{"application/graphql-response+json, application/json"}, gql},
		{[]string{"application/json, application/graphql-response+json"}, gql},
		{[]string{"application/graphql-response+json; charset=utf-8, application/json; charset=utf-8"}, gql},
		{[]string{"multipart/mixed;deferSpec=20220824, application/graphql-response+json, application/json"}, gql},
		{[]string{"application/graphql-response+json;q=0.9, application/json"}, js},
		{[]string{"application/json;q=0.9, application/graphql-response+json"}, gql},
		{[]string{"application/json", "application/graphql-response+json"}, gql},
		// A wildcard rates both alike: the spec's preferred type wins.
		{[]string{"*/*"}, gql},
		{[]string{"application/*"}, gql},
		{[]string{"*/*;q=0.5, application/json"}, js},
		{[]string{"application/json, */*"}, js},
		{[]string{"*/*, application/json"}, js},
		{[]string{"application/*, application/json"}, js},
		{[]string{"application/graphql-response+json, */*"}, gql},
		{[]string{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}, gql},
		{[]string{"application/json;q=0, */*"}, gql},
		{[]string{"text/html"}, none},
		{[]string{"application/json;q=0"}, none},
		{[]string{"application/xml, text/plain;q=0.5"}, none},
		{[]string{"not a media type"}, none},
	}
	for _, c := range cases {
		h := http.Header{}
		for _, v := range c.accept {
			h.Add("Accept", v)
		}
		m, ok := negotiate(h)
		got := js
		switch {
		case !ok:
			got = none
		case m == mediaGraphQL:
			got = gql
		}
		if got != c.want {
			t.Errorf("Accept %q: %s, want %s", c.accept, got, c.want)
		}
	}
}

// serve sends one request to a test handler and decodes the answer.
func serve(t *testing.T, method, target, body string, header ...string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	var req *http.Request
	if method == http.MethodPost {
		rec := postBody(newTestHandler(), []byte(body), header...)
		return rec, decode(t, rec)
	}
	req = httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	newTestHandler().ServeHTTP(rec, req)
	return rec, decode(t, rec)
}

func decode(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
		t.Fatalf("%d %q is not a JSON object", rec.Code, rec.Body)
	}
	return m
}

func errorCode(body map[string]any) string {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	ext, _ := errs[0].(map[string]any)["extensions"].(map[string]any)
	code, _ := ext["code"].(string)
	return code
}

// The two media types answer the same requests with their own statuses,
// content types and data entries.
func TestMediaTypes(t *testing.T) {
	const accept = "Accept"
	cases := []struct {
		name, method, target, body string
		code                       string // "" for success
		jsonStatus, gqlStatus      int
	}{
		{"query", "POST", "", `{"query":"{ version }"}`, "", 200, 200},
		{"parse error", "POST", "", `{"query":"{"}`, "GRAPHQL_PARSE_FAILED", 400, 400},
		{"validation error", "POST", "", `{"query":"{ nope }"}`, "GRAPHQL_VALIDATION_FAILED", 422, 400},
		{"variable coercion", "POST", "", `{"query":"query($id: ID!) { __typename }","variables":{"id":null}}`, "GRAPHQL_VALIDATION_FAILED", 422, 400},
		{"unknown operation", "POST", "", `{"query":"query A { __typename }","operationName":"B"}`, "GRAPHQL_VALIDATION_FAILED", 422, 400},
		{"too complex", "POST", "", `{"query":"{` + strings.Repeat(" version", 60) + ` }"}`, "QUERY_TOO_COMPLEX", 400, 400},
		{"malformed JSON", "POST", "", `{"query":`, "VALIDATION_ERROR", 400, 400},
		{"extensions not an object", "POST", "", `{"query":"{ version }","extensions":"x"}`, "VALIDATION_ERROR", 400, 400},
		{"extensions", "POST", "", `{"query":"{ version }","extensions":{"some":"value"}}`, "", 200, 200},
		{"GET query", "GET", "/graphql?query=%7B%20version%20%7D", "", "", 200, 200},
		{"GET with variables", "GET", "/graphql?query=query(%24n%3AString!)%7B__type(name%3A%24n)%7Bname%7D%7D&variables=%7B%22n%22%3A%22Query%22%7D", "", "", 200, 200},
		{"GET named operation", "GET", "/graphql?query=query%20A%7Bversion%7D%20mutation%20B%7Blogout%7D&operationName=A", "", "", 200, 200},
		{"GET mutation", "GET", "/graphql?query=mutation%7Blogout%7D", "", "METHOD_NOT_ALLOWED", 405, 405},
		{"GET named mutation", "GET", "/graphql?query=query%20A%7Bversion%7D%20mutation%20B%7Blogout%7D&operationName=B", "", "METHOD_NOT_ALLOWED", 405, 405},
		{"GET without a query", "GET", "/graphql", "", "VALIDATION_ERROR", 400, 400},
		{"GET with bad variables", "GET", "/graphql?query=%7Bversion%7D&variables=%5B1%5D", "", "VALIDATION_ERROR", 400, 400},
		{"PUT", "PUT", "/graphql", "", "METHOD_NOT_ALLOWED", 405, 405},
	}
	for _, c := range cases {
		// No Accept and application/json answer application/json; the
		// spec's type named, or a wildcard (curl's */*), answer
		// application/graphql-response+json.
		for _, m := range []struct {
			accept  string
			graphql bool
		}{
			{"", false},
			{"application/json", false},
			{"application/graphql-response+json", true},
			{"*/*", true},
		} {
			t.Run(c.name+" as "+m.accept, func(t *testing.T) {
				rec, body := serve(t, c.method, c.target, c.body, accept, m.accept)
				want, contentType := c.jsonStatus, "application/json; charset=utf-8"
				if m.graphql {
					want, contentType = c.gqlStatus, "application/graphql-response+json; charset=utf-8"
				}
				if rec.Code != want || errorCode(body) != c.code {
					t.Fatalf("%d %s, want %d %q: %s", rec.Code, errorCode(body), want, c.code, rec.Body)
				}
				if ct := rec.Header().Get("Content-Type"); ct != contentType {
					t.Errorf("Content-Type %q, want %q", ct, contentType)
				}
				data, present := body["data"]
				switch {
				case c.code == "" && data == nil:
					t.Errorf("no data: %s", rec.Body)
				case c.code != "" && !m.graphql && (!present || data != nil):
					t.Errorf("application/json: data = %v (present %v), want null", data, present)
				case c.code != "" && m.graphql && present:
					t.Errorf("application/graphql-response+json: data present in a %d answer", rec.Code)
				}
				if !strings.Contains(rec.Header().Get("Vary"), "Accept") {
					t.Errorf("Vary %q lacks Accept", rec.Header().Get("Vary"))
				}
				if c.code == "METHOD_NOT_ALLOWED" {
					allow := "GET, POST"
					if c.method == "GET" {
						allow = "POST"
					}
					if got := rec.Header().Get("Allow"); got != allow {
						t.Errorf("Allow %q, want %q", got, allow)
					}
				}
			})
		}
	}
}

func TestNotAcceptable(t *testing.T) {
	rec, body := serve(t, "POST", "", `{"query":"{ version }"}`, "Accept", "text/html")
	if rec.Code != http.StatusNotAcceptable || errorCode(body) != "NOT_ACCEPTABLE" {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
}
