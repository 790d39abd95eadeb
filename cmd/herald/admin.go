package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/sessions"
	"golang.org/x/term"
)

func cmdAdmin(ctx context.Context, env *environment, args []string) error {
	sub, done, err := subcommand(env, "Usage: herald admin create --email E [--password-stdin | --password P]\n       herald admin revoke --email E", args, "create", "revoke")
	if done || err != nil {
		return err
	}
	fs := newFlags(env, "admin "+sub, map[string]string{
		"create": `Create a verified operator account with the admin scope, or grant the scope to an existing account
(whose password is left unchanged), and print its id.
The password is prompted for without echo when standard input is a terminal, and read from the first
line of standard input otherwise (or with --password-stdin).`,
		"revoke": "Take the admin scope away and end every session of the account.",
	}[sub], configHint)
	email := fs.String("email", "", "account email (required)")
	var password *string
	var passwordStdin *bool
	if sub == "create" {
		passwordStdin = fs.Bool("password-stdin", false, "read the password from the first line of standard input, even from a terminal")
		password = fs.String("password", "", "the password (avoid: shell history and ps show flags)")
	}
	if helped, err := parseFlags(env, fs, args[1:]); helped || err != nil {
		return err
	}
	if *email == "" {
		fmt.Fprintln(env.stderr, "--email is required")
		return errUsage
	}
	var pw string
	if sub == "create" {
		if *password != "" && *passwordStdin {
			fmt.Fprintln(env.stderr, "--password and --password-stdin exclude each other")
			return errUsage
		}
		// Read before opening anything: a mistyped password should not
		// leave a half-opened application behind.
		if pw = *password; pw == "" {
			if pw, err = readPassword(env, *passwordStdin); err != nil {
				return err
			}
		}
	}
	a, err := openAppFromEnv(ctx, env)
	if err != nil {
		return err
	}
	defer a.Close(context.Background())
	if sub == "revoke" {
		if err := a.Accounts.RevokeAdmin(ctx, *email); err != nil {
			return describe(err)
		}
		fmt.Fprintf(env.stdout, "admin scope revoked from %s; its sessions have ended\n", *email)
		return nil
	}
	id, created, err := a.Accounts.GrantAdmin(ctx, *email, pw)
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

// readPassword prompts for the password on a terminal without echoing
// it, twice so that a typing mistake is caught; from anything else (or
// with fromStdin) it reads the first line of standard input.
func readPassword(env *environment, fromStdin bool) (string, error) {
	if f, ok := env.stdin.(*os.File); ok && !fromStdin && term.IsTerminal(int(f.Fd())) {
		read := func(prompt string) (string, error) {
			fmt.Fprint(env.stderr, prompt)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(env.stderr) // the Enter typed was not echoed either
			return string(b), err
		}
		pw, err := read("Password: ")
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		again, err := read("Password (again): ")
		if err != nil {
			return "", fmt.Errorf("reading the password: %w", err)
		}
		if pw != again {
			return "", errors.New("the two passwords differ")
		}
		if pw == "" {
			return "", errors.New("no password given")
		}
		return pw, nil
	}
	line, err := bufio.NewReader(env.stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", errors.New("no password given: write it to standard input, or run from a terminal to be prompted")
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", errors.New("no password given: the first line of standard input is empty")
	}
	return pw, nil
}

// cmdKeys prints a fresh JWK set for HERALD_JWT_KEYS_FILE.
func cmdKeys(_ context.Context, env *environment, args []string) error {
	sub, done, err := subcommand(env, "Usage: herald keys generate > jwks.json | herald keys vapid > vapid.pem", args, "generate", "vapid")
	if done || err != nil {
		return err
	}
	if sub == "vapid" {
		return cmdKeysVAPID(env, args[1:])
	}
	fs := newFlags(env, "keys generate", "Print a JWK set with one new active Ed25519 key, for HERALD_JWT_KEYS_FILE.\nTo rotate, add a new key marked active and drop \"active\" and \"d\" from the old one.", noConfig)
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

// cmdKeysVAPID is `herald keys vapid`: a new Web Push key.
func cmdKeysVAPID(env *environment, args []string) error {
	fs := newFlags(env, "keys vapid", "Print a new PEM EC P-256 private key, for HERALD_VAPID_PRIVATE_KEY_FILE (Web Push).\nIts public key, the applicationServerKey browsers subscribe with, goes to stderr;\nthe server also serves it at GET /api/v1/push/vapid-public-key. A new key makes\nevery browser's subscription useless: they must subscribe again.", noConfig)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	pemKey, err := webpush.GenerateVAPIDKey()
	if err != nil {
		return err
	}
	key, err := webpush.ParseVAPIDKey(pemKey)
	if err != nil {
		return err
	}
	fmt.Fprint(env.stdout, string(pemKey))
	fmt.Fprintln(env.stderr, "public key (applicationServerKey): "+key.Public())
	return nil
}
