package gqltransport

import (
	"fmt"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/validator"
)

func TestBounds(t *testing.T) {
	b := boundsOf(testLimits)
	cases := []struct {
		name, doc string
		refused   bool
		msgHas    string
	}{
		{"introspection, default", introspectionQuery(t, "default"), false, ""},
		{"introspection, all options", introspectionQuery(t, "all_options"), false, ""},
		{"depth at the limit", "{ me { subscription { plan } } }", false, ""},
		{"depth over the limit", "{ me {" + strings.Repeat(" a {", 9) + " b" + strings.Repeat(" }", 10) + " }", true, "query is more than 10 levels deep"},
		{"depth through a fragment", "{ me { ...U } } fragment U on User {" + strings.Repeat(" a {", 9) + " b" + strings.Repeat(" }", 9) + " }", true, "levels deep"},
		{"introspection at its allowance", ofTypeChain(IntrospectionMaxDepth - 3), false, ""},
		{"introspection over its allowance", ofTypeChain(IntrospectionMaxDepth - 2), true, "introspection query is more than 20 levels deep"},
		{"a schema field under introspection's allowance", "{ __typename me {" + strings.Repeat(" a {", 12) + " b" + strings.Repeat(" }", 14), true, "query is more than 10"},
		{"fifty identical fields", "{" + strings.Repeat(" version", 50) + " }", false, ""},
		{"fifty-one identical fields", "{" + strings.Repeat(" version", 51) + " }", true, `answer "version"`},
		{"identical fields merged through fragments", "{ ...A ...B ... on Query { version } } fragment A on Query {" + strings.Repeat(" version", 25) + " } fragment B on Query {" + strings.Repeat(" version", 25) + " }", true, `answer "version"`},
		{"identical fields under merged parents", "{" + strings.Repeat(" me { id }", 51) + " }", true, `answer "me"`},
		{"a cycle is left to validation", "{ ...A } fragment A on Query { ...B } fragment B on Query { ...A version }", false, ""},
		{"doubling fragments", fragmentChain(12), true, "once its fragments are expanded"},
		{"an unused fragment counts", "{ version } " + fragmentChain(12)[strings.Index(fragmentChain(12), "fragment"):], true, "once its fragments are expanded"},
		{"nesting in values", "{ devices(after: " + strings.Repeat("[", 60) + strings.Repeat("]", 60) + ") { pageInfo { hasNextPage } } }", true, "nests"},
		{"does not parse", "{ version", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, ae := b.parseBounded(c.doc)
			if !c.refused {
				if ae != nil {
					t.Fatalf("refused: %v", ae)
				}
				return
			}
			if ae == nil || ae.Code != apperr.QueryTooComplex || !strings.Contains(ae.Message, c.msgHas) {
				t.Fatalf("got %v, want QUERY_TOO_COMPLEX saying %q", ae, c.msgHas)
			}
		})
	}
}

// FuzzParseBounded: the bounds never panic, and what they accept parses.
func FuzzParseBounded(f *testing.F) {
	for _, seed := range []string{
		"{ version }", fragmentChain(5), ofTypeChain(30), "{ ...A } fragment A on Query { ...A }",
		"query($a: [[Int]] = [[1]]) @d { a: b(c: {d: [1, 2]}) @skip(if: $a) { ... on X { y } } }",
		`{ __type(name: "Query") { name } }`, "{", "}}}", "fragment F on T { ...F ...G } fragment G on T { ...F }",
	} {
		f.Add(seed)
	}
	b := boundsOf(testLimits)
	f.Fuzz(func(t *testing.T, doc string) {
		parsed, ae := b.parseBounded(doc)
		if ae != nil && ae.Code != apperr.QueryTooComplex {
			t.Fatalf("refused with %s", ae.Code)
		}
		if ae != nil && parsed != nil {
			t.Fatal("refused and returned a document")
		}
	})
}

// The cost of validated operations: each field once per element of the
// lists it is in, a page by its first (or default) size.
func TestOperationCost(t *testing.T) {
	h := newTestHandler()
	schema := h.schema
	sessions := `sessions { id createdAt lastUsedAt userAgent ip }`
	chat := `messengerChat { chatId status }`
	aliased := func(n int, field string) string {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			fmt.Fprintf(&b, " p%d: %s", i, field)
		}
		return b.String() + " }"
	}
	cases := []struct {
		name, doc string
		vars      map[string]any
		cost      int // 0: only refused is checked
		refused   bool
	}{
		{"a field", `{ version }`, nil, 1, false},
		{"a page by first", `{ users(first: 500) { nodes { id } } }`, nil, 1 + 1 + 500, false},
		{"a page by its default", `{ users { nodes { id email } } }`, nil, 1 + 1 + 50*2, false},
		{"first 0 is the default", `{ bans(first: 0) { nodes { ip } } }`, nil, 1 + 1 + 50, false},
		{"a first over the maximum counts the maximum", `{ bans(first: 100000) { nodes { ip } } }`, nil, 1 + 1 + 500, false},
		{"first from a variable", `query($n: Int) { notificationJobs(first: $n) { nodes { id } } }`, map[string]any{"n": int64(7)}, 1 + 1 + 7, false},
		{"an absent variable is the default", `query($n: Int) { notificationJobs(first: $n) { nodes { id } } }`, nil, 1 + 1 + 20, false},
		{"pageInfo once", `{ bans(first: 3) { nodes { ip reason } pageInfo { endCursor hasNextPage } } }`, nil, 1 + (1 + 3*2) + (1 + 2), false},
		{"a list without a page size", `{ user(id: "u") { id sessions { id ip } } }`, nil, 1 + 1 + (1 + AssumedListSize*2), false},
		{"lists within a page", `{ users(first: 2) { nodes { ` + sessions + ` } } }`, nil, 1 + 1 + 2*(1+AssumedListSize*5), false},
		{"through fragments", `{ ...Q } fragment Q on Query { users(first: 4) { nodes { ... on UserRecord { id } } } }`, nil, 1 + 1 + 4, false},
		{"introspection counts one a field", `{ __schema { types { name fields { name } } } }`, nil, 1, false},
		{"the console's users page", `query ($first: Int) { users(first: $first) { nodes { id email emailVerified createdAt disabled lastLoginAt deviceCount subscription { plan status expiresAt } } pageInfo { endCursor hasNextPage } } }`,
			map[string]any{"first": int64(50)}, 0, false},
		{"a full page of accounts with everything", `{ users(first: 500) { nodes { id email emailVerified createdAt referralCode disabled disabledAt disabledReason lastLoginAt deviceCount sessionCount subscription { plan status expiresAt } ` + sessions + ` messengerChat { chatId username firstName startPayload subscribedSince status userId } } } }`, nil, 0, false},
		{"four full pages of sessions", aliased(4, `users(first: 500) { nodes { `+sessions+` } }`), nil, 0, true},
		{"four full pages of sessions and chats", aliased(4, `users(first: 500) { nodes { `+sessions+` `+chat+` } }`), nil, 0, true},
		{"four full pages by a variable", `query($n: Int) {` + aliased(4, `users(first: $n) { nodes { `+sessions+` } }`)[1:], map[string]any{"n": int64(500)}, 0, true},
		{"four small pages by a variable", `query($n: Int) {` + aliased(4, `users(first: $n) { nodes { `+sessions+` } }`)[1:], map[string]any{"n": int64(10)}, 0, false},
		{"nested pages do not overflow", aliased(40, `users(first: 500) { nodes { `+sessions+` } }`), nil, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, errs := gqlparser.LoadQueryWithRules(schema, c.doc, nil) // nil: the default rules
			if errs != nil {
				t.Fatalf("invalid: %v", errs)
			}
			vars, err := validator.VariableValues(schema, doc.Operations[0], c.vars)
			if err != nil {
				t.Fatal(err)
			}
			op := doc.Operations[0]
			cost := (coster{pages: h.pageSizes, vars: vars, limit: MaxCost}).selections(op.SelectionSet, 0)
			if c.cost != 0 && cost != c.cost {
				t.Errorf("cost %d, want %d", cost, c.cost)
			}
			ae := checkCost(h.pageSizes, op, vars)
			if (ae != nil) != c.refused {
				t.Fatalf("cost %d: refused %v, want refused %v", cost, ae, c.refused)
			}
			if ae != nil && (ae.Code != apperr.QueryTooComplex || ae.Details["limit"] != MaxCost) {
				t.Fatalf("refusal %v", ae)
			}
		})
	}
}

// An operation over the cost bound is refused before it runs, as the
// other bounds are: 400 QUERY_TOO_COMPLEX with the limit.
func TestCostRefusal(t *testing.T) {
	page := `users(first: 500) { nodes { sessions { id createdAt lastUsedAt userAgent ip } messengerChat { chatId status } } }`
	doc := "{ a: " + page + " b: " + page + " c: " + page + " d: " + page + " }"
	for _, accept := range []string{"application/json", "application/graphql-response+json"} {
		rec := post(newTestHandler(), doc, "Accept", accept)
		body := decode(t, rec)
		if rec.Code != 400 || errorCode(body) != "QUERY_TOO_COMPLEX" || !strings.Contains(rec.Body.String(), `"limit":50000`) {
			t.Fatalf("%s: %d %s", accept, rec.Code, rec.Body)
		}
	}
	// One such page is within the bound: it goes on to @auth.
	if rec := post(newTestHandler(), "{ "+page+" }"); rec.Code != 401 {
		t.Fatalf("one page: %d %s", rec.Code, rec.Body)
	}
}
