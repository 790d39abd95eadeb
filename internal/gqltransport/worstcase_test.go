package gqltransport

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/graph"
)

// The documents a client can send to make the GraphQL door work hardest
// before anything runs: each is at most MaxQueryBytes (the size limit lets
// it through) and aims at one cost of parsing or validation. The test
// checks that each is refused with QUERY_TOO_COMPLEX; the benchmark shows
// what refusing it costs.

// fill repeats unit (formatted with its index when it holds a %d) between
// head and tail as often as MaxQueryBytes allows.
func fill(head, unit, tail string) string {
	var b strings.Builder
	b.WriteString(head)
	for i := 0; ; i++ {
		u := unit
		if strings.Contains(unit, "%d") {
			u = fmt.Sprintf(unit, i)
		}
		if b.Len()+len(u)+len(tail) > MaxQueryBytes {
			break
		}
		b.WriteString(u)
	}
	b.WriteString(tail)
	return b.String()
}

// fragmentChain is n fragments on __Type, each spreading the next twice
// under two aliases: 2^n fields once expanded, from a few hundred bytes.
func fragmentChain(n int) string {
	var b strings.Builder
	b.WriteString(`{ __type(name: "Query") { ...T0 } }`)
	for i := range n {
		fmt.Fprintf(&b, " fragment T%d on __Type { a: ofType { ...T%d } b: ofType { ...T%d } }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, " fragment T%d on __Type { name }", n)
	return b.String()
}

// distinctFragments is as many fragments on Query as fit, all spread in
// the operation's selection set.
func distinctFragments() string {
	build := func(n int) string {
		var defs, spreads strings.Builder
		for i := range n {
			fmt.Fprintf(&defs, "fragment F%d on Query { version } ", i)
			fmt.Fprintf(&spreads, " ...F%d", i)
		}
		return defs.String() + "{" + spreads.String() + " }"
	}
	lo, hi := 1, MaxQueryBytes
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if len(build(mid)) <= MaxQueryBytes {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return build(lo)
}

// ofTypeChain is an introspection query n ofType levels deep.
func ofTypeChain(n int) string {
	return `{ __schema { types { ` + strings.Repeat("ofType { ", n) + "name" + strings.Repeat(" }", n) + " } } }"
}

// introspectionCopies is the all-options introspection query with its
// operation's selection repeated n times under aliases.
func introspectionCopies(t testing.TB, n int) string {
	full := introspectionQuery(t, "all_options")
	open := strings.Index(full, "__schema")
	end := strings.Index(full, "fragment FullType")
	body := strings.TrimSpace(full[open:end])
	body = strings.TrimSuffix(strings.TrimSpace(strings.TrimSuffix(body, "}")), "}") // the operation's own braces
	var b strings.Builder
	b.WriteString("query IntrospectionQuery {")
	for i := range n {
		fmt.Fprintf(&b, " s%d: %s }", i, body)
	}
	b.WriteString(" } ")
	b.WriteString(full[end:])
	return b.String()
}

// introspectionQuery reads testdata/introspection_NAME.graphql: graphql-js's
// getIntrospectionQuery, printed by the version test/clients pins.
func introspectionQuery(t testing.TB, name string) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/introspection_" + name + ".graphql")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

type worstCase struct{ name, doc string }

func worstCases(t testing.TB) []worstCase {
	cases := []worstCase{
		{"repeated identical fields", fill("{", " version", " }")},
		{"repeated fragment spreads", fill("fragment F on Query { version } {", " ...F", " }")},
		{"distinct fragments", distinctFragments()},
		{"doubling fragments", fragmentChain(40)},
		{"deep nesting", "{" + strings.Repeat(" me {", 990) + " id" + strings.Repeat(" }", 991)},
		{"ofType chain 100", ofTypeChain(100)},
		{"many aliases", fill("{", " a%d: version", " }")},
		{"long argument list", fill("{ devices(", " first: 1", ") { pageInfo { hasNextPage } } }")},
		{"many distinct arguments", fill("{ devices(", " a%d: 1", ") { pageInfo { hasNextPage } } }")},
		{"long list value", fill(`mutation { sendNotificationToAll(notification: {subject: "s", content: "c", data: [`, "1,", `]}) { jobId } }`)},
		{"many directives", fill("{ version", " @skip(if: false)", " }")},
		{"many variables", fill("query(", " $v%d: Int", ") { version }")},
		{"introspection x100", introspectionCopies(t, 100)},
	}
	for _, c := range cases {
		if len(c.doc) > MaxQueryBytes {
			t.Fatalf("%s: %d bytes, over MaxQueryBytes", c.name, len(c.doc))
		}
	}
	return cases
}

// nopAdmission admits everything.
type nopAdmission struct{}

func (nopAdmission) Admit(ctx context.Context, _ http.ResponseWriter, _ []auth.Rule) (context.Context, error) {
	return ctx, nil
}

// testLimits are the defaults of config.Vars.
var testLimits = Limits{MaxDepth: 10, MaxComplexity: 200, MaxRootMutations: 10, Introspection: true}

func newTestHandler() *Handler {
	return NewHandler(graph.NewSchema(&graph.Resolver{Version: "dev"}), testLimits, nopAdmission{})
}

// post serves one POST /graphql with the query and returns the recorder.
func post(h http.Handler, query string, header ...string) *httptest.ResponseRecorder {
	return postBody(h, queryBody(query), header...)
}

// queryBody is the JSON body {"query": query}.
func queryBody(query string) []byte {
	body, err := json.Marshal(map[string]string{"query": query})
	if err != nil {
		panic(err)
	}
	return body
}

// postBody serves one POST /graphql with a JSON body.
func postBody(h http.Handler, body []byte, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/graphql", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req = req.WithContext(api.WithInfo(req.Context(), &api.RequestInfo{Log: api.Logger(context.Background())}))
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// BenchmarkWorstCaseDocuments is the CPU a document of each worst case
// costs the door, from the body to the refusal.
func BenchmarkWorstCaseDocuments(b *testing.B) {
	h := newTestHandler()
	for _, c := range worstCases(b) {
		body := queryBody(c.doc)
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				postBody(h, body)
			}
		})
	}
}

// The largest documents of each worst case that the bounds let through
// to validation: their cost is what validating (and refusing, or
// answering) a document within the bounds can take.
func largestAccepted(t testing.TB) []worstCase {
	repeat := func(unit string, n int) string { return strings.Repeat(unit, n) }
	numbered := func(unit string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, unit, i)
		}
		return b.String()
	}
	user := " me { id email emailVerified createdAt referralCode subscription { plan status expiresAt } }"
	keys := []string{"version", "__typename", "a: version", "b: __typename"}
	var cycling strings.Builder
	for i := range MaxSpreads {
		fmt.Fprintf(&cycling, "fragment F%d on Query { %s } ", i, keys[i%len(keys)])
	}
	return []worstCase{
		{"identical fields", "{" + repeat(" version", MaxSameKey) + repeat(" __typename", MaxSameKey) + repeat(" a: version", MaxSameKey) + repeat(" b: __typename", MaxSameKey) + " }"},
		{"identical subtrees", "{" + repeat(user, MaxSameKey) + " }"},
		{"spreads of one fragment", "fragment F on Query { version __typename } {" + repeat(" ...F", MaxSameKey) + " }"},
		{"spreads of distinct fragments", cycling.String() + "{" + numbered(" ...F%d", MaxSpreads) + " }"},
		{"spreads of fragments with distinct fields", numbered("fragment F%[1]d on Query { a%[1]d: version } ", MaxSpreads) + "{" + numbered(" ...F%d", MaxSpreads) + " }"},
		{"spreads of a cyclic fragment", "fragment F on Query { ...F } {" + repeat(" ...F", MaxSpreads-1) + " }"},
		{"directives", "{ version" + repeat(" @skip(if: false)", MaxDirectives-1) + " }"},
		{"argument list", "{ devices(" + repeat(" first: 1", MaxArguments) + ") { pageInfo { hasNextPage } } }"},
		{"distinct arguments", "{ devices(" + numbered(" a%d: 1", MaxArguments) + ") { pageInfo { hasNextPage } } }"},
		{"list value", `mutation { sendNotificationToAll(notification: {subject: "s", content: "c", data: [` + repeat("1,", MaxTokens-40) + `]}) { jobId } }`},
		{"variables", "query(" + numbered(" $v%d: Int", MaxVariables) + ") { version }"},
		{"introspection, all options", introspectionQuery(t, "all_options")},
		{"introspection at the depth allowance", ofTypeChain(IntrospectionMaxDepth - 3)},
	}
}

// BenchmarkLargestAcceptedDocuments is the CPU a document just within the
// bounds costs the door: validated, then refused or answered.
func BenchmarkLargestAcceptedDocuments(b *testing.B) {
	h := newTestHandler()
	for _, c := range largestAccepted(b) {
		body := queryBody(c.doc)
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				postBody(h, body)
			}
		})
	}
}

// Every worst case is refused with QUERY_TOO_COMPLEX by the bounds, before
// validation (the bounds alone refuse it).
func TestWorstCaseDocumentsAreRefused(t *testing.T) {
	h := newTestHandler()
	for _, c := range worstCases(t) {
		t.Run(c.name, func(t *testing.T) {
			if _, ae := h.bounds.parseBounded(c.doc); ae == nil || ae.Code != apperr.QueryTooComplex {
				t.Fatalf("the bounds let it through (%v)", ae)
			}
			rec := post(h, c.doc)
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"code":"QUERY_TOO_COMPLEX"`) {
				t.Fatalf("%d %.300s, want 400 QUERY_TOO_COMPLEX", rec.Code, rec.Body)
			}
		})
	}
}

// The largest accepted documents are within the bounds, so their
// benchmark measures validation, not a refusal.
func TestLargestAcceptedDocumentsPassTheBounds(t *testing.T) {
	b := boundsOf(testLimits)
	for _, c := range largestAccepted(t) {
		doc, ae := b.parseBounded(c.doc)
		if ae != nil || doc == nil {
			t.Errorf("%s: refused by the bounds (%v) or not parsed", c.name, ae)
		}
	}
}
