package server

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/graph"
	"github.com/herald-vpn/herald/internal/rest"
)

var (
	backticked    = regexp.MustCompile("`([^`]+)`")
	graphqlField  = regexp.MustCompile(`^[a-z][A-Za-z]*`)
	methodAndPath = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/api/[^?\s]*)`)
)

// Every row of docs/clients.md's tables that pairs GraphQL operations with
// REST routes (| `op(args)` | `METHOD /path` … | who |) holds: each
// operation is a root field admitted under the rule of each route it names,
// the same tier and scope.
func TestDocumentedDoorsAdmitAlike(t *testing.T) {
	manual, err := os.ReadFile("../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := graph.NewSchema(&graph.Resolver{}).Rules
	routes := map[string]route{}
	for _, rt := range restRoutes(&rest.Handlers{}) {
		routes[rt.method+" "+rt.path] = rt
	}
	pairs := 0
	for line := range strings.Lines(string(manual)) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		var where []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			if mp := methodAndPath.FindStringSubmatch(m[1]); mp != nil {
				where = append(where, mp[1]+" "+mp[2])
			}
		}
		if len(where) == 0 {
			continue
		}
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			name := graphqlField.FindString(m[1])
			rule, ok := rules["Query."+name]
			if !ok {
				rule, ok = rules["Mutation."+name]
			}
			if !ok {
				t.Errorf("docs/clients.md: %s is not a root field of the schema", m[1])
				continue
			}
			for _, w := range where {
				rt, ok := routes[w]
				if !ok {
					t.Errorf("docs/clients.md: %s is not a route", w)
					continue
				}
				if rule != rt.rule {
					t.Errorf("%s is admitted under %+v, %s under %+v", name, rule, w, rt.rule)
				}
				pairs++
			}
		}
	}
	// The admin API's table and the console's: a parse that finds fewer
	// has lost rows.
	if pairs < 29 {
		t.Fatalf("docs/clients.md: %d operations paired with routes, want the tables' 29 or more", pairs)
	}
}
