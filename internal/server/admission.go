package server

import (
	"context"
	"net/http"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/sessions"
)

// admission implements api.Admission over the limits gate. Per-user tiers
// need the caller's identity first; a request whose token does not verify
// is charged to its IP tiers only and refused later by the auth check.
type admission struct {
	gate  *limits.Gate
	guard *sessions.Service
}

func (a admission) Admit(ctx context.Context, w http.ResponseWriter, c api.Cost) (context.Context, error) {
	u := limits.Units{Global: c.Global, Auth: c.Auth}
	if c.Protected > 0 || c.Admin > 0 {
		if authed, err := a.guard.Require(ctx, ""); err == nil {
			id, _ := sessions.FromContext(authed)
			ctx = authed
			u.UserID, u.Protected, u.Admin = id.AccountID, c.Protected, c.Admin
		}
	}
	return ctx, a.gate.Admit(ctx, w, api.Info(ctx).ClientIP, u)
}

// admit runs a REST route under the rate limits: every route is charged
// one global unit plus one unit of its own class.
func admit(adm api.Admission, class string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := api.Cost{Global: 1}
		switch class {
		case limits.TierAuth:
			c.Auth = 1
		case limits.TierProtected:
			c.Protected = 1
		case limits.TierAdmin:
			c.Admin = 1
		}
		ctx, err := adm.Admit(r.Context(), w, c)
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}
