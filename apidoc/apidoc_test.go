package apidoc

// The lint of apidoc/openapi.yaml (.ci/run runs it as a step of its own):
// the document must load and validate as OpenAPI 3.1 with kin-openapi, and
// keep the rules this project holds it to beyond the specification's.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/herald-vpn/herald/internal/apperr"
)

// load parses and validates a document as kin-openapi does for the tests
// that check answers against it.
func load(t *testing.T, src []byte) *openapi3.T {
	t.Helper()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(src)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return doc
}

// TestDocumentJSONIsTheYAML: the JSON the server serves is the YAML, with
// its keys in their order.
func TestDocumentJSONIsTheYAML(t *testing.T) {
	js, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(js) || !strings.HasPrefix(string(js), `{"openapi":"3.1.`) {
		t.Fatalf("JSON() does not start with the openapi field: %.80s", js)
	}
	fromYAML, err := json.Marshal(load(t, YAML))
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := json.Marshal(load(t, js))
	if err != nil {
		t.Fatal(err)
	}
	if string(fromYAML) != string(fromJSON) {
		t.Fatalf("the JSON document differs from the YAML one:\nYAML: %.2000s\nJSON: %.2000s", fromYAML, fromJSON)
	}
	if _, err := toJSON([]byte("openapi: [")); err == nil {
		t.Fatal("toJSON accepted malformed YAML")
	}
}

// TestDocumentLint checks the document: valid OpenAPI 3.1 (kin-openapi's
// Validate, examples included), then the rules of this project: every
// operation named, tagged and described with its rate-limit tier; every
// answer under /api/ in the envelope, with X-Request-ID and the
// X-RateLimit headers; the errors every route can give (BANNED, 429 with
// Retry-After, INTERNAL_ERROR; VALIDATION_ERROR and PAYLOAD_TOO_LARGE where
// a body is read; the authentication errors where a token is needed); each
// error code at the HTTP status the catalogue (internal/apperr) gives it;
// ErrorCode listing exactly the codes used; examples valid; no unused
// component.
func TestDocumentLint(t *testing.T) {
	doc := load(t, YAML)
	ctx := context.Background()
	if !doc.IsOpenAPI31OrLater() || !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Fatalf("openapi is %q, want 3.1.x", doc.OpenAPI)
	}
	if err := doc.Validate(ctx, openapi3.EnableMultiError(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("not a valid OpenAPI document:\n%v", err)
	}

	tags := map[string]bool{}
	for _, tag := range doc.Tags {
		tags[tag.Name] = true
	}
	ids := map[string]string{}
	used := map[int]map[string]bool{} // status -> codes
	for _, path := range doc.Paths.InMatchingOrder() {
		for method, op := range doc.Paths.Value(path).Operations() {
			where := method + " " + path
			if op.OperationID == "" || op.Summary == "" || len(op.Tags) == 0 {
				t.Errorf("%s: needs an operationId, a summary and a tag", where)
			}
			if prev, dup := ids[op.OperationID]; dup {
				t.Errorf("%s: operationId %q is also %s's", where, op.OperationID, prev)
			}
			ids[op.OperationID] = where
			for _, tag := range op.Tags {
				if !tags[tag] {
					t.Errorf("%s: tag %q is not declared", where, tag)
				}
			}
			if op.Responses.Default() != nil {
				t.Errorf("%s: a default response would let any status pass; list each", where)
			}
			for status, codes := range lintOperation(t, where, strings.HasPrefix(path, "/api/"), op) {
				for code := range codes {
					if used[status] == nil {
						used[status] = map[string]bool{}
					}
					used[status][code] = true
				}
			}
		}
	}
	for _, name := range []string{"NotFound", "MethodNotAllowed"} {
		ref := doc.Components.Responses[name]
		if ref == nil {
			t.Fatalf("#/components/responses/%s is missing: it describes what the paths do not list", name)
		}
		status := map[string]int{"NotFound": http.StatusNotFound, "MethodNotAllowed": http.StatusMethodNotAllowed}[name]
		for code := range lintResponse(t, "#/components/responses/"+name, true, status, ref.Value) {
			if used[status] == nil {
				used[status] = map[string]bool{}
			}
			used[status][code] = true
		}
	}

	// Each code at its catalogue status, and ErrorCode lists them all.
	var all []string
	for status, codes := range used {
		for code := range codes {
			if e := apperr.Lookup(apperr.Code(code)); e.Code != apperr.Code(code) {
				t.Errorf("%s (%d) is not in the error catalogue", code, status)
			} else if e.Status != status {
				t.Errorf("%s is documented at %d, but the catalogue answers it with %d", code, status, e.Status)
			}
			if !slices.Contains(all, code) {
				all = append(all, code)
			}
		}
	}
	slices.Sort(all)
	var enum []string
	for _, v := range doc.Components.Schemas["ErrorCode"].Value.Enum {
		enum = append(enum, fmt.Sprint(v))
	}
	if !slices.Equal(enum, all) {
		t.Errorf("ErrorCode enum is %v,\nbut the responses use %v (sorted)", enum, all)
	}

	lintExamples(t, doc)
	lintUnused(t, string(YAML))
}

// lintOperation checks one operation and returns the error codes of each
// of its statuses.
func lintOperation(t *testing.T, where string, underAPI bool, op *openapi3.Operation) map[int]map[string]bool {
	t.Helper()
	tier, _ := op.Extensions["x-rate-limit-tier"].(string)
	bearer := op.Security != nil && slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool { return r["bearer"] != nil })
	switch {
	case !underAPI && tier != "":
		t.Errorf("%s: outside /api/, so outside the rate limits: no x-rate-limit-tier", where)
	case underAPI && !slices.Contains([]string{"global", "auth", "protected", "admin"}, tier):
		t.Errorf("%s: x-rate-limit-tier is %q, want global, auth, protected or admin", where, tier)
	case underAPI && (tier == "protected" || tier == "admin") != bearer:
		t.Errorf("%s: tier %q but bearer security %v: the protected and admin tiers are the tiers of operations that need a caller", where, tier, bearer)
	}

	codes := map[int]map[string]bool{}
	for key, ref := range op.Responses.Map() {
		status, err := strconv.Atoi(key)
		if err != nil {
			t.Errorf("%s: response %q is not a status", where, key)
			continue
		}
		codes[status] = lintResponse(t, fmt.Sprintf("%s %d", where, status), underAPI, status, ref.Value)
	}
	if !underAPI {
		return codes
	}
	want := map[int][]string{
		http.StatusForbidden:           {"BANNED"},
		http.StatusTooManyRequests:     {"RATE_LIMITED"},
		http.StatusInternalServerError: {"INTERNAL_ERROR"},
	}
	if op.RequestBody != nil {
		want[http.StatusBadRequest] = []string{"VALIDATION_ERROR"}
		want[http.StatusRequestEntityTooLarge] = []string{"PAYLOAD_TOO_LARGE"}
	}
	if bearer {
		want[http.StatusUnauthorized] = []string{"AUTH_REQUIRED", "TOKEN_EXPIRED", "TOKEN_INVALID"}
		want[http.StatusForbidden] = append(want[http.StatusForbidden], "INSUFFICIENT_PERMISSIONS")
	}
	for status, need := range want {
		for _, code := range need {
			if !codes[status][code] {
				t.Errorf("%s: no %d %s, which it can answer", where, status, code)
			}
		}
	}
	return codes
}

// lintResponse checks one response and returns the error codes its body
// can carry.
func lintResponse(t *testing.T, where string, underAPI bool, status int, r *openapi3.Response) map[string]bool {
	t.Helper()
	if r.Description == nil || *r.Description == "" {
		t.Errorf("%s: no description", where)
	}
	if r.Headers["X-Request-ID"] == nil {
		t.Errorf("%s: no X-Request-ID header", where)
	}
	if !underAPI {
		return nil
	}
	banned := false
	codes := map[string]bool{}
	// An event stream, a page for a person (text/html alone), and a 204,
	// carry no envelope.
	eventStream := status < 300 && r.Content.Get("text/event-stream") != nil
	page := status < 300 && len(r.Content) == 1 && r.Content.Get("text/html") != nil
	noContent := status == http.StatusNoContent && len(r.Content) == 0
	if eventStream || page || noContent {
		banned = false
	} else if mt := r.Content.Get("application/json"); mt == nil || mt.Schema == nil {
		t.Errorf("%s: no application/json schema", where)
	} else {
		collectCodes(mt.Schema, codes, map[*openapi3.Schema]bool{})
		envelope := "SuccessEnvelope"
		if status >= 400 {
			envelope = "ErrorEnvelope"
			if len(codes) == 0 {
				t.Errorf("%s: an error response without codes", where)
			}
		}
		if where != "GET /api/v1/openapi.json 200" && !allOf(mt.Schema, "#/components/schemas/"+envelope) {
			t.Errorf("%s: the schema is not allOf %s", where, envelope)
		}
		banned = len(codes) == 1 && codes["BANNED"]
	}
	if !banned {
		for _, h := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"} {
			if r.Headers[h] == nil {
				t.Errorf("%s: no %s header", where, h)
			}
		}
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		if h := r.Headers["Retry-After"]; h == nil || !h.Value.Required {
			t.Errorf("%s: Retry-After must be a required header", where)
		}
	}
	return codes
}

// allOf reports whether s is allOf the schema at ref.
func allOf(s *openapi3.SchemaRef, ref string) bool {
	for _, a := range s.Value.AllOf {
		if a.Ref == ref {
			return true
		}
	}
	return false
}

// collectCodes adds the values of every error.code const reachable in s.
func collectCodes(s *openapi3.SchemaRef, codes map[string]bool, seen map[*openapi3.Schema]bool) {
	if s == nil || s.Value == nil || seen[s.Value] {
		return
	}
	v := s.Value
	seen[v] = true
	if c := v.Properties["code"]; c != nil && c.Value != nil {
		if code, ok := c.Value.Const.(string); ok {
			codes[code] = true
		}
	}
	for _, list := range []openapi3.SchemaRefs{v.AllOf, v.OneOf, v.AnyOf} {
		for _, sub := range list {
			collectCodes(sub, codes, seen)
		}
	}
	if e := v.Properties["error"]; e != nil {
		collectCodes(e, codes, seen)
	}
}

// lintExamples validates every schema's examples (the OpenAPI 3.1 keyword,
// which Validate leaves alone) against the schema.
func lintExamples(t *testing.T, doc *openapi3.T) {
	t.Helper()
	check := func(where string, s *openapi3.SchemaRef) {
		if s == nil || s.Value == nil {
			return
		}
		for i, ex := range s.Value.Examples {
			if err := s.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020()); err != nil {
				t.Errorf("%s: example %d (%v) does not match: %v", where, i, ex, err)
			}
		}
		for name, p := range s.Value.Properties {
			if p.Ref == "" && p.Value != nil {
				for i, ex := range p.Value.Examples {
					if err := p.Value.VisitJSON(ex, openapi3.EnableJSONSchema2020()); err != nil {
						t.Errorf("%s.%s: example %d (%v) does not match: %v", where, name, i, ex, err)
					}
				}
			}
		}
	}
	for name, s := range doc.Components.Schemas {
		check("#/components/schemas/"+name, s)
	}
	for name, p := range doc.Components.Parameters {
		check("#/components/parameters/"+name, p.Value.Schema)
	}
}

// lintUnused fails on a component nothing refers to.
func lintUnused(t *testing.T, src string) {
	t.Helper()
	refs := map[string]bool{}
	for _, m := range regexp.MustCompile(`#/components/(\w+)/([\w-]+)`).FindAllStringSubmatch(src, -1) {
		refs[m[1]+"/"+m[2]] = true
	}
	section := ""
	inComponents := false
	for line := range strings.Lines(src) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "components:":
			inComponents = true
		case !inComponents || strings.HasPrefix(strings.TrimSpace(line), "#"):
		case strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") && strings.HasSuffix(line, ":"):
			section = strings.TrimSuffix(strings.TrimSpace(line), ":")
		case strings.HasPrefix(line, "    ") && !strings.HasPrefix(line, "     ") && strings.HasSuffix(line, ":"):
			name := strings.TrimSuffix(strings.TrimSpace(line), ":")
			used := refs[section+"/"+name] ||
				section == "securitySchemes" && strings.Contains(src, "- "+name+": []") ||
				section == "responses" && (name == "NotFound" || name == "MethodNotAllowed")
			if !used {
				t.Errorf("#/components/%s/%s is never used", section, name)
			}
		}
	}
}
