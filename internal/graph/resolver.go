package graph

import (
	"context"

	"github.com/99designs/gqlgen/graphql"
	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/api"
)

// Resolver holds the services the GraphQL door opens onto. It does no work
// of its own: every rule lives in the services.
type Resolver struct {
	Accounts *accounts.Service
	Guard    api.Guard
	Version  string
}

// authDirective enforces @auth(scope:) before the field's resolver runs.
func (r *Resolver) authDirective(ctx context.Context, _ any, next graphql.Resolver, scope *string) (any, error) {
	s := ""
	if scope != nil {
		s = *scope
	}
	ctx, err := r.Guard.Require(ctx, s)
	if err != nil {
		return nil, err
	}
	return next(ctx)
}
