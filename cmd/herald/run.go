package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// errUsage marks a command line that was wrong; usage was already printed.
var errUsage = errors.New("usage")

// configError marks invalid configuration (exit status 2).
type configError struct{ msg string }

func (e configError) Error() string { return "invalid configuration:\n" + e.msg }

func exitCode(err error) int {
	var ce configError
	if errors.Is(err, errUsage) || errors.As(err, &ce) {
		return 2
	}
	return 1
}

// command is one subcommand of herald.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, env *environment, args []string) error
}

// environment is what a command may touch: no globals.
type environment struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func commands() []command {
	return []command{
		{"serve", "run the server (the default)", cmdServe},
		{"migrate", "apply the database migrations and exit", cmdMigrate},
		{"admin", "create or revoke operator accounts (admin create|revoke --email E)", cmdAdmin},
		{"users", "change an account's plan (users set-plan --email E --plan P --expires T)", cmdUsers},
		{"devices", "import devices from JSON Lines (devices import --file F)", cmdDevices},
		{"bans", "list, add or lift banned client addresses (bans list|add IP --reason R|lift IP)", cmdBans},
		{"keys", "print a new JWK set for HERALD_JWT_KEYS_FILE (keys generate)", cmdKeys},
		{"version", "print the version", cmdVersion},
	}
}

// run is main without the process: tests drive it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &environment{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		return cmdServe(ctx, env, nil)
	}
	switch args[0] {
	case "-h", "--help", "-help", "help":
		printUsage(stdout)
		return nil
	}
	if strings.HasPrefix(args[0], "-") {
		return cmdServe(ctx, env, args)
	}
	for _, c := range commands() {
		if c.name == args[0] {
			return c.run(ctx, env, args[1:])
		}
	}
	fmt.Fprintf(stderr, "herald: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return errUsage
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: herald [command] [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nConfiguration comes from HERALD_* environment variables; `herald serve --help` lists them.")
}

// newFlags returns a flag set whose --help prints usage and the
// configuration table, and whose errors are usage errors.
func newFlags(env *environment, name, summary string, withConfig bool) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	// Usage goes where the flag set writes: standard output when help was
	// asked for, standard error after a mistake (see parseFlags).
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: herald %s [flags]\n\n%s\n", name, summary)
		if hasFlags(fs) {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
		if withConfig {
			printConfig(w)
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args, turning -h into a clean exit.
func parseFlags(env *environment, fs *flag.FlagSet, args []string) (helped bool, err error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			fs.SetOutput(env.stdout)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected argument %q\n", fs.Arg(0))
		return false, errUsage
	}
	return false, nil
}

func cmdVersion(_ context.Context, env *environment, args []string) error {
	fs := newFlags(env, "version", "Print the version.", false)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, "herald", version)
	return nil
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lvl slog.Level
	lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// describe turns an application error into a line for a terminal.
func describe(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s", ae.Code, ae.Message)
	}
	return err
}
