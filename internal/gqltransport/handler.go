// Package gqltransport serves the GraphQL schema of internal/graph: over
// HTTP (POST, and GET for queries, in the media type the request accepts)
// and over WebSocket (graphql-transport-ws, for subscriptions). It is
// Herald's own transport over gqlgen's executor, so that every document
// is bounded before validation, every operation is admitted by the doors'
// one admission before it runs, and each error's HTTP status comes from
// the catalogue.
package gqltransport

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/99designs/gqlgen/graphql/executor"
	"github.com/99designs/gqlgen/graphql/handler/extension"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/graph"
	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"go.opentelemetry.io/otel/trace"
)

// Limits bound what one document may ask for.
type Limits struct {
	MaxDepth         int // selection depth
	MaxComplexity    int // gqlgen's field-count complexity
	MaxRootMutations int // root fields of one mutation document
	// Introspection answers __schema and __type; off, they are refused
	// with GRAPHQL_VALIDATION_FAILED (__typename is always answered).
	Introspection bool
}

// Handler serves /graphql: POST, and GET for queries, answering in the
// media type the request accepts (see media.go). It is our own transport
// over gqlgen's executor so that each error's HTTP status comes from the
// catalogue.
type Handler struct {
	exec   *executor.Executor
	schema *ast.Schema
	// rules maps each root field ("Mutation.signup") to the rule it is
	// admitted under, read once from the schema's @limit and @auth
	// directives.
	rules map[string]auth.Rule
	// pageSizes and inputErrors are the schema's (graph.Schema).
	pageSizes   map[string]graph.PageSize
	inputErrors map[string]apperr.Code
	limits      Limits
	bounds      bounds
	adm         api.Admission
}

// NewHandler returns the GraphQL endpoint over the schema.
func NewHandler(s graph.Schema, limits Limits, adm api.Admission) *Handler {
	exec := executor.New(s.Executable)
	if limits.Introspection {
		exec.Use(extension.Introspection{})
	}
	exec.Use(extension.FixedComplexityLimit(limits.MaxComplexity))
	if s.AroundOperations != nil {
		exec.AroundOperations(s.AroundOperations)
	}
	exec.SetParserTokenLimit(MaxTokens)
	exec.SetErrorPresenter(presentError)
	exec.SetRecoverFunc(func(ctx context.Context, p any) error {
		api.Logger(ctx).ErrorContext(ctx, "panic in resolver", "panic", fmt.Sprint(p))
		return apperr.New(apperr.Internal)
	})
	return &Handler{exec: exec, schema: s.Executable.Schema(), rules: s.Rules, pageSizes: s.PageSizes, inputErrors: s.InputErrors, limits: limits, bounds: boundsOf(limits), adm: adm}
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
		if !api.ClientGone(ctx, err) {
			api.LogUnexpected(ctx, err, ae, "path", gqlErr.Path.String())
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
	// Until a document validates, its root fields are whatever the client
	// wrote: the metrics see "other".
	api.Info(r.Context()).MetricOperation = OperationOther
	x, acceptable := h.newExchange(w, r)
	if !acceptable {
		x.refuseWith(apperr.Newf(apperr.NotAcceptable, "The answer can be %s or %s; the request accepts neither.", typeGraphQL, typeJSON))
		return
	}
	var req Request
	var err error
	switch r.Method {
	case http.MethodPost:
		var body []byte
		if body, err = api.ReadBody(w, r); err == nil {
			req, err = DecodeRequest(body)
		}
	case http.MethodGet:
		req, err = RequestFromQuery(r.URL.RawQuery)
	default:
		w.Header().Set("Allow", "GET, POST")
		err = apperr.Newf(apperr.MethodNotAllowed, "%s is not allowed here; use POST, or GET for a query.", r.Method)
	}
	if err != nil {
		x.refuseWith(err)
		return
	}
	x.execute(req)
}

// Refuse answers r with err before its document is read (the server's
// bound on requests in flight refused it), in the media type r accepts,
// as every refusal of this door is written.
func (h *Handler) Refuse(w http.ResponseWriter, r *http.Request, err error) {
	x, _ := h.newExchange(w, r)
	x.refuseWith(err)
}

// newExchange starts the answer to r, in the media type r accepts
// (negotiate; JSON when it accepts neither, and acceptable is false). The
// answer depends on Accept: caches must key on it.
func (h *Handler) newExchange(w http.ResponseWriter, r *http.Request) (x *exchange, acceptable bool) {
	x = &exchange{h: h, w: w, r: r, start: graphql.Now(), ctx: graphql.StartOperationTrace(r.Context()), span: trace.SpanFromContext(context.Background())}
	w.Header().Add("Vary", "Accept")
	x.m, acceptable = negotiate(r.Header)
	return x, acceptable
}

// exchange is one request to the GraphQL door and what its answer is
// written as.
type exchange struct {
	h     *Handler
	w     http.ResponseWriter
	r     *http.Request
	m     media
	start time.Time
	ctx   context.Context
	span  trace.Span // the operation's, once it is known (trace.go)
}

// refuse answers errs with status (from the catalogue). A request refused
// before its document is understood still costs one global unit, so its
// answer carries the rate-limit headers too.
func (x *exchange) refuse(status int, errs gqlerror.List) {
	if _, err := x.h.adm.Admit(x.ctx, x.w, nil); err != nil {
		ae := api.Classify(err)
		errs = gqlerror.List{codeError(ae)}
		status = ae.Status()
	}
	noteFailure(x.span, errs)
	x.m.writeErrors(x.w, status, errs)
}

func (x *exchange) refuseWith(err error) {
	ae := api.Classify(err)
	x.refuse(ae.Status(), gqlerror.List{codeError(ae)})
}

// execute answers req in four steps, each of which writes its own
// refusal: parse the document within the bounds, bound what it may do
// before it is charged, admit it (rate limits and caller, every root field
// at once), and dispatch it to the executor.
func (x *exchange) execute(req Request) {
	// The operation's span, once parse has started it, ends with the
	// answer; until then it is a no-op span.
	defer func() { x.span.End() }()
	doc, op, ok := x.parse(req)
	if !ok {
		return
	}
	opCtx, fields, ok := x.bound(req, doc, op)
	if !ok {
		return
	}
	if !x.admit(opCtx, fields) {
		return
	}
	x.dispatch(opCtx)
}

// parse reads the document alone first, within the bounds (bounds.go): a
// document over them is refused before validation can spend time on it,
// a document that parses names its root fields for every error, and the
// spec's own input errors are found by the schema before validation
// speaks. The operation picked (nil when the document does not parse or
// names no such operation) gets its span.
func (x *exchange) parse(req Request) (doc *ast.QueryDocument, op *ast.OperationDefinition, ok bool) {
	doc, ae := x.h.bounds.parseBounded(req.Query)
	if ae != nil {
		x.refuseWith(ae)
		return nil, nil, false
	}
	if doc != nil {
		op = doc.Operations.ForName(req.OperationName)
	}
	if op != nil {
		x.ctx, x.span = startOperationSpan(x.ctx, op)
	}
	return doc, op, true
}

// bound is everything a document must pass before it is charged: the
// checks of the parsed operation, validation, and the checks of the
// validated one. It returns the validated operation and its root fields.
func (x *exchange) bound(req Request, doc *ast.QueryDocument, op *ast.OperationDefinition) (*graphql.OperationContext, []*ast.Field, bool) {
	if op != nil && !x.screen(doc, op, req.Variables) {
		return nil, nil, false
	}
	params := &graphql.RawParams{
		Query:         req.Query,
		Variables:     req.Variables,
		Extensions:    req.Extensions,
		OperationName: req.OperationName,
		Headers:       x.r.Header,
		ReadTime:      graphql.TraceTiming{Start: x.start, End: graphql.Now()},
	}
	opCtx, errs := x.h.exec.CreateOperationContext(x.ctx, params)
	if errs != nil {
		errs = presentList(op, doc, errs)
		x.refuse(statusOf(errs[0]), errs)
		return nil, nil, false
	}
	fields := rootFieldsOf(opCtx.Operation.SelectionSet, opCtx.Doc.Fragments, nil)
	noteRootFields(x.span, fields)
	if !x.runnable(opCtx, fields) {
		return nil, nil, false
	}
	return opCtx, fields, true
}

// screen checks the parsed operation before validation: introspection
// when it is off, GET for anything but a query, and the arguments whose
// input types have their own error code (inputs.go).
func (x *exchange) screen(doc *ast.QueryDocument, op *ast.OperationDefinition, vars map[string]any) bool {
	h := x.h
	if !h.limits.Introspection {
		for _, f := range rootFieldsOf(op.SelectionSet, doc.Fragments, nil) {
			if isIntrospection(f.Name) {
				e := codeError(apperr.Newf(apperr.GraphQLInvalid, "Introspection is switched off on this server: %s is not answered.", f.Name))
				e.Path = ast.Path{ast.PathName(f.Alias)}
				x.refuse(statusOf(e), gqlerror.List{e})
				return false
			}
		}
	}
	// GET is safe: it runs queries, never mutations.
	if x.r.Method == http.MethodGet && op.Operation != ast.Query {
		x.w.Header().Set("Allow", http.MethodPost)
		x.refuseWith(apperr.Newf(apperr.MethodNotAllowed, "A %s cannot be sent with GET; use POST.", op.Operation))
		return false
	}
	if ae := checkInputs(h.schema, h.inputErrors, op, doc.Fragments, vars); ae != nil {
		e := atFirst(codeError(ae), rootFieldsOf(op.SelectionSet, doc.Fragments, nil))
		x.refuse(ae.Status(), gqlerror.List{e})
		return false
	}
	return true
}

// runnable checks the validated operation: its arguments and cost
// (checkOperation), that it is not a subscription (served over
// WebSocket), and that a mutation has at most MaxRootMutations root
// fields.
func (x *exchange) runnable(opCtx *graphql.OperationContext, fields []*ast.Field) bool {
	h := x.h
	if ae := h.checkOperation(opCtx); ae != nil {
		e := atFirst(codeError(ae), fields)
		x.refuse(statusOf(e), gqlerror.List{e})
		return false
	}
	if opCtx.Operation.Operation == ast.Subscription {
		e := atFirst(codeError(apperr.Newf(apperr.GraphQLInvalid, "Subscriptions are served over WebSocket on this path, with the graphql-transport-ws protocol.")), fields)
		x.refuse(statusOf(e), gqlerror.List{e})
		return false
	}
	if opCtx.Operation.Operation == ast.Mutation && len(fields) > h.limits.MaxRootMutations {
		x.refuseWith(apperr.Newf(apperr.QueryTooComplex, "The document has %d mutation fields; at most %d are allowed.", len(fields), h.limits.MaxRootMutations).With("limit", h.limits.MaxRootMutations))
		return false
	}
	return true
}

// admit names the operation for the log and the metrics, and charges
// every root field before any runs, so that a document that does not fit
// is refused whole, before any side effect.
func (x *exchange) admit(opCtx *graphql.OperationContext, fields []*ast.Field) bool {
	api.Info(x.ctx).Operation = OperationName(opCtx.Operation)
	api.Info(x.ctx).MetricOperation = operationLabel(fields)
	ctx, err := x.h.adm.Admit(x.ctx, x.w, x.h.rulesOf(opCtx.Operation.Operation, fields))
	if api.ClientGone(ctx, err) {
		api.WriteClientGone(x.w, x.r)
		return false
	}
	if err != nil {
		ae := api.Classify(err)
		e := atFirst(codeError(ae), fields)
		noteFailure(x.span, gqlerror.List{e})
		x.m.writeErrors(x.w, ae.Status(), gqlerror.List{e})
		return false
	}
	x.ctx = ctx
	return true
}

// dispatch runs the admitted operation and writes its answer: 200 with
// its data, or, when it answered errors and no data, the status of the
// first error.
func (x *exchange) dispatch(opCtx *graphql.OperationContext) {
	handle, ctx := x.h.exec.DispatchOperation(x.ctx, opCtx)
	resp := handle(ctx)
	if resp == nil {
		return
	}
	// The client went away (not the request's deadline: that answers
	// with its errors, SERVICE_UNAVAILABLE).
	if errors.Is(x.r.Context().Err(), context.Canceled) {
		api.WriteClientGone(x.w, x.r)
		return
	}
	status := http.StatusOK
	if len(resp.Errors) > 0 && (len(resp.Data) == 0 || string(resp.Data) == "null") {
		status = statusOf(resp.Errors[0])
		resp.Data = nil
		noteFailure(x.span, resp.Errors)
	}
	x.m.writeResponse(x.w, status, resp)
}

// atFirst places e at the first root field's response key, as every
// error of an operation is placed (none: e as it is).
func atFirst(e *gqlerror.Error, fields []*ast.Field) *gqlerror.Error {
	if len(fields) > 0 {
		e.Path = ast.Path{ast.PathName(fields[0].Alias)}
	}
	return e
}

// checkOperation is what a validated operation must pass before it runs:
// every argument coerces as execution will coerce it, and what it can
// answer is within MaxCost (bounds.go).
func (h *Handler) checkOperation(opCtx *graphql.OperationContext) *apperr.Error {
	if ae := checkArguments(h.schema, opCtx.Operation, opCtx.Variables); ae != nil {
		return ae
	}
	return checkCost(h.pageSizes, opCtx.Operation, opCtx.Variables)
}

// rulesOf is the rule of each root field of an operation.
func (h *Handler) rulesOf(op ast.Operation, fields []*ast.Field) []auth.Rule {
	root := h.schema.Query.Name
	if op == ast.Mutation {
		root = h.schema.Mutation.Name
	}
	out := make([]auth.Rule, len(fields))
	for i, f := range fields {
		out[i] = h.rules[root+"."+f.Name]
	}
	return out
}

// The metrics labels of operations besides a root field's name.
const (
	OperationMultiple = "multiple" // a valid document of several root fields
	OperationOther    = "other"    // a document that did not validate
)

// operationLabel is a validated operation's metrics label: the name of its
// one root field (the schema's, so the set is bounded), or "multiple".
func operationLabel(fields []*ast.Field) string {
	name := ""
	for _, f := range fields {
		if name != "" && f.Name != name {
			return OperationMultiple
		}
		name = f.Name
	}
	if name == "" {
		return OperationOther
	}
	return name
}

// OperationName names an operation by its root fields, for the log line:
// "signup", or "me+version".
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

// presentList gives gqlgen's pre-execution errors our codes: parse errors
// GRAPHQL_PARSE_FAILED (400), an over-complex document QUERY_TOO_COMPLEX
// (400), other validation errors GRAPHQL_VALIDATION_FAILED (422).
func presentList(op *ast.OperationDefinition, doc *ast.QueryDocument, errs gqlerror.List) gqlerror.List {
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
			// Once the document parsed, an error names the operation in
			// path, as every application error does; a variable's path
			// moves into the message.
			if op != nil {
				if fields := rootFieldsOf(op.SelectionSet, doc.Fragments, nil); len(fields) > 0 {
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

// statusOf is the catalogue status of an error's code.
func statusOf(e *gqlerror.Error) int {
	code := codeOf(e)
	if code == "" {
		return http.StatusInternalServerError
	}
	return apperr.Lookup(code).Status
}

// codeOf is an error's extensions.code.
func codeOf(e *gqlerror.Error) apperr.Code {
	code, _ := e.Extensions["code"].(apperr.Code)
	if s, ok := e.Extensions["code"].(string); ok {
		code = apperr.Code(s)
	}
	return code
}

func codeError(ae *apperr.Error) *gqlerror.Error {
	ext := map[string]any{"code": ae.Code}
	for k, v := range ae.Details {
		ext[k] = v
	}
	return &gqlerror.Error{Message: ae.Message, Extensions: ext}
}
