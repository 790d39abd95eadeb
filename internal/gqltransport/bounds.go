package gqltransport

import (
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/lexer"
	"github.com/vektah/gqlparser/v2/parser"
)

// A document's cost is bounded before validation runs: validation's
// overlapping-fields rule compares pairwise the fields that answer one
// response key and the fragments spread into one selection, fragments that
// spread one another multiply the work of anything that expands them, and
// parsing is linear in the tokens. Every bound is far above what a real
// client sends (graphql-js's introspection query with every option is 184
// tokens, 73 fields, 8 fragment spreads, 5 arguments, no alias, no
// directive, 240 fields and spreads once its fragments are expanded, and
// 15 levels deep) and low enough that no document within the size limit
// costs more than a few tens of milliseconds to refuse or to validate (see
// BenchmarkWorstCaseDocuments and BenchmarkLargestAcceptedDocuments).
const (
	// MaxTokens bounds the tokens of a document (names, punctuation,
	// values; comments are not counted).
	MaxTokens = 5000
	// MaxFields bounds the fields written in a document, and the fields
	// and fragment spreads its operations ask for once every fragment is
	// expanded where it is spread (fragments spread nowhere count once).
	// An operator who raises HERALD_GRAPHQL_MAX_COMPLEXITY above it raises
	// this bound with it.
	MaxFields = 500
	// MaxSameKey bounds the fields that answer one response key at one
	// place (the same name or alias, in one selection set once inline
	// fragments and fragment spreads are merged into it): validation
	// compares them pairwise.
	MaxSameKey = 50
	// MaxAliases bounds the aliased fields written in a document (more
	// than the default complexity limit lets run).
	MaxAliases = 300
	// MaxSpreads bounds the fragment spreads written in a document.
	MaxSpreads = 100
	// MaxDirectives bounds the directives written in a document.
	MaxDirectives = 200
	// MaxArguments bounds the arguments written in a document (of fields
	// and directives).
	MaxArguments = 200
	// MaxVariables bounds the variables a document defines.
	MaxVariables = 100
	// IntrospectionMaxDepth is the selection depth allowed under
	// __schema and __type: graphql-js's introspection query is 15 levels
	// deep (__schema, types, fields, args, type, nine ofType and a name),
	// and a few more levels leave room for tools that ask for longer type
	// chains. Everything else gets HERALD_GRAPHQL_MAX_DEPTH.
	IntrospectionMaxDepth = 20
	// nestingSlack is how far braces, brackets and parentheses may nest
	// beyond the deepest selection allowed (input values nest too).
	nestingSlack = 32
)

// bounds are the limits checked before validation.
type bounds struct {
	tokens, nesting                                       int
	fields, aliases, spreads, directives, arguments, vars int
	sameKey                                               int
	depth, introspectionDepth                             int
}

func boundsOf(l Limits) bounds {
	return bounds{
		tokens:             MaxTokens,
		nesting:            max(l.MaxDepth, IntrospectionMaxDepth) + nestingSlack,
		fields:             max(MaxFields, l.MaxComplexity),
		aliases:            MaxAliases,
		spreads:            MaxSpreads,
		directives:         MaxDirectives,
		arguments:          MaxArguments,
		vars:               MaxVariables,
		sameKey:            MaxSameKey,
		depth:              l.MaxDepth,
		introspectionDepth: IntrospectionMaxDepth,
	}
}

// parseBounded parses query once its tokens and nesting are within the
// bounds, then checks what the parsed document holds. It returns the
// document (nil when it does not parse: the executor's parse reports that)
// or the refusal, QUERY_TOO_COMPLEX, of a document over a bound.
func (b bounds) parseBounded(query string) (*ast.QueryDocument, *apperr.Error) {
	if ae := b.lex(query); ae != nil {
		return nil, ae
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil, nil
	}
	if ae := b.check(doc); ae != nil {
		return nil, ae
	}
	return doc, nil
}

// lex counts tokens and nesting in one pass of the lexer, before the
// parser builds anything. A lexical error stops the count: the parser
// reports it.
func (b bounds) lex(query string) *apperr.Error {
	lx := lexer.New(&ast.Source{Input: query})
	tokens, nesting := 0, 0
	for {
		tok, err := lx.ReadToken()
		if err != nil || tok.Kind == lexer.EOF {
			return nil
		}
		switch tok.Kind {
		case lexer.Comment:
			continue
		case lexer.BraceL, lexer.BracketL, lexer.ParenL:
			if nesting++; nesting > b.nesting {
				return tooComplex(b.nesting, "The document nests braces, brackets or parentheses more than %d levels deep.", b.nesting)
			}
		case lexer.BraceR, lexer.BracketR, lexer.ParenR:
			nesting--
		}
		if tokens++; tokens > b.tokens {
			return tooComplex(b.tokens, "The document has more than %d tokens.", b.tokens)
		}
	}
}

func tooComplex(limit int, format string, args ...any) *apperr.Error {
	return apperr.Newf(apperr.QueryTooComplex, format, args...).With("limit", limit)
}

// check counts what a parsed document holds: what is written (fields,
// aliases, fragment spreads, directives, arguments, variables), then walks
// each operation with its fragments expanded where they are spread.
func (b bounds) check(doc *ast.QueryDocument) *apperr.Error {
	var n written
	for _, op := range doc.Operations {
		n.vars += len(op.VariableDefinitions)
		n.directiveList(op.Directives)
		for _, v := range op.VariableDefinitions {
			n.directiveList(v.Directives)
		}
		n.selections(op.SelectionSet)
	}
	for _, f := range doc.Fragments {
		n.directiveList(f.Directives)
		n.selections(f.SelectionSet)
	}
	for _, c := range []struct {
		count, limit int
		what         string
	}{
		{n.fields, b.fields, "fields"},
		{n.aliases, b.aliases, "aliases"},
		{n.spreads, b.spreads, "fragment spreads"},
		{n.directives, b.directives, "directives"},
		{n.arguments, b.arguments, "arguments"},
		{n.vars, b.vars, "variables"},
	} {
		if c.count > c.limit {
			return tooComplex(c.limit, "The document has %d %s; at most %d are allowed.", c.count, c.what, c.limit)
		}
	}
	w := walker{b: b, fragments: map[string]*ast.FragmentDefinition{}, active: map[string]bool{}, reached: map[string]bool{}}
	for _, f := range doc.Fragments {
		w.fragments[f.Name] = f
	}
	for _, op := range doc.Operations {
		if ae := w.walk(op.SelectionSet, 0, scope{}, &key{}); ae != nil {
			return ae
		}
	}
	// Validation looks at every fragment, spread or not.
	for _, f := range doc.Fragments {
		if !w.reached[f.Name] {
			w.active[f.Name] = true
			ae := w.walk(f.SelectionSet, 1, scope{max(b.depth, b.introspectionDepth), "fragment " + f.Name}, &key{})
			delete(w.active, f.Name)
			if ae != nil {
				return ae
			}
		}
	}
	return nil
}

// isIntrospection reports whether a root field is one of the schema's
// introspection fields (__typename is not: it is part of every type).
func isIntrospection(name string) bool { return name == "__schema" || name == "__type" }

// written counts what a document's text holds.
type written struct{ fields, aliases, spreads, directives, arguments, vars int }

func (n *written) directiveList(list ast.DirectiveList) {
	n.directives += len(list)
	for _, d := range list {
		n.arguments += len(d.Arguments)
	}
}

func (n *written) selections(set ast.SelectionSet) {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			n.fields++
			if s.Alias != "" && s.Alias != s.Name {
				n.aliases++
			}
			n.arguments += len(s.Arguments)
			n.directiveList(s.Directives)
			n.selections(s.SelectionSet)
		case *ast.InlineFragment:
			n.directiveList(s.Directives)
			n.selections(s.SelectionSet)
		case *ast.FragmentSpread:
			n.spreads++
			n.directiveList(s.Directives)
		}
	}
}

// walker expands an operation as validation and execution see it: every
// fragment spread replaced by the fragment's selections (a spread that
// closes a cycle is skipped: validation refuses the cycle). It counts the
// selections it visits, so a chain of fragments that each spread the next
// twice stops being walked once it has cost the bound, and it merges
// fields by response key (name or alias) as execution does, counting the
// fields that answer each key: validation compares those pairwise.
type walker struct {
	b         bounds
	fragments map[string]*ast.FragmentDefinition
	active    map[string]bool // fragments being expanded
	reached   map[string]bool // fragments spread somewhere
	visited   int             // fields and spreads, across the document
}

// key is one response key of the merged selection: how many fields
// answer it, and the keys under it.
type key struct {
	fields int
	under  map[string]*key
}

// scope is the depth a root field allows, and what to call it.
type scope struct {
	limit int
	what  string
}

// walk visits set, whose fields are at depth level+1 under a root field
// whose scope is sc (level 0 is an operation's root selection set, where
// each root field brings its own scope).
func (w *walker) walk(set ast.SelectionSet, level int, sc scope, at *key) *apperr.Error {
	for _, sel := range set {
		if w.visited++; w.visited > w.b.fields {
			return tooComplex(w.b.fields, "The document asks for more than %d fields and fragment spreads once its fragments are expanded.", w.b.fields)
		}
		switch s := sel.(type) {
		case *ast.Field:
			fieldScope := sc
			if level == 0 {
				fieldScope = scope{w.b.depth, "query"}
				if isIntrospection(s.Name) {
					fieldScope = scope{w.b.introspectionDepth, "introspection query"}
				}
			}
			if level+1 > fieldScope.limit {
				return tooComplex(fieldScope.limit, "The %s is more than %d levels deep.", fieldScope.what, fieldScope.limit)
			}
			if at.under == nil {
				at.under = map[string]*key{}
			}
			k := at.under[s.Alias]
			if k == nil {
				k = &key{}
				at.under[s.Alias] = k
			}
			if k.fields++; k.fields > w.b.sameKey {
				return tooComplex(w.b.sameKey, "%d fields answer %q at one place; at most %d are allowed.", k.fields, s.Alias, w.b.sameKey)
			}
			if ae := w.walk(s.SelectionSet, level+1, fieldScope, k); ae != nil {
				return ae
			}
		case *ast.InlineFragment:
			if ae := w.walk(s.SelectionSet, level, sc, at); ae != nil {
				return ae
			}
		case *ast.FragmentSpread:
			def := w.fragments[s.Name]
			if def == nil || w.active[s.Name] {
				continue // unknown, or a cycle: validation refuses both
			}
			w.reached[s.Name] = true
			w.active[s.Name] = true
			ae := w.walk(def.SelectionSet, level, sc, at)
			delete(w.active, s.Name)
			if ae != nil {
				return ae
			}
		}
	}
	return nil
}

// Once an operation validates, its cost is what it can answer: every field
// counts once for each record it may be asked of, so a list's selections
// count once per element. A page (a field with a first argument) has as
// many elements as its first asks for, its default page size when first
// is absent, and at most its maximum; any other list of objects (a
// UserRecord's sessions) counts as AssumedListSize. An operation that
// costs more than MaxCost is refused with QUERY_TOO_COMPLEX before it
// runs. Introspection fields count one each: their own bounds hold them.
const (
	// MaxCost bounds the values an operation can answer. A full page of
	// 500 accounts with every field, their sessions and chats (37,002)
	// fits; four full pages of the accounts' sessions (102,008) do not.
	MaxCost = 50_000
	// AssumedListSize is the elements counted for a list without a page
	// size.
	AssumedListSize = 10
)

// checkCost refuses a validated operation that costs more than MaxCost.
func checkCost(pages map[string]graph.PageSize, op *ast.OperationDefinition, vars map[string]any) *apperr.Error {
	if (coster{pages: pages, vars: vars, limit: MaxCost}).selections(op.SelectionSet, 0) > MaxCost {
		return tooComplex(MaxCost, "The operation can answer more than %d values, counting each field once per element of the lists it is in "+
			"(a page by its first argument, or its default size): ask for smaller pages or fewer fields.", MaxCost)
	}
	return nil
}

// coster counts an operation's cost up to limit+1: past the bound the
// exact figure does not matter, and nested pages would overflow.
type coster struct {
	pages map[string]graph.PageSize // the schema's paged fields
	vars  map[string]any
	limit int
}

// selections is the cost of set, whose lists have page elements when
// their parent is a page (0 when not).
func (c coster) selections(set ast.SelectionSet, page int) int {
	total := 0
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			total += c.field(s, page)
		case *ast.InlineFragment:
			total += c.selections(s.SelectionSet, page)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				total += c.selections(s.Definition.SelectionSet, page)
			}
		}
		if total > c.limit {
			return c.limit + 1
		}
	}
	return total
}

// field is 1, and its selections once per element of the list it is.
func (c coster) field(f *ast.Field, page int) int {
	if f.Definition == nil || strings.HasPrefix(f.Name, "__") {
		return 1
	}
	own := c.pageSizeOf(f)
	elements := 1
	if f.Definition.Type.Elem != nil {
		switch {
		case own > 0:
			elements = own
		case page > 0:
			elements = page // the nodes of a connection
		default:
			elements = AssumedListSize
		}
	}
	under := c.selections(f.SelectionSet, own)
	if under > 0 && elements > c.limit/under {
		return c.limit + 1
	}
	return 1 + elements*under
}

// pageSizeOf is the elements a paged field asks for (0 for a field that
// is not paged): first, the default when it is absent or 0, at most the
// largest page (a larger first is refused by the service).
func (c coster) pageSizeOf(f *ast.Field) int {
	if f.ObjectDefinition == nil {
		return 0
	}
	size, ok := c.pages[f.ObjectDefinition.Name+"."+f.Name]
	if !ok {
		return 0
	}
	n := 0
	if a := f.Arguments.ForName("first"); a != nil {
		if v, err := a.Value.Value(c.vars); err == nil {
			n, _ = graphql.UnmarshalInt(v)
		}
	}
	switch {
	case n <= 0:
		return size.Default
	case n > size.Max:
		return size.Max
	}
	return n
}
