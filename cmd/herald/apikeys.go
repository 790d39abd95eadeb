package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/herald-vpn/herald/internal/apikeys"
	"github.com/herald-vpn/herald/internal/auth"
)

// apiKeysUsage is the usage of `herald apikeys`.
const apiKeysUsage = "Usage: herald apikeys create --name N --scopes S[,S…] [--rate-limit N] [--expires T]\n       herald apikeys list\n       herald apikeys revoke ID"

// cmdAPIKeys is `herald apikeys create|list|revoke`.
func cmdAPIKeys(ctx context.Context, env *environment, args []string) error {
	sub, done, err := subcommand(env, apiKeysUsage, args, "create", "list", "revoke")
	if done || err != nil {
		return err
	}
	switch sub {
	case "create":
		return apiKeysCreate(ctx, env, args[1:])
	case "list":
		return apiKeysList(ctx, env, args[1:])
	default:
		return apiKeysRevoke(ctx, env, args[1:])
	}
}

// apiKeysCreate is `herald apikeys create`: its flags are checked before the
// database is opened.
func apiKeysCreate(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "apikeys create", "Create an API key for another service and print it. The key is shown this once; only a hash of it is kept.\nScopes: "+strings.Join(auth.KeyScopes, ", ")+".", configHint)
	name := fs.String("name", "", "what the key is for, e.g. billing (required)")
	scopes := fs.String("scopes", "", "comma-separated scopes (required)")
	rateLimit := fs.Int("rate-limit", 0, "requests per minute (default HERALD_RATE_LIMIT_APIKEY)")
	expires := fs.String("expires", "", "an RFC 3339 time or a duration from now, e.g. 8760h (default never)")
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	if *name == "" || *scopes == "" {
		fmt.Fprintln(env.stderr, "--name and --scopes are required")
		return errUsage
	}
	n, err := newKey(*name, *scopes, *rateLimit, *expires)
	if err != nil {
		return err
	}
	keys, done, err := openKeys(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	k, key, err := keys.Create(ctx, auth.Principal{}, n)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(env.stderr, "created API key %s (%s) with scopes %s; store it now, it is not shown again\n", k.ID, k.Name, strings.Join(k.Scopes, " "))
	fmt.Fprintln(env.stdout, key)
	return nil
}

// newKey is the key the flags of `apikeys create` ask for: scopes
// comma-separated, a rate limit of 0 for the default, expires "" for never.
func newKey(name, scopes string, rateLimit int, expires string) (apikeys.NewKey, error) {
	n := apikeys.NewKey{Name: name}
	for s := range strings.SplitSeq(scopes, ",") {
		if s = strings.TrimSpace(s); s != "" {
			n.Scopes = append(n.Scopes, s)
		}
	}
	if rateLimit != 0 {
		n.RateLimit = &rateLimit
	}
	if expires != "" {
		at, err := parseExpiry(expires, time.Now().UTC())
		if err != nil {
			return apikeys.NewKey{}, err
		}
		n.ExpiresAt = &at
	}
	return n, nil
}

// apiKeysList is `herald apikeys list`.
func apiKeysList(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "apikeys list", "List the API keys, revoked ones too, newest first.", configHint)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	keys, done, err := openKeys(ctx, env)
	if err != nil {
		return err
	}
	defer done()
	list, err := keys.List(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tRATE LIMIT\tCREATED\tEXPIRES\tLAST USED\tSTATUS")
	for _, k := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), keys.RateLimitOf(k),
			k.CreatedAt.Format(time.RFC3339), orDash(k.ExpiresAt), orDash(k.LastUsedAt), keyStatus(k, time.Now()))
	}
	return tw.Flush()
}

// keyStatus is the STATUS column of `apikeys list`.
func keyStatus(k apikeys.Key, now time.Time) string {
	if apikeys.Usable(k, now) == nil {
		return "active"
	}
	if k.RevokedAt != nil {
		return "revoked " + k.RevokedAt.Format(time.RFC3339)
	}
	return "expired"
}

// apiKeysRevoke is `herald apikeys revoke ID`.
func apiKeysRevoke(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "apikeys revoke ID", "Revoke an API key: it is refused at once, on every replica.", configHint)
	id, rest, done, err := leadingArg(env, fs, apiKeysUsage, args, "the ID of the key to revoke is missing")
	if done || err != nil {
		return err
	}
	if helped, err := parseFlags(env, fs, rest); helped || err != nil {
		return err
	}
	keys, closeKeys, err := openKeys(ctx, env)
	if err != nil {
		return err
	}
	defer closeKeys()
	k, err := keys.Revoke(ctx, id)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(env.stdout, "API key %s (%s) revoked at %s\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
	return nil
}

// openKeys opens the application (the store, migrated, and its job
// queue) for the API key service; the caller runs done. A key made or
// revoked here is an entry of the operators' log (actor cli) with its
// security.api_key_* webhook, which the server delivers.
func openKeys(ctx context.Context, env *environment) (keys *apikeys.Service, done func(), err error) {
	a, err := openAppFromEnv(ctx, env)
	if err != nil {
		return nil, nil, err
	}
	return a.APIKeys, func() { a.Close(context.Background()) }, nil
}

func orDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
