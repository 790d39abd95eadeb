package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/storage"
)

func cmdBans(ctx context.Context, env *environment, args []string) error {
	usage := "Usage: herald bans list\n       herald bans add IP --reason R\n       herald bans lift IP"
	if len(args) == 0 || (args[0] != "list" && args[0] != "add" && args[0] != "lift") {
		fmt.Fprintln(env.stderr, usage)
		return errUsage
	}
	sub := args[0]
	fs := newFlags(env, "bans "+sub, "Manage banned client addresses (an IPv4 address, or an IPv6 address whose /64 is banned).", true)
	reason := fs.String("reason", "", "why the address is banned (add)")
	// The IP comes first, flags after: `bans add 203.0.113.9 --reason spam`.
	rest := args[1:]
	var ip string
	if sub != "list" {
		if len(rest) == 0 || rest[0] == "" || rest[0][0] == '-' {
			if len(rest) > 0 && (rest[0] == "-h" || rest[0] == "--help") {
				fs.SetOutput(env.stdout)
				fs.Usage()
				return nil
			}
			fmt.Fprintln(env.stderr, usage)
			return errUsage
		}
		ip, rest = rest[0], rest[1:]
	}
	if helped, err := parseFlags(env, fs, rest); helped || err != nil {
		return err
	}
	var subject string
	if sub != "list" {
		var err error
		if subject, err = limits.BanSubject(ip); err != nil {
			return err
		}
	}
	_, db, _, err := openStore(ctx, env)
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
	case "add":
		if *reason == "" {
			*reason = "banned by an operator"
		}
		if err := db.AddBan(ctx, limits.Ban{IP: subject, Reason: *reason, CreatedAt: time.Now().UTC()}); err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "banned %s\n", subject)
	case "lift":
		if err := db.LiftBan(ctx, subject); errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("%s is not banned", subject)
		} else if err != nil {
			return err
		}
		fmt.Fprintf(env.stdout, "lifted the ban on %s (servers notice within a few seconds)\n", subject)
	}
	return nil
}
