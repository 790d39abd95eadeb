package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/limits"
)

// admission implements api.Admission: the one place a request is
// authenticated and charged. REST routes and GraphQL root fields both come
// here with their auth.Rules.
type admission struct {
	gate  *limits.Gate
	authn *auth.Authenticator
}

// Admit decides in the order that keeps a refused request cheap: the
// address first (bans, blocks and the tiers counted per address), before
// any credential is looked at; then, for rules that need a caller, the
// credential; then the caller's own tiers; and only an admitted request
// records its key's use. A request refused by its address reads no key
// and no session and writes nothing.
func (a admission) Admit(ctx context.Context, w http.ResponseWriter, rules []auth.Rule) (context.Context, error) {
	info := api.Info(ctx)
	v := a.gate.Address(ctx, info.ClientIP, auth.Units(rules, auth.Principal{}))
	res := auth.ResultOf(ctx)
	if v.Allowed && needsCaller(rules) {
		p, err := a.authn.Authenticate(ctx, info.Credential)
		res = auth.Result{Principal: p, Err: err}
		if err == nil {
			v = a.gate.Caller(ctx, info.ClientIP, auth.Units(rules, p), v)
			if v.Allowed {
				a.authn.RecordUse(ctx, p)
			}
		}
	}
	if v.Shown() {
		setRateLimitHeaders(w.Header(), v.Limit, v.Remaining, v.Reset)
	}
	return auth.WithResult(ctx, res), v.Err()
}

func needsCaller(rules []auth.Rule) bool {
	for _, r := range rules {
		if r.NeedsCaller() {
			return true
		}
	}
	return false
}

// setRateLimitHeaders writes the X-RateLimit-* headers. The keys are
// written in Go's canonical form, as Header.Set would send them, so no key
// is rebuilt per request.
func setRateLimitHeaders(h http.Header, limit, remaining int, reset time.Time) {
	h["X-Ratelimit-Limit"] = []string{strconv.Itoa(limit)}
	h["X-Ratelimit-Remaining"] = []string{strconv.Itoa(remaining)}
	h["X-Ratelimit-Reset"] = []string{strconv.FormatInt(reset.Unix(), 10)}
}

// admitted runs a REST route under its rule: admission, then the
// permission check, then the handler with the caller in its context.
func admitted(adm api.Admission, rule auth.Rule, next http.Handler) http.Handler {
	rules := []auth.Rule{rule}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, err := adm.Admit(r.Context(), w, rules)
		if err == nil {
			err = rule.Permit(auth.ResultOf(ctx))
		}
		if err != nil {
			api.WriteError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// credentialFrom parses the Authorization header, "Bearer <token>" (the
// scheme in any case; any other non-blank header is a credential that
// fails), and the X-API-Key header.
func credentialFrom(authorization, apiKey string) auth.Credential {
	c := auth.Credential{APIKey: strings.TrimSpace(apiKey)}
	authorization = strings.TrimSpace(authorization)
	if authorization == "" {
		return c
	}
	c.Present = true
	scheme, token, ok := strings.Cut(authorization, " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		c.Bearer = strings.TrimSpace(token)
	}
	return c
}
