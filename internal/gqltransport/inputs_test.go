package gqltransport

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/vektah/gqlparser/v2/ast"
)

// Input coercion: a value execution cannot coerce is refused before the
// operation runs, as a request error with the validation code (422, or 400
// as application/graphql-response+json), never the 500 INTERNAL_ERROR
// execution would give. The fields are protected, so a value that coerces
// goes on to the @auth directive, which refuses the caller without
// credentials (401): that is how "accepted" shows here.
func TestInputCoercion(t *testing.T) {
	const (
		users     = `query($n: Int) { users(first: $n) { nodes { id } } }`
		setSub    = `mutation($t: Time!) { setSubscription(userId: "u", plan: "trial", expiresAt: $t) { id } }`
		createKey = `mutation($i: CreateApiKeyInput!) { createApiKey(input: $i) { key } }`
		broadcast = `mutation($n: NotificationInput!) { sendNotificationToAll(notification: $n) { jobId } }`
	)
	cases := []struct {
		name, query, vars string // vars: the JSON of the variables, "" for none
		code              string // AUTH_REQUIRED: it coerced
	}{
		{"literal Int beyond 64 bits", `{ users(first: 99999999999999999999) { nodes { id } } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		{"literal Int beyond 32 bits", `{ users(first: 2147483648) { nodes { id } } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		{"literal Int below 32 bits", `{ users(first: -2147483649) { nodes { id } } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		{"literal Int at the top of the range", `{ users(first: 2147483647) { nodes { id } } }`, "", "AUTH_REQUIRED"},
		{"literal Int in an aliased fragment", `{ ...F } fragment F on Query { a: users(first: 4294967296) { nodes { id } } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		{"variable Int beyond 64 bits", users, `{"n": 99999999999999999999}`, "GRAPHQL_VALIDATION_FAILED"},
		{"variable Int beyond 32 bits", users, `{"n": 2147483648}`, "GRAPHQL_VALIDATION_FAILED"},
		{"variable Int as 1e30", users, `{"n": 1e30}`, "GRAPHQL_VALIDATION_FAILED"},
		{"variable Int with a fraction", users, `{"n": 1.5}`, "GRAPHQL_VALIDATION_FAILED"},
		{"variable Int written 5.0", users, `{"n": 5.0}`, "AUTH_REQUIRED"},
		{"variable Int written 1e2", users, `{"n": 1e2}`, "AUTH_REQUIRED"},
		{"variable default beyond 32 bits", `query($n: Int = 2147483648) { users(first: $n) { nodes { id } } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		{"literal Time malformed", `mutation { setSubscription(userId: "u", plan: "trial", expiresAt: "soon") { id } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		{"literal Time", `mutation { setSubscription(userId: "u", plan: "trial", expiresAt: "2026-11-29T10:00:00Z") { id } }`, "", "AUTH_REQUIRED"},
		{"variable Time malformed", setSub, `{"t": "soon"}`, "GRAPHQL_VALIDATION_FAILED"},
		{"variable Time a number", setSub, `{"t": 5}`, "GRAPHQL_VALIDATION_FAILED"},
		{"variable Time", setSub, `{"t": "2026-11-29T10:00:00Z"}`, "AUTH_REQUIRED"},
		{"Int in an input variable beyond 32 bits", createKey, `{"i": {"name": "k", "scopes": ["accounts:read"], "rateLimit": 1e20}}`, "GRAPHQL_VALIDATION_FAILED"},
		{"Time in an input variable malformed", createKey, `{"i": {"name": "k", "scopes": ["accounts:read"], "expiresAt": "never"}}`, "GRAPHQL_VALIDATION_FAILED"},
		{"input variable", createKey, `{"i": {"name": "k", "scopes": ["accounts:read"], "rateLimit": 10}}`, "AUTH_REQUIRED"},
		{"Int in an input literal beyond 32 bits", `mutation { createApiKey(input: {name: "k", scopes: ["accounts:read"], rateLimit: 3000000000}) { key } }`, "", "GRAPHQL_VALIDATION_FAILED"},
		// NotificationInput keeps the contract's own code for what does
		// not conform, its custom scalars and Int ranges included.
		{"notification data not an object", `mutation { sendNotificationToAll(notification: {subject: "s", content: "c", data: "x"}) { jobId } }`, "", "INVALID_INPUT"},
		{"notification data variable not an object", broadcast, `{"n": {"subject": "s", "content": "c", "data": [1]}}`, "INVALID_INPUT"},
		{"notification ttl beyond 32 bits", broadcast, `{"n": {"subject": "s", "content": "c", "options": {"ttl": 1e20}}}`, "INVALID_INPUT"},
		{"notification ttl literal beyond 32 bits", `mutation { sendNotificationToAll(notification: {subject: "s", content: "c", options: {ttl: 2147483648}}) { jobId } }`, "", "INVALID_INPUT"},
		{"notification", broadcast, `{"n": {"subject": "s", "content": "c", "data": {"k": 1}, "options": {"ttl": 60}}}`, "AUTH_REQUIRED"},
	}
	h := newTestHandler()
	for _, c := range cases {
		for _, accept := range []string{"application/json", "application/graphql-response+json"} {
			t.Run(c.name+" as "+accept, func(t *testing.T) {
				body := map[string]any{"query": c.query}
				if c.vars != "" {
					body["variables"] = json.RawMessage(c.vars)
				}
				raw, err := json.Marshal(body)
				if err != nil {
					t.Fatal(err)
				}
				rec := postBody(h, raw, "Accept", accept)
				got := decode(t, rec)
				want := map[string]int{"AUTH_REQUIRED": http.StatusUnauthorized, "INVALID_INPUT": http.StatusBadRequest, "GRAPHQL_VALIDATION_FAILED": http.StatusUnprocessableEntity}[c.code]
				if c.code == "GRAPHQL_VALIDATION_FAILED" && accept != "application/json" {
					want = http.StatusBadRequest
				}
				if rec.Code != want || errorCode(got) != c.code {
					t.Fatalf("%d %s, want %d %s: %s", rec.Code, errorCode(got), want, c.code, rec.Body)
				}
			})
		}
	}
}

// FuzzVariableCoercion: whatever JSON a variable holds, the answer is a
// client error or the @auth refusal, never a 500.
func FuzzVariableCoercion(f *testing.F) {
	docs := []string{
		`query($v: Int) { users(first: $v) { nodes { id } } }`,
		`mutation($v: Time!) { setSubscription(userId: "u", plan: "trial", expiresAt: $v) { id } }`,
		`mutation($v: CreateApiKeyInput!) { createApiKey(input: $v) { key } }`,
		`mutation($v: NotificationInput!) { sendNotificationToAll(notification: $v) { jobId } }`,
		`mutation($v: MessengerMessageOptions) { sendMessengerBroadcast(message: "m", options: $v) { id } }`,
		`query($v: ID!) { notificationJob(id: $v) { id } }`,
		`query($v: Boolean) { users(verified: $v) { nodes { id } } }`,
	}
	for i, seed := range []string{`1`, `99999999999999999999`, `5.0`, `"2026-11-29T10:00:00Z"`, `{"name":"k","scopes":["a"],"rateLimit":1e20}`,
		`{"subject":"s","content":"c","data":"x"}`, `{"buttons":[[{"text":"a","url":"https://x"}]]}`, `1e400`, `-0`, `null`, `[[1]]`} {
		f.Add(uint8(i), seed)
	}
	h := newTestHandler()
	f.Fuzz(func(t *testing.T, doc uint8, value string) {
		body := []byte(`{"query":` + quote(docs[int(doc)%len(docs)]) + `,"variables":{"v":` + value + `}}`)
		rec := postBody(h, body)
		if rec.Code >= 500 {
			t.Fatalf("variable %s: %d %s", value, rec.Code, rec.Body)
		}
	})
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Every scalar of the schema has its coercion, so a scalar added later
// cannot reach execution unchecked.
func TestEveryScalarCoerces(t *testing.T) {
	schema := newTestHandler().schema
	for name, def := range schema.Types {
		if def.Kind == ast.Scalar {
			if _, ok := scalars[name]; !ok {
				t.Errorf("scalar %s has no entry in scalars", name)
			}
		}
	}
}
