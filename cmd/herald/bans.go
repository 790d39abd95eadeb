package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/herald-vpn/herald/internal/limits"
)

func cmdBans(ctx context.Context, env *environment, args []string) error {
	usage := "Usage: herald bans list\n       herald bans add IP --reason R\n       herald bans lift IP"
	sub, done, err := subcommand(env, usage, args, "list", "add", "lift")
	if done || err != nil {
		return err
	}
	fs := newFlags(env, map[string]string{"list": "bans list", "add": "bans add IP", "lift": "bans lift IP"}[sub], map[string]string{
		"list": "List the banned client addresses.",
		"add":  "Ban a client address: an IPv4 address, or an IPv6 address whose /64 is banned. Servers refuse it within a few seconds.",
		"lift": "Lift the ban on a client address (an IPv6 address lifts its /64).",
	}[sub], configHint)
	var reason *string
	if sub == "add" {
		reason = fs.String("reason", "", "why the address is banned (default \""+limits.DefaultBanReason+"\")")
	}
	// The IP comes first, flags after: `bans add 203.0.113.9 --reason spam`.
	rest := args[1:]
	var ip string
	if sub != "list" {
		ip, rest, done, err = leadingArg(env, fs, usage, rest, "the IP address is missing")
		if done || err != nil {
			return err
		}
	}
	if helped, err := parseFlags(env, fs, rest); helped || err != nil {
		return err
	}
	_, db, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	switch sub {
	case "list":
		bans, err := db.ListBans(ctx)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(env.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "IP\tSINCE\tREASON")
		for _, b := range bans {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", b.IP, b.CreatedAt.Format(time.RFC3339), b.Reason)
		}
		return tw.Flush()
	case "add": // the API's rules: one address form, the reason checked and defaulted
		ban, err := limits.NewBans(db, nil).Add(ctx, ip, *reason)
		if err != nil {
			return describe(err)
		}
		fmt.Fprintf(env.stdout, "banned %s\n", ban.IP)
	case "lift":
		subject, err := limits.NewBans(db, nil).Lift(ctx, ip)
		if err != nil {
			return describe(err)
		}
		fmt.Fprintf(env.stdout, "lifted the ban on %s (servers notice within a few seconds)\n", subject)
	}
	return nil
}
