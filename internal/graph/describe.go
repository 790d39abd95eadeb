package graph

import (
	_ "embed"
	"strings"

	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// schemaSource is schema.graphqls, the source of the schema (gqlgen
// generates the code from the same file).
//
//go:embed schema.graphqls
var schemaSource string

// describedSchema is the schema Herald serves: schema.graphqls, loaded
// afresh, with what each operation needs appended to its description (a
// paragraph of its own), written from the field's @auth directive so the
// text cannot drift from the rule the door enforces. Every root field says
// it; a field of another type says it only when it carries @auth. Nothing
// else changes: types, arguments and the other descriptions are the
// file's.
func describedSchema() *ast.Schema {
	schema := gqlparser.MustLoadSchema(&ast.Source{Name: "schema.graphqls", Input: schemaSource})
	roots := map[*ast.Definition]bool{schema.Query: true, schema.Mutation: true, schema.Subscription: true}
	for _, def := range schema.Types {
		if def.BuiltIn {
			continue
		}
		for _, f := range def.Fields {
			if strings.HasPrefix(f.Name, "__") {
				continue
			}
			if need := requirement(f.Directives); need != "" || roots[def] {
				if need == "" {
					need = requiresNothing
				}
				f.Description = withRequirement(f.Description, need)
			}
		}
	}
	return schema
}

// The sentences describedSchema appends.
const (
	requiresNothing = "Requires no access token."
	requiresToken   = "Requires an access token."
)

// requirement is the sentence of a field's @auth directive ("" without
// one): @auth needs an access token, @auth(scope: "s") a token with scope
// s.
func requirement(directives ast.DirectiveList) string {
	d := directives.ForName("auth")
	if d == nil {
		return ""
	}
	if a := d.Arguments.ForName("scope"); a != nil && a.Value != nil && a.Value.Kind == ast.StringValue && a.Value.Raw != "" {
		return "Requires the " + a.Value.Raw + " scope."
	}
	return requiresToken
}

func withRequirement(description, need string) string {
	if description == "" {
		return need
	}
	return description + "\n\n" + need
}
