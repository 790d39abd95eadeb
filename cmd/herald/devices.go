package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/storage"
)

// cmdUsers is `herald users set-plan`, an operator's way to change a plan
// until payments exist, and `herald users enable`, the way back in for an
// account disabled through the API (an operator's among them).
func cmdUsers(ctx context.Context, env *environment, args []string) error {
	which, done, err := subcommand(env, "Usage: herald users set-plan --email E --plan P --expires T\n       herald users enable --email E", args, "set-plan", "enable")
	if done || err != nil {
		return err
	}
	if which == "enable" {
		return cmdUsersEnable(ctx, env, args[1:])
	}
	fs := newFlags(env, "users set-plan", "Set an account's plan and when it expires.", configHint)
	email := fs.String("email", "", "account email (required)")
	plan := fs.String("plan", "", "trial, basic or premium (required)")
	expires := fs.String("expires", "", "an RFC 3339 time (2027-01-01T00:00:00Z) or a duration from now (720h) (required)")
	if helped, err := parseFlags(env, fs, args[1:]); helped || err != nil {
		return err
	}
	if *email == "" || *plan == "" || *expires == "" {
		fmt.Fprintln(env.stderr, "--email, --plan and --expires are required")
		return errUsage
	}
	at, err := parseExpiry(*expires, time.Now().UTC())
	if err != nil {
		return err
	}
	cfg, db, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	norm, err := accounts.NormalizeEmail(*email)
	if err != nil {
		return describe(err)
	}
	acct, err := db.AccountByEmail(ctx, norm)
	if errors.Is(err, storage.ErrNotFound) {
		return describe(apperr.Newf(apperr.UserNotFound, "No account has the email %s.", norm))
	}
	if err != nil {
		return err
	}
	sub, err := newPlans(db, cfg).SetPlan(ctx, acct.ID, *plan, at)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(env.stdout, "%s: plan %s, expires %s\n", *email, sub.Plan, sub.ExpiresAt.UTC().Format(time.RFC3339))
	return nil
}

// cmdUsersEnable is `herald users enable`: the account may log in again
// (its ended sessions stay ended), whoever disabled it.
func cmdUsersEnable(ctx context.Context, env *environment, args []string) error {
	fs := newFlags(env, "users enable", "Enable a disabled account: it may log in again; its ended sessions stay ended.", configHint)
	email := fs.String("email", "", "account email (required)")
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	if *email == "" {
		fmt.Fprintln(env.stderr, "--email is required")
		return errUsage
	}
	a, err := openAppFromEnv(ctx, env)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	rec, err := a.Accounts.EnableByEmail(ctx, *email)
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(env.stdout, "%s (%s) is enabled and may log in again\n", rec.Email, rec.ID)
	return nil
}

func parseExpiry(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(d), nil
	}
	return time.Time{}, fmt.Errorf("--expires %q is neither an RFC 3339 time nor a duration", s)
}

// cmdDevices is `herald devices import`.
func cmdDevices(ctx context.Context, env *environment, args []string) error {
	if _, done, err := subcommand(env, "Usage: herald devices import --file F", args, "import"); done || err != nil {
		return err
	}
	fs := newFlags(env, "devices import", `Import devices from JSON Lines: {"email","platform","pushToken","name"?} per line.
Accounts must exist; plan limits do not apply. A token already registered moves to the imported device.`, configHint)
	file := fs.String("file", "", "JSON Lines file, or - for standard input (required)")
	if helped, err := parseFlags(env, fs, args[1:]); helped || err != nil {
		return err
	}
	if *file == "" {
		fmt.Fprintln(env.stderr, "--file is required")
		return errUsage
	}
	var in io.Reader = env.stdin
	if *file != "-" {
		f, err := os.Open(*file)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	cfg, db, err := openStore(ctx, env)
	if err != nil {
		return err
	}
	defer db.Close()
	devs := devices.NewService(db, newPlans(db, cfg), devices.Config{Tokens: tokenRules(cfg)})
	var progress func(int)
	if isTerminal(env.stderr, env.getenv) {
		start := time.Now()
		progress = func(done int) {
			fmt.Fprintf(env.stderr, "\r%d lines (%.0f/s)", done, float64(done)/max(time.Since(start).Seconds(), 0.001))
		}
	}
	res, err := devs.Import(ctx, in, progress)
	if progress != nil {
		fmt.Fprintln(env.stderr)
	}
	if err != nil {
		return describe(err)
	}
	fmt.Fprintf(env.stdout, "imported %d, updated %d, rejected %d\n", res.Imported, res.Updated, res.Rejected)
	for _, e := range res.Errors {
		fmt.Fprintf(env.stdout, "line %d: %s\n", e.Line, e.Reason)
	}
	if res.ErrorsTruncated {
		fmt.Fprintln(env.stdout, "(more rejected lines not listed)")
	}
	return nil
}

func isTerminal(w io.Writer, getenv func(string) string) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && !strings.EqualFold(getenv("TERM"), "dumb")
}
