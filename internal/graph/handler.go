package graph

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
)

// Limits bound what one document may ask for.
type Limits struct {
	MaxDepth         int // selection depth
	MaxComplexity    int // gqlgen's field-count complexity
	MaxRootMutations int // root fields of one mutation document
}

// Handler serves POST /graphql. It is our own transport over gqlgen's
// executor so that each error's HTTP status comes from the catalogue.
type Handler struct {
	exec   *executor.Executor
	schema *ast.Schema
	// tiers maps each root field ("Mutation.signup") to the cost it adds,
	// read once from the schema's @limit and @auth directives.
	tiers  map[string]api.Cost
	limits Limits
	adm    api.Admission
}

// NewHandler returns the GraphQL endpoint over the resolver.
func NewHandler(r *Resolver, limits Limits, adm api.Admission) *Handler {
	schema := NewExecutableSchema(Config{Resolvers: r, Directives: DirectiveRoot{Auth: r.authDirective}})
	exec := executor.New(schema)
	exec.Use(extension.Introspection{})
	exec.Use(extension.FixedComplexityLimit(limits.MaxComplexity))
	exec.SetErrorPresenter(presentError)
	exec.SetRecoverFunc(func(ctx context.Context, p any) error {
		api.Logger(ctx).ErrorContext(ctx, "panic in resolver", "panic", fmt.Sprint(p))
		return apperr.New(apperr.Internal)
	})
	return &Handler{exec: exec, schema: schema.Schema(), tiers: rootFieldCosts(schema.Schema()), limits: limits, adm: adm}
}

// presentError renders an error as the spec's GraphQL error: message, path
// and extensions.code with the error's details beside it.
func presentError(ctx context.Context, err error) *gqlerror.Error {
	gqlErr := graphql.DefaultErrorPresenter(ctx, err)
	var ae *apperr.Error
	if !errors.As(err, &ae) {
		// gqlgen's own errors (unknown field, bad variable) keep their
		// message; anything else is internal and is logged, not shown.
		if gqlErr.Extensions != nil && gqlErr.Extensions["code"] != nil {
			return gqlErr
		}
		var inner *gqlerror.Error
		if errors.As(err, &inner) && inner.Err == nil {
			gqlErr.Extensions = map[string]any{"code": apperr.GraphQLInvalid}
			return gqlErr
		}
		ae = api.Classify(err)
		if ae.Code == apperr.Internal {
			api.Logger(ctx).ErrorContext(ctx, "internal error", "err", err, "path", gqlErr.Path.String())
		} else {
			api.Logger(ctx).WarnContext(ctx, "database busy or unreachable", "err", err, "path", gqlErr.Path.String())
		}
	}
	gqlErr.Message = ae.Message
	ext := make(map[string]any, len(ae.Details)+1)
	for k, v := range ae.Details {
		ext[k] = v
	}
	ext["code"] = ae.Code
	gqlErr.Extensions = ext
	return gqlErr
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := graphql.Now()
	ctx := graphql.StartOperationTrace(r.Context())
	// A request refused before its document is understood still costs one
	// global unit, so its answer carries the rate-limit headers too.
	refuse := func(status int, errs gqlerror.List) {
		if _, err := h.adm.Admit(ctx, w, api.Cost{Global: 1}); err != nil {
			h.writeAppError(w, err)
			return
		}
		h.writeErrors(w, status, errs)
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		refuse(http.StatusMethodNotAllowed, gqlerror.List{codeError(apperr.New(apperr.MethodNotAllowed))})
		return
	}
	body, err := api.ReadBody(w, r)
	if err == nil {
		var req Request
		if req, err = DecodeRequest(body); err == nil {
			h.execute(ctx, w, r, req, start, refuse)
			return
		}
	}
	ae := api.Classify(err)
	refuse(ae.Status(), gqlerror.List{codeError(ae)})
}

func (h *Handler) execute(ctx context.Context, w http.ResponseWriter, r *http.Request, req Request, start time.Time, refuse func(int, gqlerror.List)) {
	params := &graphql.RawParams{
		Query:         req.Query,
		Variables:     req.Variables,
		OperationName: req.OperationName,
		Headers:       r.Header,
		ReadTime:      graphql.TraceTiming{Start: start, End: graphql.Now()},
	}
	opCtx, errs := h.exec.CreateOperationContext(ctx, params)
	if errs != nil {
		op := opCtx.Operation
		if op == nil {
			// A document that fails validation has no operation yet;
			// parsing it alone names its root fields for presentList.
			op = parseOperation(req.Query, req.OperationName)
		}
		errs = presentList(h.schema, op, errs)
		refuse(statusOf(errs[0]), errs)
		return
	}
	if depth := selectionDepth(opCtx.Operation.SelectionSet, 0); depth > h.limits.MaxDepth {
		ae := apperr.Newf(apperr.QueryTooComplex, "The query is %d levels deep; at most %d are allowed.", depth, h.limits.MaxDepth).With("limit", h.limits.MaxDepth)
		refuse(ae.Status(), gqlerror.List{codeError(ae)})
		return
	}
	fields := rootFields(opCtx.Operation.SelectionSet, nil)
	if opCtx.Operation.Operation == ast.Mutation && len(fields) > h.limits.MaxRootMutations {
		ae := apperr.Newf(apperr.QueryTooComplex, "The document has %d mutation fields; at most %d are allowed.", len(fields), h.limits.MaxRootMutations).With("limit", h.limits.MaxRootMutations)
		refuse(ae.Status(), gqlerror.List{codeError(ae)})
		return
	}
	api.Info(ctx).Operation = OperationName(opCtx.Operation)
	// Every root field is charged before any runs, so a document that does
	// not fit is refused whole, before any side effect.
	ctx, err := h.adm.Admit(ctx, w, h.cost(opCtx.Operation.Operation, fields))
	if err != nil {
		ae := api.Classify(err)
		e := codeError(ae)
		if len(fields) > 0 {
			e.Path = ast.Path{ast.PathName(fields[0].Alias)}
		}
		h.writeErrors(w, ae.Status(), gqlerror.List{e})
		return
	}
	handle, ctx := h.exec.DispatchOperation(ctx, opCtx)
	resp := handle(ctx)
	if resp == nil {
		return
	}
	status := http.StatusOK
	if len(resp.Errors) > 0 && (len(resp.Data) == 0 || string(resp.Data) == "null") {
		status = statusOf(resp.Errors[0])
		resp.Data = nil
	}
	writeResponse(w, status, resp)
}

// parseOperation parses query without validating it and returns the
// operation named name (the only one when name is empty), nil when there
// is none or the query does not parse.
func parseOperation(query, name string) *ast.OperationDefinition {
	doc, err := parser.ParseQuery(&ast.Source{Input: query})
	if err != nil {
		return nil
	}
	return doc.Operations.ForName(name)
}

// rootFields lists the operation's root fields, through fragments.
func rootFields(set ast.SelectionSet, out []*ast.Field) []*ast.Field {
	for _, sel := range set {
		switch s := sel.(type) {
		case *ast.Field:
			out = append(out, s)
		case *ast.InlineFragment:
			out = rootFields(s.SelectionSet, out)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				out = rootFields(s.Definition.SelectionSet, out)
			}
		}
	}
	return out
}

// rootFieldCosts reads the tier of every root field from its definition:
// @limit(tier: "auth") is auth; @auth is protected, or admin with that scope.
func rootFieldCosts(schema *ast.Schema) map[string]api.Cost {
	costs := map[string]api.Cost{}
	for _, root := range []*ast.Definition{schema.Query, schema.Mutation} {
		if root == nil {
			continue
		}
		for _, def := range root.Fields {
			var c api.Cost
			if d := def.Directives.ForName("limit"); d != nil {
				if a := d.Arguments.ForName("tier"); a != nil && a.Value.Raw == "auth" {
					c.Auth = 1
				}
			}
			if d := def.Directives.ForName("auth"); d != nil {
				if a := d.Arguments.ForName("scope"); a != nil && a.Value.Raw == "admin" {
					c.Admin = 1
				} else {
					c.Protected = 1
				}
			}
			costs[root.Name+"."+def.Name] = c
		}
	}
	return costs
}

// cost charges each root field to its tier, and every field to global;
// __typename and __schema cost global only.
func (h *Handler) cost(op ast.Operation, fields []*ast.Field) api.Cost {
	root := h.schema.Query.Name
	if op == ast.Mutation {
		root = h.schema.Mutation.Name
	}
	c := api.Cost{Global: max(len(fields), 1)}
	for _, f := range fields {
		t := h.tiers[root+"."+f.Name]
		c.Auth += t.Auth
		c.Protected += t.Protected
		c.Admin += t.Admin
	}
	return c
}

// OperationName names an operation by its root fields, for logs and
// metrics: "signup", or "me+version".
func OperationName(op *ast.OperationDefinition) string {
	if op == nil {
		return ""
	}
	seen := map[string]bool{}
	var names []string
	for _, sel := range op.SelectionSet {
		if f, ok := sel.(*ast.Field); ok && !seen[f.Name] {
			seen[f.Name] = true
			names = append(names, f.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

func selectionDepth(set ast.SelectionSet, depth int) int {
	max := depth
	for _, sel := range set {
		var d int
		switch s := sel.(type) {
		case *ast.Field:
			d = selectionDepth(s.SelectionSet, depth+1)
		case *ast.InlineFragment:
			d = selectionDepth(s.SelectionSet, depth)
		case *ast.FragmentSpread:
			if s.Definition != nil {
				d = selectionDepth(s.Definition.SelectionSet, depth)
			}
		}
		if d > max {
			max = d
		}
	}
	return max
}

// inputErrorCodes names input types whose missing or malformed fields are
// the spec's own error (sendNotificationToAll: INVALID_INPUT, 400) rather
// than a GraphQL validation error, whichever layer catches them.
var inputErrorCodes = map[string]apperr.Code{
	"NotificationInput": apperr.InvalidInput,
}

// presentList gives gqlgen's pre-execution errors our codes: parse errors
// GRAPHQL_PARSE_FAILED (400), an over-complex document QUERY_TOO_COMPLEX
// (400), errors about an input type of inputErrorCodes that type's code,
// other validation errors GRAPHQL_VALIDATION_FAILED (422).
func presentList(schema *ast.Schema, op *ast.OperationDefinition, errs gqlerror.List) gqlerror.List {
	out := make(gqlerror.List, 0, len(errs))
	for _, e := range errs {
		c := *e
		code := apperr.GraphQLInvalid
		switch e.Extensions["code"] {
		case errcode.ParseFailed:
			code = apperr.GraphQLParse
		case "COMPLEXITY_LIMIT_EXCEEDED":
			code = apperr.QueryTooComplex
		default:
			if typ := inputTypeOf(schema, op, e); typ != "" {
				if mapped, ok := inputErrorCodes[typ]; ok {
					code = mapped
				}
			}
			// Once the document parsed, an error names the operation in
			// path, as every application error does; a variable's path
			// moves into the message.
			if op != nil {
				if fields := rootFields(op.SelectionSet, nil); len(fields) > 0 {
					if len(e.Path) > 0 {
						c.Message = e.Path.String() + ": " + e.Message
					}
					c.Path = ast.Path{ast.PathName(fields[0].Alias)}
				}
			}
		}
		c.Extensions = map[string]any{"code": code}
		out = append(out, &c)
	}
	return out
}

// inputTypeOf finds the input type a validation error is about: named in
// the message, the input object literal at the error's location, or the
// type of the variable in its path.
func inputTypeOf(schema *ast.Schema, op *ast.OperationDefinition, e *gqlerror.Error) string {
	for typ := range inputErrorCodes {
		if strings.Contains(e.Message, `"`+typ) {
			return typ
		}
	}
	if op != nil && schema != nil && len(e.Locations) > 0 {
		root := schema.Query
		if op.Operation == ast.Mutation {
			root = schema.Mutation
		}
		for _, f := range rootFields(op.SelectionSet, nil) {
			var def *ast.FieldDefinition
			if root != nil {
				def = root.Fields.ForName(f.Name)
			}
			if def == nil {
				continue
			}
			for _, a := range f.Arguments {
				if ad := def.Arguments.ForName(a.Name); ad != nil {
					if typ := literalTypeAt(schema, a.Value, ad.Type, e.Locations[0]); typ != "" {
						return typ
					}
				}
			}
		}
	}
	if op == nil || len(e.Path) < 2 || e.Path[0] != ast.PathName("variable") {
		return ""
	}
	name, _ := e.Path[1].(ast.PathName)
	if def := op.VariableDefinitions.ForName(string(name)); def != nil && def.Type != nil {
		return def.Type.Name()
	}
	return ""
}

// literalTypeAt returns the innermost input object type whose literal in v
// (of type t) holds a field value at loc, "" when there is none.
func literalTypeAt(schema *ast.Schema, v *ast.Value, t *ast.Type, loc gqlerror.Location) string {
	if v == nil || t == nil {
		return ""
	}
	switch v.Kind {
	case ast.ListValue:
		for _, c := range v.Children {
			if typ := literalTypeAt(schema, c.Value, t.Elem, loc); typ != "" {
				return typ
			}
		}
	case ast.ObjectValue:
		def := schema.Types[t.Name()]
		if def == nil || def.Kind != ast.InputObject {
			return ""
		}
		for _, c := range v.Children {
			if fd := def.Fields.ForName(c.Name); fd != nil {
				if typ := literalTypeAt(schema, c.Value, fd.Type, loc); typ != "" {
					return typ
				}
			}
			if p := c.Value.Position; p != nil && p.Line == loc.Line && p.Column == loc.Column {
				return def.Name
			}
		}
	}
	return ""
}

func statusOf(e *gqlerror.Error) int {
	code, _ := e.Extensions["code"].(apperr.Code)
	if s, ok := e.Extensions["code"].(string); ok {
		code = apperr.Code(s)
	}
	if code == "" {
		return http.StatusInternalServerError
	}
	return apperr.Lookup(code).Status
}

func codeError(ae *apperr.Error) *gqlerror.Error {
	ext := map[string]any{"code": ae.Code}
	for k, v := range ae.Details {
		ext[k] = v
	}
	return &gqlerror.Error{Message: ae.Message, Extensions: ext}
}

func (h *Handler) writeAppError(w http.ResponseWriter, err error) {
	ae := api.Classify(err)
	h.writeErrors(w, ae.Status(), gqlerror.List{codeError(ae)})
}

func (h *Handler) writeErrors(w http.ResponseWriter, status int, errs gqlerror.List) {
	writeResponse(w, status, &graphql.Response{Errors: errs})
}

// response is graphql.Response with data always present (null on error),
// as the spec's error envelope shows it.
type response struct {
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Data       json.RawMessage `json:"data"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

func writeResponse(w http.ResponseWriter, status int, resp *graphql.Response) {
	data := json.RawMessage(resp.Data)
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	body, err := json.Marshal(response{Errors: resp.Errors, Data: data, Extensions: resp.Extensions})
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"errors":[{"message":"An unexpected error occurred.","extensions":{"code":"INTERNAL_ERROR"}}],"data":null}`)
	}
	// A 429 or 503 says when to come back in Retry-After, as the REST door
	// does (rate-limit tiers, the resend cooldown, a busy database).
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && len(resp.Errors) > 0 {
		if secs, ok := resp.Errors[0].Extensions["retryAfter"].(int); ok && secs > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
	}
	api.WriteRawJSON(w, status, body)
}
