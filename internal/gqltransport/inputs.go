package gqltransport

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/99designs/gqlgen/graphql"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/vektah/gqlparser/v2/ast"
)

// checkInputs looks, before validation, at every argument of op's root
// fields whose type holds one of the input types of codes (the schema's
// InputErrors), and refuses
// one that does not conform to the schema (a required field missing or
// null, a field of the wrong type, an unknown field) with that type's code.
// It reads the schema, not validation messages, so it does not depend on
// gqlparser's wording. Other problems are left to validation.
func checkInputs(schema *ast.Schema, codes map[string]apperr.Code, op *ast.OperationDefinition, fragments ast.FragmentDefinitionList, vars map[string]any) *apperr.Error {
	root := schema.Query
	if op.Operation == ast.Mutation {
		root = schema.Mutation
	}
	if root == nil {
		return nil
	}
	for _, f := range rootFieldsOf(op.SelectionSet, fragments, nil) {
		def := root.Fields.ForName(f.Name)
		if def == nil {
			continue
		}
		for _, ad := range def.Arguments {
			typ, code := guardedType(schema, codes, ad.Type)
			if code == "" {
				continue
			}
			arg := f.Arguments.ForName(ad.Name)
			var problem string
			if arg == nil {
				if ad.Type.NonNull {
					problem = fmt.Sprintf("the %s argument is required", ad.Name)
				}
			} else {
				problem = conform(schema, ad.Type, arg.Value, op, vars, ad.Name)
			}
			if problem != "" {
				return apperr.Newf(code, "The %s is invalid: %s.", typ, problem).With("field", ad.Name)
			}
		}
	}
	return nil
}

// guardedType returns the input type of codes that t is (or is a list
// of), and its code.
func guardedType(schema *ast.Schema, codes map[string]apperr.Code, t *ast.Type) (string, apperr.Code) {
	name := t.Name()
	code, ok := codes[name]
	if !ok || schema.Types[name] == nil || schema.Types[name].Kind != ast.InputObject {
		return "", ""
	}
	return name, code
}

// conform says what is wrong with v as a value of t ("" when nothing),
// variables included; path names the place for the message.
func conform(schema *ast.Schema, t *ast.Type, v *ast.Value, op *ast.OperationDefinition, vars map[string]any, path string) string {
	if v == nil || v.Kind == ast.NullValue {
		if t.NonNull {
			return path + " is required"
		}
		return ""
	}
	if v.Kind == ast.Variable {
		val, ok := vars[v.Raw]
		if !ok {
			if d := op.VariableDefinitions.ForName(v.Raw); d != nil && d.DefaultValue != nil {
				return conform(schema, t, d.DefaultValue, op, vars, path)
			}
			val = nil
		}
		return conformJSON(schema, t, val, path)
	}
	if t.Elem != nil {
		if v.Kind != ast.ListValue {
			return conform(schema, t.Elem, v, op, vars, path) // a single value is a list of one
		}
		for i, c := range v.Children {
			if p := conform(schema, t.Elem, c.Value, op, vars, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return ""
	}
	switch def.Kind {
	case ast.InputObject:
		if v.Kind != ast.ObjectValue {
			return path + " must be an object"
		}
		for _, c := range v.Children {
			if def.Fields.ForName(c.Name) == nil {
				return path + "." + c.Name + " is not a field of " + def.Name
			}
		}
		for _, fd := range def.Fields {
			var fv *ast.Value
			if c := v.Children.ForName(fd.Name); c != nil {
				fv = c
			}
			if p := conform(schema, fd.Type, fv, op, vars, path+"."+fd.Name); p != "" {
				return p
			}
		}
	case ast.Scalar:
		if want, ok := scalarLiteral[def.Name]; ok && !want[v.Kind] {
			return path + " must be " + scalars[def.Name].want
		}
		if val, err := v.Value(nil); err != nil || coerceScalar(def.Name, val) != nil {
			return path + " must be " + scalars[def.Name].want
		}
	}
	return ""
}

// scalarLiteral lists the literal kinds each built-in scalar accepts; other
// scalars (JSON, Time) are left to their own parsing.
var scalarLiteral = map[string]map[ast.ValueKind]bool{
	"String":  {ast.StringValue: true, ast.BlockValue: true},
	"ID":      {ast.StringValue: true, ast.BlockValue: true, ast.IntValue: true},
	"Int":     {ast.IntValue: true},
	"Float":   {ast.IntValue: true, ast.FloatValue: true},
	"Boolean": {ast.BooleanValue: true},
}

// conformJSON is conform for a variable's value, decoded from JSON
// (numbers already int64 or float64, see normalizeNumbers).
func conformJSON(schema *ast.Schema, t *ast.Type, v any, path string) string {
	if v == nil {
		if t.NonNull {
			return path + " is required"
		}
		return ""
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return conformJSON(schema, t.Elem, v, path)
		}
		for i, e := range list {
			if p := conformJSON(schema, t.Elem, e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return ""
	}
	switch def.Kind {
	case ast.InputObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return path + " must be an object"
		}
		for k := range obj {
			if def.Fields.ForName(k) == nil {
				return path + "." + k + " is not a field of " + def.Name
			}
		}
		for _, fd := range def.Fields {
			if p := conformJSON(schema, fd.Type, obj[fd.Name], path+"."+fd.Name); p != "" {
				return p
			}
		}
	case ast.Scalar:
		var ok bool
		switch def.Name {
		case "String":
			_, ok = v.(string)
		case "ID":
			switch v.(type) {
			case string, int64:
				ok = true
			}
		case "Int":
			_, ok = v.(int64)
		case "Float":
			switch v.(type) {
			case int64, float64:
				ok = true
			}
		case "Boolean":
			_, ok = v.(bool)
		default:
			ok = true
		}
		if !ok || coerceScalar(def.Name, v) != nil {
			return path + " must be " + scalars[def.Name].want
		}
	}
	return ""
}

// scalars are the input coercions of the schema's scalars: the same
// unmarshal functions gqlgen's generated code calls (see gqlgen.yml's
// models), and Int's 32-bit range, which the GraphQL spec gives Int and Go's
// int does not. checkArguments runs them before execution, so a value they
// refuse is a request error with the validation code; at execution it
// would be a field error, and an unexpected one (500). want says what the
// scalar takes.
var scalars = map[string]struct {
	coerce func(any) error
	want   string
}{
	"Int":     {coerceInt, "a whole number from -2147483648 to 2147483647"},
	"Float":   {unmarshalled(graphql.UnmarshalFloat), "a number"},
	"String":  {unmarshalled(graphql.UnmarshalString), "a string"},
	"Boolean": {unmarshalled(graphql.UnmarshalBoolean), "true or false"},
	"ID":      {unmarshalled(graphql.UnmarshalID), "a string or a whole number"},
	"Time":    {unmarshalled(graphql.UnmarshalTime), "an RFC 3339 instant, such as 2026-11-29T10:00:00Z"},
	"JSON":    {unmarshalled(graphql.UnmarshalMap), "a JSON object"},
}

func unmarshalled[T any](unmarshal func(any) (T, error)) func(any) error {
	return func(v any) error {
		_, err := unmarshal(v)
		return err
	}
}

var errIntRange = errors.New("outside Int's 32-bit range")

func coerceInt(v any) error {
	n, err := graphql.UnmarshalInt(v)
	if err != nil {
		return err
	}
	if n < math.MinInt32 || n > math.MaxInt32 {
		return errIntRange
	}
	return nil
}

// coerceScalar coerces a non-null value of the scalar name; a scalar
// without an entry in scalars is refused (TestEveryScalarCoerces keeps the
// table whole).
func coerceScalar(name string, v any) error {
	s, ok := scalars[name]
	if !ok {
		return fmt.Errorf("no coercion for the scalar %s", name)
	}
	return s.coerce(v)
}

// checkArguments coerces every argument of a validated operation, as
// execution will, with the variables as validation coerced them, and
// refuses the first that does not coerce with GRAPHQL_VALIDATION_FAILED:
// validation alone lets through an Int literal or variable beyond 32 bits,
// an Int variable beyond what a float64 holds exactly (a JSON 1e30), and
// any value of a custom scalar (Time, JSON).
func checkArguments(schema *ast.Schema, op *ast.OperationDefinition, vars map[string]any) *apperr.Error {
	return checkSelections(schema, op.SelectionSet, vars)
}

func checkSelections(schema *ast.Schema, set ast.SelectionSet, vars map[string]any) *apperr.Error {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			for _, a := range s.Arguments {
				if a.Value == nil || a.Value.ExpectedType == nil {
					continue
				}
				path := s.Name + "." + a.Name
				var problem string
				if v, err := a.Value.Value(vars); err != nil {
					problem = fmt.Sprintf("%s: %s cannot represent %s", path, a.Value.ExpectedType.Name(), a.Value.Raw)
				} else {
					problem = coerceValue(schema, a.Value.ExpectedType, v, path)
				}
				if problem != "" && a.Value.Kind == ast.Variable {
					problem += " (the variable $" + a.Value.Raw + ")"
				}
				if problem != "" {
					return apperr.Newf(apperr.GraphQLInvalid, "%s.", problem)
				}
			}
			if ae := checkSelections(schema, s.SelectionSet, vars); ae != nil {
				return ae
			}
		case *ast.InlineFragment:
			if ae := checkSelections(schema, s.SelectionSet, vars); ae != nil {
				return ae
			}
		case *ast.FragmentSpread:
			if s.Definition != nil {
				if ae := checkSelections(schema, s.Definition.SelectionSet, vars); ae != nil {
					return ae
				}
			}
		}
	}
	return nil
}

// coerceValue says what is wrong with v as a value of t ("" when nothing);
// nullability, input object fields and list shapes are validation's, and
// are only walked here.
func coerceValue(schema *ast.Schema, t *ast.Type, v any, path string) string {
	if v == nil {
		return ""
	}
	if t.Elem != nil {
		list, ok := v.([]any)
		if !ok {
			return coerceValue(schema, t.Elem, v, path) // a single value is a list of one
		}
		for i, e := range list {
			if p := coerceValue(schema, t.Elem, e, fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
		return ""
	}
	def := schema.Types[t.NamedType]
	if def == nil {
		return ""
	}
	switch def.Kind {
	case ast.InputObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		for _, fd := range def.Fields {
			if p := coerceValue(schema, fd.Type, obj[fd.Name], path+"."+fd.Name); p != "" {
				return p
			}
		}
	case ast.Scalar:
		if coerceScalar(def.Name, v) != nil {
			return fmt.Sprintf("%s: %s cannot represent %s; it takes %s", path, def.Name, shown(v), scalars[def.Name].want)
		}
	}
	return ""
}

// shown is a value as JSON, for a message.
func shown(v any) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) > 100 {
		return fmt.Sprintf("a %T", v)
	}
	return string(b)
}

// rootFieldsOf lists an operation's root fields, through inline fragments
// and fragment spreads (resolved by name, as before validation there are
// no definitions attached).
func rootFieldsOf(set ast.SelectionSet, fragments ast.FragmentDefinitionList, out []*ast.Field) []*ast.Field {
	return collectRootFields(set, fragments, out, map[string]bool{})
}

func collectRootFields(set ast.SelectionSet, fragments ast.FragmentDefinitionList, out []*ast.Field, seen map[string]bool) []*ast.Field {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			out = collectRootFields(s.SelectionSet, fragments, out, seen)
		case *ast.FragmentSpread:
			if seen[s.Name] {
				continue // a cycle: validation refuses it
			}
			seen[s.Name] = true
			if d := fragments.ForName(s.Name); d != nil {
				out = collectRootFields(d.SelectionSet, fragments, out, seen)
			}
		}
	}
	return out
}
