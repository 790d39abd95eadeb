package graph

import (
	"context"
	"maps"

	"github.com/99designs/gqlgen/graphql"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/inbox"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/policy"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/vektah/gqlparser/v2/ast"
)

// Schema is the schema the GraphQL door serves over a resolver, and what
// the transport (internal/gqltransport) reads of it to admit and bound
// each operation before it runs.
type Schema struct {
	// Executable is gqlgen's schema over the resolver: schema.graphqls
	// with each operation's needs in its description (describe.go), and
	// @auth enforced before a field's resolver runs.
	Executable graphql.ExecutableSchema
	// Rules maps each root field ("Mutation.signup") to the rule it is
	// admitted under, read once from the schema's @limit and @auth
	// directives; @auth checks the same table.
	Rules map[string]auth.Rule
	// PageSizes are the paged fields ("Type.field") with the page sizes
	// their services apply; every field with a first argument has its row
	// (TestEveryPagedFieldHasItsSize).
	PageSizes map[string]PageSize
	// InputErrors names input types whose missing or malformed fields are
	// the contract's own error (sendNotificationToAll: INVALID_INPUT,
	// 400) rather than a GraphQL validation error.
	InputErrors map[string]apperr.Code
	// AroundOperations runs around each operation: it gives the operation
	// its pages of accounts for their per-record fields (pages.go).
	AroundOperations graphql.OperationMiddleware
}

// NewSchema returns the schema served over r.
func NewSchema(r *Resolver) Schema {
	rules := map[string]auth.Rule{}
	es := NewExecutableSchema(Config{Schema: describedSchema(), Resolvers: r, Directives: DirectiveRoot{Auth: authDirective(rules)}})
	maps.Copy(rules, rootFieldRules(es.Schema()))
	return Schema{
		Executable:  es,
		Rules:       rules,
		PageSizes:   pageSizes,
		InputErrors: map[string]apperr.Code{"NotificationInput": apperr.InvalidInput},
		AroundOperations: func(ctx context.Context, next graphql.OperationHandler) graphql.ResponseHandler {
			return next(withRecordPages(ctx))
		},
	}
}

// PageSize is the default and the largest page of a field with a first
// argument, as its service applies them.
type PageSize struct{ Default, Max int }

// pageSizes are the schema's paged fields ("Type.field").
var pageSizes = map[string]PageSize{
	"Query.users":                {accounts.DefaultUsersPage, accounts.MaxUsersPage},
	"Query.devices":              {devices.DefaultPageSize, devices.MaxPageSize},
	"Query.notificationJobs":     {notifications.DefaultPageSize, notifications.MaxPageSize},
	"Query.messengerSubscribers": {messenger.DefaultPageSize, messenger.MaxPageSize},
	"Query.webhookDeliveries":    {webhooks.DefaultPageSize, webhooks.MaxPageSize},
	"Query.mySecurityLog":        {securitylog.DefaultPage, securitylog.MaxPage},
	"Query.myInbox":              {inbox.DefaultPageSize, inbox.MaxPageSize},
	"Query.userInbox":            {inbox.DefaultPageSize, inbox.MaxPageSize},
	"Query.userSecurityLog":      {securitylog.DefaultPage, securitylog.MaxPage},
	"Query.operatorSecurityLog":  {securitylog.DefaultPage, securitylog.MaxPage},
	"Query.bans":                 {limits.DefaultBansPage, limits.MaxBansPage},
}

// rootFieldRules reads the rule of every root field from its definition:
// @limit(tier: "auth") is the auth tier; @auth is protected, or admin with
// that scope.
func rootFieldRules(schema *ast.Schema) map[string]auth.Rule {
	rules := map[string]auth.Rule{}
	for _, root := range []*ast.Definition{schema.Query, schema.Mutation, schema.Subscription} {
		if root == nil {
			continue
		}
		for _, def := range root.Fields {
			var r auth.Rule
			if d := def.Directives.ForName("limit"); d != nil {
				if a := d.Arguments.ForName("tier"); a != nil && a.Value.Raw == policy.TierAuth {
					r = auth.ForAuthTier
				}
			}
			if d := def.Directives.ForName("auth"); d != nil {
				r = auth.Protected
				if a := d.Arguments.ForName("scope"); a != nil && a.Value.Raw != "" {
					r = auth.Scoped(a.Value.Raw)
				}
			}
			rules[root.Name+"."+def.Name] = r
		}
	}
	return rules
}

// authDirective enforces @auth before the field's resolver runs: the rule
// the field was admitted under, read from the same table, checked against
// the request's one authentication.
func authDirective(rules map[string]auth.Rule) func(ctx context.Context, obj any, next graphql.Resolver, scope *string) (any, error) {
	return func(ctx context.Context, _ any, next graphql.Resolver, scope *string) (any, error) {
		fc := graphql.GetFieldContext(ctx)
		rule, ok := rules[fc.Object+"."+fc.Field.Name]
		if !ok {
			rule = auth.Protected
			if scope != nil && *scope != "" {
				rule.Scope = *scope
			}
		}
		if err := rule.Permit(auth.ResultOf(ctx)); err != nil {
			return nil, err
		}
		return next(ctx)
	}
}
