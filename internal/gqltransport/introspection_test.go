package gqltransport

import (
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/graph"
	"github.com/vektah/gqlparser/v2"
	"github.com/vektah/gqlparser/v2/ast"
)

// introspected is the part of an introspection answer the comparison reads.
type introspected struct {
	Schema struct {
		QueryType    struct{ Name string } `json:"queryType"`
		MutationType struct{ Name string } `json:"mutationType"`
		Types        []struct {
			Kind          string
			Name          string
			Description   *string
			Fields        []introspectedField
			InputFields   []introspectedValue     `json:"inputFields"`
			EnumValues    []struct{ Name string } `json:"enumValues"`
			Interfaces    []typeRef
			PossibleTypes []typeRef `json:"possibleTypes"`
		}
		Directives []struct {
			Name         string
			Locations    []string
			Args         []introspectedValue
			IsRepeatable bool `json:"isRepeatable"`
		}
	} `json:"__schema"`
}

type introspectedField struct {
	Name        string
	Description *string
	Args        []introspectedValue
	Type        typeRef
}

type introspectedValue struct {
	Name         string
	Description  *string
	Type         typeRef
	DefaultValue *string `json:"defaultValue"`
}

type typeRef struct {
	Kind   string
	Name   *string
	OfType *typeRef `json:"ofType"`
}

// String writes the reference as SDL does: [String!]!.
func (r typeRef) String() string {
	switch r.Kind {
	case "NON_NULL":
		return r.OfType.String() + "!"
	case "LIST":
		return "[" + r.OfType.String() + "]"
	}
	if r.Name == nil {
		return "?"
	}
	return *r.Name
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// introspect runs the all-options introspection query of graphql-js.
func introspect(t *testing.T, h http.Handler) introspected {
	t.Helper()
	rec := post(h, introspectionQuery(t, "all_options"))
	var out struct {
		Data   introspected
		Errors []any
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusOK || len(out.Errors) > 0 {
		t.Fatalf("introspection: %d %v %.500s", rec.Code, err, rec.Body)
	}
	return out.Data
}

// The schema served by introspection is schema.graphqls: every type,
// field, argument, input field, enum value and directive of the file, of
// the same types, with the file's descriptions, and nothing else; a root
// field's description (and that of any field with @auth) has a paragraph
// more saying what it needs, from its @auth directive.
func TestIntrospectionServesTheSchemaFile(t *testing.T) {
	source, err := os.ReadFile("../graph/schema.graphqls")
	if err != nil {
		t.Fatal(err)
	}
	file := gqlparser.MustLoadSchema(&ast.Source{Name: "schema.graphqls", Input: string(source)})
	got := introspect(t, newTestHandler()).Schema
	if got.QueryType.Name != "Query" || got.MutationType.Name != "Mutation" {
		t.Errorf("roots %q %q", got.QueryType.Name, got.MutationType.Name)
	}
	need := func(def *ast.Definition, f *ast.FieldDefinition) string {
		d := f.Directives.ForName("auth")
		switch {
		case d != nil && d.Arguments.ForName("scope") != nil:
			return "Requires the " + d.Arguments.ForName("scope").Value.Raw + " scope."
		case d != nil:
			return "Requires an access token."
		case def == file.Query || def == file.Mutation:
			return "Requires no access token."
		}
		return ""
	}
	values := func(what string, want ast.ArgumentDefinitionList, got []introspectedValue) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d arguments or input fields, the file has %d", what, len(got), len(want))
			return
		}
		for i, w := range want {
			g := got[i]
			def := ""
			if w.DefaultValue != nil {
				def = w.DefaultValue.String()
			}
			if g.Name != w.Name || g.Type.String() != w.Type.String() || str(g.Description) != w.Description || str(g.DefaultValue) != def {
				t.Errorf("%s.%s: served %s: %s = %q (%q), the file %s: %s = %q (%q)", what, w.Name, g.Name, g.Type, str(g.DefaultValue), str(g.Description), w.Name, w.Type, def, w.Description)
			}
		}
	}
	served := map[string]bool{}
	for _, typ := range got.Types {
		served[typ.Name] = true
		def := file.Types[typ.Name]
		if def == nil {
			t.Errorf("served type %s is not in the file", typ.Name)
			continue
		}
		if def.BuiltIn {
			continue
		}
		if typ.Kind != string(def.Kind) || str(typ.Description) != def.Description {
			t.Errorf("type %s: served %s %q, the file %s %q", typ.Name, typ.Kind, str(typ.Description), def.Kind, def.Description)
		}
		var fields ast.FieldList
		for _, f := range def.Fields {
			if !strings.HasPrefix(f.Name, "__") {
				fields = append(fields, f)
			}
		}
		if def.Kind == ast.InputObject {
			in := ast.ArgumentDefinitionList{}
			for _, f := range fields {
				in = append(in, &ast.ArgumentDefinition{Name: f.Name, Description: f.Description, Type: f.Type, DefaultValue: f.DefaultValue})
			}
			values("input "+typ.Name, in, typ.InputFields)
			continue
		}
		if len(typ.Fields) != len(fields) {
			t.Errorf("type %s: %d fields served, %d in the file", typ.Name, len(typ.Fields), len(fields))
			continue
		}
		for i, w := range fields {
			g := typ.Fields[i]
			desc := w.Description
			if n := need(def, w); n != "" {
				desc = strings.TrimPrefix(desc+"\n\n"+n, "\n\n")
			}
			if g.Name != w.Name || g.Type.String() != w.Type.String() || str(g.Description) != desc {
				t.Errorf("%s.%s: served %s: %s %q, want %s: %s %q", typ.Name, w.Name, g.Name, g.Type, str(g.Description), w.Name, w.Type, desc)
			}
			values(typ.Name+"."+w.Name, w.Arguments, g.Args)
		}
	}
	for name, def := range file.Types {
		if !served[name] && !def.BuiltIn {
			t.Errorf("type %s of the file is not served", name)
		}
	}
	directives := map[string]bool{}
	for _, d := range got.Directives {
		directives[d.Name] = true
		def := file.Directives[d.Name]
		if def == nil {
			t.Errorf("served directive @%s is not in the file", d.Name)
			continue
		}
		values("@"+d.Name, def.Arguments, d.Args)
		if d.IsRepeatable != def.IsRepeatable || len(d.Locations) != len(def.Locations) {
			t.Errorf("@%s: served repeatable %v at %v, the file %v at %v", d.Name, d.IsRepeatable, d.Locations, def.IsRepeatable, def.Locations)
		}
	}
	for _, name := range []string{"auth", "limit", "include", "skip", "deprecated"} {
		if !directives[name] {
			t.Errorf("directive @%s is not served", name)
		}
	}
	// Spelled out once, so the rule above is not only checked against
	// itself.
	for _, c := range []struct{ typ, field, desc string }{
		{"Query", "me", "The caller's account.\n\nRequires an access token."},
		{"Query", "version", "The server's version.\n\nRequires no access token."},
		{"Mutation", "sendNotificationToAll", "Queue a push notification to every active device with a valid token. With\nsendAt (at most 30 days ahead) the job is scheduled and starts then, on any\nreplica; cancelNotificationJob cancels it before. category names the\nnotification category (default \"service\"): a device whose owner turned it\noff on the device's channel when the job reaches it is skipped and counted\nin the job's skipped.optedOut. A capped category (product:3/day) counts\nthe broadcast once against each user it reaches; the devices of a user\nwho already had the day's cap are skipped and counted in the job's\nskipped.capped. inbox: true also keeps it in the inbox of\nevery account the audience reaches (an active device in it) that allows\nthe category on the inbox channel: one item each, written once by the\njob when it starts. Unless urgent is true or the category is critical\n(security, billing), a device whose owner is inside their quiet hours\nwhen the job reaches it is held (counted in the job's held) and sent by\nthe same job at the end of the owner's window. sendAtLocal ({date:\n\"2026-12-24\", time: \"09:00\"}, not with sendAt) sends it at that time in\neach recipient's time zone (UTC without one): one job, scheduled at the\nfirst zone's time, holding each device until its owner's. channels are\npush (the default: every device in the audience) and email: one email to\neach account the audience reaches that has a verified real address,\nhowever many devices it has (the notification template in the account's\nlocale, with the unsubscribe link), counted in the job's email.queued;\nthe accounts skipped are counted in its email counters. An email is due\nwhen its owner's devices would be (sendAtLocal, then quiet hours unless\nurgent or critical) and queued to go then; a cancelled broadcast's\nemails not yet sent are not sent. Another channel is INVALID_INPUT.\n\nRequires the notifications:send scope."},
	} {
		found := false
		for _, typ := range got.Types {
			for _, f := range typ.Fields {
				if typ.Name == c.typ && f.Name == c.field {
					found = true
					if str(f.Description) != c.desc {
						t.Errorf("%s.%s: %q, want %q", c.typ, c.field, str(f.Description), c.desc)
					}
				}
			}
		}
		if !found {
			t.Errorf("%s.%s not served", c.typ, c.field)
		}
	}
}

// With introspection off, __schema and __type are refused before
// validation, wherever the document puts them; __typename is answered.
func TestIntrospectionOff(t *testing.T) {
	limits := testLimits
	limits.Introspection = false
	h := NewHandler(graph.NewSchema(&graph.Resolver{Version: "dev"}), limits, nopAdmission{})
	for _, doc := range []string{
		introspectionQuery(t, "default"),
		`{ __type(name: "Query") { name } }`,
		`{ version s: __schema { queryType { name } } }`,
		`{ ...F } fragment F on Query { __schema { queryType { name } } }`,
		`{ ... on Query { __type(name: "User") { name } } }`,
	} {
		for _, accept := range []string{"application/json", "application/graphql-response+json"} {
			rec := post(h, doc, "Accept", accept)
			body := decode(t, rec)
			want := http.StatusUnprocessableEntity
			if accept != "application/json" {
				want = http.StatusBadRequest
			}
			if rec.Code != want || errorCode(body) != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(rec.Body.String(), "Introspection is switched off") {
				t.Errorf("%.40s as %s: %d %.300s, want %d GRAPHQL_VALIDATION_FAILED", doc, accept, rec.Code, rec.Body, want)
			}
		}
	}
	rec := post(h, `{ __typename version }`)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"__typename":"Query"`) {
		t.Errorf("__typename: %d %s", rec.Code, rec.Body)
	}
	// On, the same documents are answered.
	for _, doc := range []string{introspectionQuery(t, "default"), introspectionQuery(t, "all_options"), `{ ...F } fragment F on Query { __schema { queryType { name } } }`} {
		if rec := post(newTestHandler(), doc); rec.Code != http.StatusOK || strings.Contains(rec.Body.String(), `"errors"`) {
			t.Errorf("%.40s with introspection on: %d %.300s", doc, rec.Code, rec.Body)
		}
	}
}
