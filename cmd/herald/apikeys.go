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

// cmdAPIKeys is `herald apikeys create|list|revoke`.
func cmdAPIKeys(ctx context.Context, env *environment, args []string) error {
	usage := "Usage: herald apikeys create --name N --scopes S[,S…] [--rate-limit N] [--expires T]\n       herald apikeys list\n       herald apikeys revoke ID"
	sub, done, err := subcommand(env, usage, args, "create", "list", "revoke")
	if done || err != nil {
		return err
	}
	fs := newFlags(env, map[string]string{"create": "apikeys create", "list": "apikeys list", "revoke": "apikeys revoke ID"}[sub], map[string]string{
		"create": "Create an API key for another service and print it. The key is shown this once; only a hash of it is kept.\nScopes: " + strings.Join(auth.KeyScopes, ", ") + ".",
		"list":   "List the API keys, revoked ones too, newest first.",
		"revoke": "Revoke an API key: it is refused at once, on every replica.",
	}[sub], configHint)
	var name, scopes, expires *string
	var rateLimit *int
	if sub == "create" {
		name = fs.String("name", "", "what the key is for, e.g. billing (required)")
		scopes = fs.String("scopes", "", "comma-separated scopes (required)")
		rateLimit = fs.Int("rate-limit", 0, "requests per minute (default HERALD_RATE_LIMIT_APIKEY)")
		expires = fs.String("expires", "", "an RFC 3339 time or a duration from now, e.g. 8760h (default never)")
	}
	rest := args[1:]
	var id string
	if sub == "revoke" {
		if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
			if len(rest) > 0 && isHelp(rest[0]) {
				fs.SetOutput(env.stdout)
				fs.Usage()
				return nil
			}
			fmt.Fprintln(env.stderr, "the ID of the key to revoke is missing")
			fmt.Fprintln(env.stderr, usage)
			return errUsage
		}
		id, rest = rest[0], rest[1:]
	}
	if helped, err := parseFlags(env, fs, rest); helped || err != nil {
		return err
	}
	var n apikeys.NewKey
	if sub == "create" {
		n.Name = *name
		if *name == "" || *scopes == "" {
			fmt.Fprintln(env.stderr, "--name and --scopes are required")
			return errUsage
		}
		for s := range strings.SplitSeq(*scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				n.Scopes = append(n.Scopes, s)
			}
		}
		if *rateLimit != 0 {
			n.RateLimit = rateLimit
		}
		if *expires != "" {
			at, err := parseExpiry(*expires, time.Now().UTC())
			if err != nil {
				return err
			}
			n.ExpiresAt = &at
		}
	}
	cfg, db, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	keys, err := apikeys.NewService(ctx, db, apikeys.Config{DefaultRateLimit: cfg.RateLimitAPIKey})
	if err != nil {
		return err
	}
	switch sub {
	case "create":
		k, key, err := keys.Create(ctx, n)
		if err != nil {
			return describe(err)
		}
		fmt.Fprintf(env.stderr, "created API key %s (%s) with scopes %s; store it now, it is not shown again\n", k.ID, k.Name, strings.Join(k.Scopes, " "))
		fmt.Fprintln(env.stdout, key)
	case "list":
		list, err := keys.List(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tRATE LIMIT\tCREATED\tEXPIRES\tLAST USED\tSTATUS")
		for _, k := range list {
			status := "active"
			if err := apikeys.Usable(k, time.Now()); err != nil {
				status = "expired"
				if k.RevokedAt != nil {
					status = "revoked " + k.RevokedAt.Format(time.RFC3339)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), keys.RateLimitOf(k),
				k.CreatedAt.Format(time.RFC3339), orDash(k.ExpiresAt), orDash(k.LastUsedAt), status)
		}
		return tw.Flush()
	case "revoke":
		k, err := keys.Revoke(ctx, id)
		if err != nil {
			return describe(err)
		}
		fmt.Fprintf(env.stdout, "API key %s (%s) revoked at %s\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
	}
	return nil
}

func orDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(time.RFC3339)
}
