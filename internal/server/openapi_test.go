package server

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/herald-vpn/herald/apidoc"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/rest"
)

// TestOpenAPIDescribesEveryRoute holds the route table and apidoc/openapi.yaml
// together: every REST route is an operation of the document with the same
// method and path, charged to the same tier (x-rate-limit-tier) and
// needing a token exactly when the route's rule does; and every operation
// of the document under /api/ is a route.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestOpenAPIDescribesEveryRoute(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(apidoc.YAML)
	if err != nil {
		t.Fatal(err)
	}
	routes := restRoutes(&rest.Handlers{})
	served := map[string]bool{}
	for _, rt := range routes {
		where := rt.method + " " + rt.path
		served[where] = true
		item := doc.Paths.Value(rt.path)
		if item == nil || item.GetOperation(rt.method) == nil {
			t.Errorf("%s is served but apidoc/openapi.yaml does not describe it", where)
			continue
		}
		op := item.GetOperation(rt.method)
		tier := rt.rule.Tier
		if tier == "" {
			tier = "global"
		}
		if got := op.Extensions["x-rate-limit-tier"]; got != tier {
			t.Errorf("%s: x-rate-limit-tier is %v, the route's tier %s", where, got, tier)
		}
		bearer := op.Security != nil && slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool { return r["bearer"] != nil })
		if bearer != rt.rule.NeedsCaller() {
			t.Errorf("%s: bearer security %v, but the route needs a caller: %v", where, bearer, rt.rule.NeedsCaller())
		}
		if got, _ := op.Extensions["x-required-scope"].(string); got != rt.rule.Scope {
			t.Errorf("%s: x-required-scope is %q, the route's scope %q", where, got, rt.rule.Scope)
		}
		// An API key is accepted exactly where the route names a scope a
		// key can hold.
		keyed := op.Security != nil && slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool { return r["apiKey"] != nil })
		if want := slices.Contains(auth.KeyScopes, rt.rule.Scope); keyed != want {
			t.Errorf("%s: apiKey security %v, want %v for scope %q", where, keyed, want, rt.rule.Scope)
		}
		// Every route with a caller can refuse one: a key on a user's
		// operation, a caller without the scope.
		if rt.rule.NeedsCaller() {
			if r := op.Responses.Status(403); r == nil || !strings.Contains(r.Ref, "Forbidden") && !strings.Contains(mustJSON(t, r), "InsufficientPermissionsError") {
				t.Errorf("%s: its 403 must carry INSUFFICIENT_PERMISSIONS", where)
			}
		}
	}
	for _, path := range doc.Paths.InMatchingOrder() {
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		for method := range doc.Paths.Value(path).Operations() {
			if !served[method+" "+path] {
				t.Errorf("apidoc/openapi.yaml describes %s %s, which no route serves", method, path)
			}
		}
	}
}
