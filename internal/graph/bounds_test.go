package graph

import (
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/apperr"
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
