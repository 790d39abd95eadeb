package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"

	"github.com/herald-vpn/herald/internal/apperr"
)

// version, when set at build time with -ldflags "-X main.version=…",
// replaces the module version read from the build information.
var version string

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
	// tracerProvider, when set, replaces the one the OTEL_* variables
	// configure (tests record spans in memory with it).
	tracerProvider trace.TracerProvider
}

func commands() []command {
	return []command{
		{"serve", "run the server (the default)", cmdServe},
		{"migrate", "apply the database migrations and exit (migrate status lists them, applied and pending)", cmdMigrate},
		{"admin", "create or revoke operator accounts (admin create|revoke --email E)", cmdAdmin},
		{"users", "change an account's plan or enable it again (users set-plan --email E --plan P --expires T|enable --email E)", cmdUsers},
		{"devices", "import devices from JSON Lines (devices import --file F)", cmdDevices},
		{"apikeys", "create, list or revoke API keys of other services (apikeys create --name N --scopes S|list|revoke ID)", cmdAPIKeys},
		{"bans", "list, add or lift banned client addresses (bans list|add IP --reason R|lift IP)", cmdBans},
		{"check", "validate the configuration and try each dependency (exit 0 ok, 1 a check failed, 2 invalid configuration)", cmdCheck},
		{"keys", "print a new JWK set for HERALD_JWT_KEYS_FILE (keys generate) or a Web Push key for HERALD_VAPID_PRIVATE_KEY_FILE (keys vapid)", cmdKeys},
		{"version", "print the version, VCS revision and build details (also --version)", cmdVersion},
	}
}

// run is main without the process: tests drive it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	env := &environment{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) == 0 {
		return cmdServe(ctx, env, nil)
	}
	switch {
	case isHelp(args[0]):
		printUsage(stdout)
		return nil
	case args[0] == "help":
		return cmdHelp(ctx, env, args[1:])
	case args[0] == "--version" || args[0] == "-version" || args[0] == "-v":
		return cmdVersion(ctx, env, args[1:])
	}
	if strings.HasPrefix(args[0], "-") {
		return cmdServe(ctx, env, args)
	}
	if c, found := findCommand(args[0]); found {
		return c.run(ctx, env, args[1:])
	}
	fmt.Fprintf(stderr, "herald: unknown command %q\n\n", args[0])
	printUsage(stderr)
	return errUsage
}

func findCommand(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// cmdHelp is `herald help [config | COMMAND [SUB]]`.
func cmdHelp(ctx context.Context, env *environment, args []string) error {
	switch {
	case len(args) == 0:
		printUsage(env.stdout)
		return nil
	case args[0] == "config":
		fmt.Fprintln(env.stdout, "Herald reads its configuration from these environment variables (docs/configuration.md says more).")
		printConfig(env.stdout)
		return nil
	}
	c, found := findCommand(args[0])
	if !found {
		fmt.Fprintf(env.stderr, "herald help: no command %q\n\n", args[0])
		printUsage(env.stderr)
		return errUsage
	}
	return c.run(ctx, env, append(args[1:], "--help"))
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: herald [command] [flags]")
	fmt.Fprintln(w, "\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\n`herald COMMAND --help` (or `herald help COMMAND`) shows a command's flags.")
	fmt.Fprintln(w, "Configuration comes from HERALD_* environment variables; `herald help config` lists them.")
	fmt.Fprintln(w, "Exit status: 0 on success, 1 on failure, 2 for a usage mistake or an invalid configuration.")
}

// isHelp says whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--help" || arg == "--h"
}

// subcommand picks the sub-command of a command that has several (admin
// create|revoke…): args[0] when it is one of subs. Help asked for there
// prints usage to standard output and done; anything else is a usage
// mistake.
func subcommand(env *environment, usage string, args []string, subs ...string) (sub string, done bool, err error) {
	switch {
	case len(args) > 0 && isHelp(args[0]):
		fmt.Fprintln(env.stdout, usage)
		fmt.Fprintln(env.stdout, "\n`herald "+strings.Fields(usage)[2]+" SUBCOMMAND --help` shows the flags of each.")
		return "", true, nil
	case len(args) > 0 && slices.Contains(subs, args[0]):
		return args[0], false, nil
	case len(args) > 0:
		fmt.Fprintf(env.stderr, "unknown sub-command %q\n", args[0])
	}
	fmt.Fprintln(env.stderr, usage)
	return "", false, errUsage
}

// configHelp is how much of the configuration a command's help shows.
type configHelp int

const (
	noConfig    configHelp = iota // the command reads no configuration
	configHint                    // a line pointing to `herald help config`
	configTable                   // every variable (serve)
)

// newFlags returns a flag set whose --help prints the command's usage and
// its own flags (and, for serve, the configuration), and whose errors are
// usage errors. usage is what follows "herald", e.g. "bans add IP".
func newFlags(env *environment, usage, summary string, cfg configHelp) *flag.FlagSet {
	fs := flag.NewFlagSet(usage, flag.ContinueOnError)
	fs.SetOutput(env.stderr)
	// Usage goes where the flag set writes: standard output when help was
	// asked for, standard error after a mistake (see parseFlags).
	fs.Usage = func() {
		w := fs.Output()
		fmt.Fprintf(w, "Usage: herald %s", usage)
		if hasFlags(fs) {
			fmt.Fprint(w, " [flags]")
		}
		fmt.Fprintf(w, "\n\n%s\n", summary)
		if hasFlags(fs) {
			fmt.Fprintln(w, "\nFlags:")
			fs.PrintDefaults()
		}
		switch cfg {
		case configHint:
			fmt.Fprintln(w, "\nConfiguration comes from HERALD_* environment variables (HERALD_DATABASE_URL…); `herald help config` lists them.")
		case configTable:
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

// leadingArg takes the argument that comes before a sub-command's flags
// (`bans add 203.0.113.9 --reason spam`, `apikeys revoke ID`): missing, it
// writes missing and the usage and returns errUsage; --help in its place
// shows the flags (done).
func leadingArg(env *environment, fs *flag.FlagSet, usage string, args []string, missing string) (arg string, rest []string, done bool, err error) {
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		return args[0], args[1:], false, nil
	}
	if len(args) > 0 && isHelp(args[0]) {
		fs.SetOutput(env.stdout)
		fs.Usage()
		return "", nil, true, nil
	}
	fmt.Fprintln(env.stderr, missing)
	fmt.Fprintln(env.stderr, usage)
	return "", nil, false, errUsage
}

// parseFlags parses args, turning -h into a clean exit.
func parseFlags(env *environment, fs *flag.FlagSet, args []string) (helped bool, err error) {
	for _, a := range args {
		if a == "--" {
			break
		}
		if isHelp(a) {
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
	fs := newFlags(env, "version", "Print the module version, the VCS revision and time, and the Go version Herald was built with.", noConfig)
	if helped, err := parseFlags(env, fs, args); helped || err != nil {
		return err
	}
	b := readBuild()
	fmt.Fprintln(env.stdout, "herald", b.version)
	fmt.Fprintln(env.stdout, "revision:", b.revision)
	fmt.Fprintln(env.stdout, "built:", b.time)
	fmt.Fprintln(env.stdout, "go:", b.goVersion)
	return nil
}

// buildInfo is what the binary knows of its build.
type buildInfo struct {
	version, revision, time, goVersion string
}

// readBuild reads the build information the Go toolchain records: the
// module version (from the VCS tag, or a pseudo-version), the VCS revision
// and the time of that commit (the toolchain records no build time, so
// that builds are reproducible: this is the commit's time). A build made
// without VCS information (go build -buildvcs=false, go run) says unknown.
func readBuild() buildInfo {
	b := buildInfo{version: "(devel)", revision: "unknown", time: "unknown", goVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v := bi.Main.Version; v != "" {
			b.version = v
		}
		modified := false
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.revision = s.Value
			case "vcs.time":
				b.time = s.Value + " (commit time)"
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if modified && b.revision != "unknown" {
			b.revision += " (with uncommitted changes)"
		}
	}
	if version != "" {
		b.version = version
	}
	return b
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	return slog.New(newHandler(w, format, level))
}

func newHandler(w io.Writer, format, level string) slog.Handler {
	var lvl slog.Level
	lvl.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lvl}
	if format == "text" {
		return slog.NewTextHandler(w, opts)
	}
	return slog.NewJSONHandler(w, opts)
}

// describe turns an application error into a line for a terminal.
func describe(err error) error {
	var ae *apperr.Error
	if errors.As(err, &ae) {
		return fmt.Errorf("%s: %s", ae.Code, ae.Message)
	}
	return err
}
