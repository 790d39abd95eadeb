package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/herald-vpn/herald/internal/sessions"
)

func cmdAdmin(ctx context.Context, env *environment, args []string) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "revoke") {
		fmt.Fprintln(env.stderr, "Usage: herald admin create --email E [--password P | --password-stdin]\n       herald admin revoke --email E")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return errUsage
	}
	sub := args[0]
	fs := newFlags(env, "admin "+sub, map[string]string{
		"create": "Create a verified operator account with the admin scope, or grant the scope to an existing account, and print its id.\nWithout --password, the password is read from the first line of standard input.",
		"revoke": "Take the admin scope away and end every session of the account.",
	}[sub], true)
	email := fs.String("email", "", "account email (required)")
	var password *string
	if sub == "create" {
		password = fs.String("password", "", "password of a new account (prefer standard input: shell history keeps flags)")
	}
	if helped, err := parseFlags(env, fs, args[1:]); helped || err != nil {
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
	defer a.db.Close()
	if sub == "revoke" {
		if err := a.accounts.RevokeAdmin(ctx, *email); err != nil {
			return describe(err)
		}
		fmt.Fprintf(env.stdout, "admin scope revoked from %s; its sessions have ended\n", *email)
		return nil
	}
	pw := *password
	if pw == "" {
		line, err := bufio.NewReader(env.stdin).ReadString('\n')
		if err != nil && line == "" {
			return errors.New("no password given: pass --password or write it to standard input")
		}
		pw = strings.TrimRight(line, "\r\n")
	}
	id, created, err := a.accounts.GrantAdmin(ctx, *email, pw)
	if err != nil {
		return describe(err)
	}
	if created {
		fmt.Fprintf(env.stderr, "created verified admin account %s\n", *email)
	} else {
		fmt.Fprintf(env.stderr, "granted the admin scope to existing account %s (its password is unchanged)\n", *email)
	}
	fmt.Fprintln(env.stdout, id)
	return nil
}

// cmdKeys prints a fresh JWK set for HERALD_JWT_KEYS_FILE.
func cmdKeys(_ context.Context, env *environment, args []string) error {
	if len(args) == 0 || args[0] != "generate" {
		fmt.Fprintln(env.stderr, "Usage: herald keys generate > jwks.json")
		return errUsage
	}
	fs := newFlags(env, "keys generate", "Print a JWK set with one new active Ed25519 key, for HERALD_JWT_KEYS_FILE.\nTo rotate, add a new key marked active and drop \"active\" and \"d\" from the old one.", false)
	if helped, err := parseFlags(env, fs, args[1:]); helped || err != nil {
		return err
	}
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return err
	}
	k, err := sessions.KeyFromSeed(seed)
	if err != nil {
		return err
	}
	out, _ := json.MarshalIndent(map[string]any{"keys": []any{k.JWK(true)}}, "", "  ")
	fmt.Fprintln(env.stdout, string(out))
	return nil
}
