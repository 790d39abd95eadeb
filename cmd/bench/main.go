// Command bench measures Herald beside bare ceilings on the machine it runs
// on and prints a Markdown table of the ratios; its soak mode runs Herald
// under a mixed load for a set time and judges the slopes of what it
// samples. See cmd/bench/README.md.
//
//	go run ./cmd/bench [-quick] [-rounds 3] [-only users-me,login,broadcast] [-devices 100000] [-million]
//	go run ./cmd/bench soak [-ci] [-duration 1h] [-db postgres]
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/sessions"
)

var started = time.Now()

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	if len(os.Args) > 1 {
		var err error
		switch os.Args[1] {
		case "fake-fcm":
			err = fakeFCMMain(os.Args[2:])
		case "ceiling-server":
			err = ceilingServerMain(os.Args[2:])
		case "neighbour":
			err = neighbourMain(os.Args[2:])
		case "soak":
			os.Exit(soakMain(os.Args[2:]))
		default:
			os.Exit(run(os.Args[1:]))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(nil))
}

// measure names accepted by -only.
var measureNames = []string{"users-me-pg", "users-me-sqlite", "login", "login-flood", "broadcast-sqlite", "broadcast-pg", "million", "scale"}

var measureAliases = map[string][]string{
	"users-me":  {"users-me-pg", "users-me-sqlite"},
	"broadcast": {"broadcast-sqlite", "broadcast-pg"},
	"all":       {"users-me-pg", "users-me-sqlite", "login", "login-flood", "broadcast-sqlite", "broadcast-pg"},
}

type options struct {
	quick        bool
	only         string
	rounds       int
	duration     time.Duration
	warmup       time.Duration
	concurrency  int
	loginWorkers int
	floodFactor  float64
	users        int
	fillers      int
	devices      int
	million      bool
	// scale: the operator's reads (and a broadcast) at scaleAccounts
	// accounts and scaleDevices devices (-only scale).
	scaleAccounts  int
	scaleDevices   int
	scaleBroadcast bool
	pushWorkers    int
	sendLimit      time.Duration
	heraldBin      string
	postgres       string
	keep           bool
	profile        bool
	preferences    bool
	verifyEvery    bool
	neighbour      int
	env            multiFlag
	selected       map[string]bool
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func parseOptions(args []string) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: go run ./cmd/bench [flags]\n\nMeasures Herald beside bare ceilings and prints a Markdown table (see cmd/bench/README.md).\nMeasures for -only: %s, or users-me, broadcast, all.\n\n", strings.Join(measureNames, ", "))
		fs.PrintDefaults()
	}
	pgDefault := defaultPostgresURL()
	fs.BoolVar(&o.quick, "quick", false, "short run for development: 3 s windows, 10,000 devices, 4 accounts (explicit flags win)")
	fs.StringVar(&o.only, "only", "all", "comma-separated measures to run")
	fs.IntVar(&o.rounds, "rounds", 1, "interleaved rounds per measure; the table shows medians")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured window of each users/me and login run")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured load before each window")
	fs.IntVar(&o.concurrency, "concurrency", 32, "users/me clients (closed loop, one kept-alive connection each)")
	fs.IntVar(&o.loginWorkers, "login-workers", 0, "login clients (default: twice HERALD_HASH_CONCURRENCY, so Herald's hash slots never wait for a client)")
	fs.Float64Var(&o.floodFactor, "flood-factor", 4, "login-flood: logins offered per second, as a multiple of the hashing capacity (the bare argon2id rate at Herald's HERALD_HASH_CONCURRENCY)")
	fs.IntVar(&o.users, "users", 8, "accounts whose tokens the users/me clients share, and that log in")
	fs.IntVar(&o.fillers, "filler-accounts", 10_000, "accounts that never log in, added by SQL beside the load's (and as many rows in the ceiling's table), so that tables have a size in service and lookups go through their indexes")
	fs.IntVar(&o.devices, "devices", 100_000, "devices of the broadcast measures")
	fs.IntVar(&o.scaleAccounts, "scale-accounts", 1_000_000, "accounts of the scale measure (-only scale), added by SQL")
	fs.IntVar(&o.scaleDevices, "scale-devices", 10_000_000, "devices of the scale measure, added by SQL")
	fs.BoolVar(&o.scaleBroadcast, "scale-broadcast", false, "the scale measure also broadcasts to every device with a valid token")
	fs.BoolVar(&o.million, "million", false, "also broadcast to 1,000,000 devices on PostgreSQL (about 5 minutes more, plus seeding)")
	fs.DurationVar(&o.sendLimit, "broadcast-limit", 0, "longest wait for one Herald broadcast before it is cancelled (default: 1 min + 1 s per 2,000 devices)")
	fs.IntVar(&o.pushWorkers, "push-workers", 64, "goroutines and connections of the bare FCM sender")
	fs.StringVar(&o.heraldBin, "herald-bin", "", "a herald binary to measure (default: build ./cmd/herald)")
	fs.StringVar(&o.postgres, "postgres", pgDefault, "PostgreSQL server URL; each run works in fresh schemas it drops at the end (default from HERALD_BENCH_POSTGRES_URL)")
	fs.BoolVar(&o.keep, "keep", false, "keep the scratch directory (logs) and the PostgreSQL schemas")
	fs.IntVar(&o.neighbour, "neighbour", 0, "run a CPU-bound neighbour of this many busy threads (`bench neighbour`, its own process) through every measure, Herald's and the ceilings' alike: the machine as busy as a shared one")
	fs.BoolVar(&o.verifyEvery, "ceiling-verify-every-request", false, "the users/me ceiling checks the token's signature on every request (by default it checks each token once and remembers it until it expires, as Herald does)")
	fs.BoolVar(&o.profile, "ceiling-profile", false, "write a CPU profile of each users/me ceiling run into the scratch directory (implies -keep), to compare with Herald's (HERALD_METRICS_ADDR's /debug/pprof)")
	fs.BoolVar(&o.preferences, "preferences", false, "broadcasts name the product category and every account stores its preferences (product on for every channel) and a time zone with quiet hours (two hours, half a day away), so the walk reads and decides each device owner's choice and schedule: the cost of preferences and quiet hours, against the same bare sender")
	fs.Var(&o.env, "env", "KEY=VALUE added to Herald's configuration (repeatable), e.g. -env HERALD_DATABASE_MAX_CONNS=32")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		if !set["duration"] {
			o.duration = 3 * time.Second
		}
		if !set["warmup"] {
			o.warmup = 500 * time.Millisecond
		}
		if !set["devices"] {
			o.devices = 10_000
		}
		if !set["users"] {
			o.users = 4
		}
		if !set["filler-accounts"] {
			o.fillers = 1_000
		}
	}
	o.selected = map[string]bool{}
	for _, n := range strings.Split(o.only, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if a, ok := measureAliases[n]; ok {
			for _, m := range a {
				o.selected[m] = true
			}
			continue
		}
		if !slices.Contains(measureNames, n) {
			return nil, fmt.Errorf("-only: unknown measure %q (known: %s, users-me, broadcast, all)", n, strings.Join(measureNames, ", "))
		}
		o.selected[n] = true
	}
	if o.million {
		o.selected["million"] = true
	}
	o.keep = o.keep || o.profile
	for _, kv := range o.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("-env %q: want KEY=VALUE", kv)
		}
	}
	switch {
	case o.fillers < 0:
		return nil, errors.New("-filler-accounts must not be negative")
	case o.rounds < 1, o.concurrency < 1, o.users < 1, o.devices < 1, o.pushWorkers < 1, o.duration <= 0, o.warmup < 0:
		return nil, errors.New("-rounds, -concurrency, -users, -devices, -push-workers and -duration must be positive")
	}
	return o, nil
}

// defaultPostgresURL is -postgres unless set: HERALD_BENCH_POSTGRES_URL,
// or the local test server.
func defaultPostgresURL() string {
	return cmpOr(os.Getenv("HERALD_BENCH_POSTGRES_URL"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
}

func run(args []string) int {
	o, err := parseOptions(args)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	k := &kit{pgBase: o.postgres, fillerAccounts: o.fillers, preferences: o.preferences}
	defer k.cleanup(o.keep)
	b := &board{opts: o}
	if err := k.setup(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	b.commit = k.commit
	if o.neighbour > 0 {
		c, err := startChild("neighbour", k.self, []string{"neighbour", "-threads", strconv.Itoa(o.neighbour)}, os.Environ(), k.logPath("neighbour"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			return 1
		}
		defer c.Stop(10 * time.Second)
		logf("a CPU-bound neighbour of %d busy threads runs beside every measure", o.neighbour)
	}
	if err := runMeasures(ctx, k, o, b); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		if ctx.Err() != nil {
			return 1
		}
		b.notes = append(b.notes, "the run stopped early: "+err.Error())
	}
	b.print(os.Stdout)
	return 0
}

// setup builds Herald, makes the signing key, starts the fake FCM and
// writes Herald's configuration.
func (k *kit) setup(ctx context.Context, o *options) error {
	var err error
	if k.tmp, err = os.MkdirTemp("", "herald-bench-"); err != nil {
		return err
	}
	if k.self, err = os.Executable(); err != nil {
		return err
	}
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	k.commit = gitDescribe(root)
	if o.heraldBin != "" {
		k.bin = o.heraldBin
	} else {
		t0 := time.Now()
		k.bin = filepath.Join(k.tmp, "herald")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", k.bin, "./cmd/herald")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/herald: %w\n%s", err, out)
		}
		logf("built herald (%s) in %.1f s", k.commit, time.Since(t0).Seconds())
	}

	// One Ed25519 key for every Herald of the run and the ceiling server.
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	key, err := sessions.KeyFromSeed(seed)
	if err != nil {
		return err
	}
	jwks, _ := json.Marshal(map[string]any{"keys": []any{key.JWK(true)}})
	k.jwksFile = filepath.Join(k.tmp, "jwks.json")
	if err := os.WriteFile(k.jwksFile, jwks, 0o600); err != nil {
		return err
	}

	addr, err := freeAddr()
	if err != nil {
		return err
	}
	fake, err := startChild("fake FCM", k.self, []string{"fake-fcm", "-addr", addr}, os.Environ(), k.logPath("fake-fcm"))
	if err != nil {
		return err
	}
	k.fakeURL = "http://" + addr
	if err := waitHTTP(ctx, fake, k.fakeURL+"/healthz", 30*time.Second); err != nil {
		return err
	}
	creds, err := fcmCredentials(k.fakeURL, fcmProject)
	if err != nil {
		return err
	}
	credsFile := filepath.Join(k.tmp, "fcm.json")
	if err := os.WriteFile(credsFile, creds, 0o600); err != nil {
		return err
	}

	k.env = map[string]string{
		"HERALD_LOG_FORMAT":           "json",
		"HERALD_LOG_LEVEL":            "info",
		"HERALD_RATE_LIMIT_GLOBAL":    highLimit,
		"HERALD_RATE_LIMIT_AUTH":      highLimit,
		"HERALD_RATE_LIMIT_PROTECTED": highLimit,
		"HERALD_RATE_LIMIT_ADMIN":     highLimit,
		"HERALD_JWT_KEYS_FILE":        k.jwksFile,
		"HERALD_FCM_CREDENTIALS_FILE": credsFile,
		"HERALD_FCM_ENDPOINT":         k.fakeURL,
		"HERALD_PUSH_RATE":            "0",
		"HERALD_SHUTDOWN_TIMEOUT":     "10s",
		// The load sends no email; a production server needs SMTP or this.
		"HERALD_MAIL_TO_LOG": "on",
	}
	for _, kv := range o.env {
		key, v, _ := strings.Cut(kv, "=")
		k.env[key] = v
	}
	return nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("run the kit from inside the Herald repository (go run ./cmd/bench)")
	}
	return filepath.Dir(mod), nil
}

func gitDescribe(root string) string {
	out, err := exec.Command("git", "-C", root, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown commit"
	}
	c := strings.TrimSpace(string(out))
	// Changes to the kit itself do not change what is measured.
	if st, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=no", "--", ".", ":!cmd/bench").Output(); err == nil && len(st) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}

// quiesce lets the machine settle before a measured run: PostgreSQL
// writes its dirty pages now (CHECKPOINT) rather than during the next
// measurement, and the previous run's processes are gone.
func (k *kit) quiesce(ctx context.Context) {
	if k.pgUsed {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		if conn, err := pgx.Connect(cctx, k.pgBase); err == nil {
			_, _ = conn.Exec(cctx, "CHECKPOINT")
			conn.Close(cctx)
		}
		cancel()
	}
	select {
	case <-time.After(500 * time.Millisecond):
	case <-ctx.Done():
	}
}

// envInt reads an integer from Herald's configuration, or def.
func (k *kit) envInt(key string, def int) int {
	if v, ok := k.env[key]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return def
}

// hashCost is the argon2id cost and the hashing places of the Herald the
// kit runs: Herald's defaults unless -env sets them.
type hashCost struct {
	memKiB, iterations, lanes int
	places                    int // HERALD_HASH_CONCURRENCY: hashes at once
}

func (k *kit) hashCost() hashCost {
	return hashCost{
		memKiB:     k.envInt("HERALD_ARGON2_MEMORY", 64*1024),
		iterations: k.envInt("HERALD_ARGON2_ITERATIONS", 3),
		lanes:      k.envInt("HERALD_ARGON2_PARALLELISM", 2),
		places:     k.envInt("HERALD_HASH_CONCURRENCY", config.DefaultHashConcurrency(runtime.GOMAXPROCS(0))),
	}
}

// bareLoop runs the bare argon2id loop at this cost on as many goroutines
// as Herald has hashing places: the hashing ceiling.
func (c hashCost) bareLoop(ctx context.Context, warmup, window time.Duration) (loadResult, error) {
	return closedLoop(ctx, c.places, warmup, window, 0, func(int) (op, func(), error) {
		return argon2Op(uint32(c.memKiB), uint32(c.iterations), uint8(c.lanes)), nil, nil
	})
}

func runMeasures(ctx context.Context, k *kit, o *options, b *board) error {
	sel := o.selected
	pg := &site{key: "postgres", name: "PostgreSQL"}
	sq := &site{key: "sqlite", name: "SQLite", dbURL: "sqlite:" + filepath.Join(k.tmp, "herald.db")}
	needPG := sel["users-me-pg"] || sel["login"] || sel["login-flood"] || sel["broadcast-pg"] || sel["users-me-sqlite"]
	needSQ := sel["users-me-sqlite"] || sel["broadcast-sqlite"]
	if needPG {
		url, err := k.newPostgresSchema(ctx, "main")
		if err != nil {
			return err
		}
		pg.dbURL = url
		devices := 0
		if sel["broadcast-pg"] {
			devices = o.devices
		}
		if err := k.seed(ctx, pg, o.users, devices, spreadDevices); err != nil {
			return fmt.Errorf("seed %s: %w", pg.name, err)
		}
	}
	if needSQ {
		devices := 0
		if sel["broadcast-sqlite"] {
			devices = o.devices
		}
		if err := k.seed(ctx, sq, o.users, devices, spreadDevices); err != nil {
			return fmt.Errorf("seed %s: %w", sq.name, err)
		}
	}
	if sel["users-me-pg"] || sel["users-me-sqlite"] {
		if err := usersMe(ctx, k, o, b, pg, sq); err != nil {
			return err
		}
	}
	if sel["login"] {
		if err := loginMeasure(ctx, k, o, b, pg); err != nil {
			return err
		}
	}
	if sel["login-flood"] {
		if err := loginFloodMeasure(ctx, k, o, b, pg); err != nil {
			return err
		}
	}
	if sel["broadcast-sqlite"] || sel["broadcast-pg"] {
		if err := broadcastMeasure(ctx, k, o, b, pg, sq); err != nil {
			return err
		}
	}
	if sel["million"] {
		if err := millionMeasure(ctx, k, o, b); err != nil {
			return err
		}
	}
	if sel["scale"] {
		if err := scaleMeasure(ctx, k, o, b); err != nil {
			return err
		}
	}
	return nil
}

// usersMe: per round, Herald on PostgreSQL, the ceiling, Herald on SQLite.
func usersMe(ctx context.Context, k *kit, o *options, b *board, pg, sq *site) error {
	// The ceiling reads its rows from the PostgreSQL schema, one per
	// account whose token the clients send.
	if err := k.ceilingRows(ctx, pg); err != nil {
		return fmt.Errorf("ceiling table: %w", err)
	}
	hPG := &loadSeries{}
	hSQ := &loadSeries{}
	ceil := &loadSeries{}
	for r := 1; r <= o.rounds; r++ {
		if o.selected["users-me-pg"] {
			k.quiesce(ctx)
			res, _, err := k.loadOnHerald(ctx, pg, fmt.Sprintf("users-me-r%d", r), o.concurrency, o.warmup, o.duration, 0, usersMeRequest(pg.tokens))
			hPG.add(b, "users/me Herald PostgreSQL", r, res, err)
		}
		k.quiesce(ctx)
		res, err := k.ceilingUsersMe(ctx, pg, o, r)
		ceil.add(b, "users/me ceiling", r, res, err)
		if o.selected["users-me-sqlite"] {
			k.quiesce(ctx)
			res, _, err := k.loadOnHerald(ctx, sq, fmt.Sprintf("users-me-r%d", r), o.concurrency, o.warmup, o.duration, 0, usersMeRequest(sq.tokens))
			hSQ.add(b, "users/me Herald SQLite", r, res, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	what := fmt.Sprintf("`GET /api/v1/users/me`, %%s, %d clients", o.concurrency)
	if o.selected["users-me-pg"] {
		b.loadRow(fmt.Sprintf(what, "PostgreSQL"), hPG, ceil, " req/s", " req/s", true, 0.85)
	}
	if o.selected["users-me-sqlite"] {
		b.loadRow(fmt.Sprintf(what, "SQLite"), hSQ, ceil, " req/s", " req/s", true, 0.85)
	}
	return nil
}

// ceilingRows fills the ceiling's table with one row per account of s.
func (k *kit) ceilingRows(ctx context.Context, s *site) error {
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, ceilingDDL); err != nil {
		return err
	}
	now := time.Now().UTC()
	for i, id := range s.subs {
		if _, err := conn.Exec(ctx, `INSERT INTO `+ceilingTable+` (id, email, email_verified_at, referral_code, created_at, plan, expires_at)
VALUES ($1, $2, $3, $4, $3, 'trial', $5) ON CONFLICT (id) DO NOTHING`,
			id, s.users[i], now, fmt.Sprintf("BENCH%03d", i), now.Add(7*24*time.Hour)); err != nil {
			return err
		}
	}
	// As many rows as Herald's accounts table, and statistics, so that
	// both read by index from a table of the same size.
	if _, err := conn.Exec(ctx, `INSERT INTO `+ceilingTable+` (id, email, email_verified_at, referral_code, created_at, plan, expires_at)
SELECT 'filler-' || n, 'filler-' || n || '@bench.invalid', $2, 'FILLER' || n, $2, 'trial', $3 FROM generate_series(1, $1::int) n
ON CONFLICT (id) DO NOTHING`, k.fillerAccounts, now, now.Add(7*24*time.Hour)); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "VACUUM ANALYZE "+ceilingTable)
	return err
}

func (k *kit) ceilingUsersMe(ctx context.Context, pg *site, o *options, round int) (loadResult, error) {
	addr, err := freeAddr()
	if err != nil {
		return loadResult{}, err
	}
	args := []string{"ceiling-server", "-addr", addr, "-db", pg.dbURL, "-jwks", k.jwksFile, "-issuer", cmpOr(k.env["HERALD_JWT_ISSUER"], "herald")}
	logPath := k.logPath(fmt.Sprintf("ceiling-users-me-r%d", round))
	if o.verifyEvery {
		args = append(args, "-verify-every-request")
	}
	if o.profile {
		args = append(args, "-cpuprofile", strings.TrimSuffix(logPath, ".log")+".pprof")
	}
	c, err := startChild("ceiling server", k.self, args, os.Environ(), logPath)
	if err != nil {
		return loadResult{}, err
	}
	defer c.Stop(10 * time.Second)
	if err := waitHTTP(ctx, c, "http://"+addr+"/healthz", 30*time.Second); err != nil {
		return loadResult{}, err
	}
	req := usersMeRequest(pg.tokens)
	return closedLoop(ctx, o.concurrency, o.warmup, o.duration, c.Pid(), func(i int) (op, func(), error) {
		rc := newRawConn(addr, req(addr, i), 60*time.Second)
		return rc.Do, rc.Close, nil
	})
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// loginMeasure: per round, Herald logging in on PostgreSQL (with its RSS),
// then the bare argon2id loop.
func loginMeasure(ctx context.Context, k *kit, o *options, b *board, pg *site) error {
	hc := k.hashCost()
	workers := o.loginWorkers
	if workers <= 0 {
		workers = 2 * hc.places
	}
	herald, ceil := &loadSeries{}, &loadSeries{}
	var mems []memory
	for r := 1; r <= o.rounds; r++ {
		k.quiesce(ctx)
		res, m, err := k.loadOnHerald(ctx, pg, fmt.Sprintf("login-r%d", r), workers, o.warmup, o.duration, 3*time.Second, loginRequest(pg.users))
		herald.add(b, "login Herald", r, res, err)
		if err == nil {
			mems = append(mems, m)
			logf("  Herald RSS: peak sampled %s, VmHWM %s, %s 3 s after the load", mib(m.Peak), mib(m.HWM), mib(m.After))
		}
		k.quiesce(ctx)
		res, err = hc.bareLoop(ctx, o.warmup, o.duration)
		ceil.add(b, "login ceiling (argon2id)", r, res, err)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	b.loadRow(fmt.Sprintf("login (`POST /api/v1/auth/login`), argon2id m=%d MiB t=%d p=%d, %d clients, %d hash slots", hc.memKiB/1024, hc.iterations, hc.lanes, workers, hc.places),
		herald, ceil, " logins/s", " hashes/s", false, 0.9)
	boundKiB := int64(hc.places*hc.memKiB) + 64*1024
	if len(mems) == 0 {
		return nil
	}
	var worst memory
	for _, m := range mems {
		worst.Peak, worst.HWM, worst.After = max(worst.Peak, m.Peak), max(worst.HWM, m.HWM), max(worst.After, m.After)
	}
	target := fmt.Sprintf("≤ %s (%d × %d MiB + 64 MiB)", mib(boundKiB), hc.places, hc.memKiB/1024)
	if worst.HWM > boundKiB {
		target += " MISSED"
	}
	b.rows = append(b.rows, row{
		measure: "Herald's peak RSS under the login load",
		herald:  fmt.Sprintf("%s (VmHWM; sampled VmRSS peak %s), %s 3 s after", mib(worst.HWM), mib(worst.Peak), mib(worst.After)),
		ceiling: "–", ratio: "–", target: target,
	})
	return nil
}

// broadcastMeasure: per round, Herald on SQLite, the bare sender, Herald on
// PostgreSQL, each sending to the same number of devices.
func broadcastMeasure(ctx context.Context, k *kit, o *options, b *board, pg, sq *site) error {
	limit := o.broadcastLimit(o.devices)
	hSQ, hPG, ceil := &sendSeries{}, &sendSeries{}, &sendSeries{}
	for r := 1; r <= o.rounds; r++ {
		if o.selected["broadcast-sqlite"] {
			k.quiesce(ctx)
			res, err := k.heraldBroadcast(ctx, sq, fmt.Sprintf("broadcast-r%d", r), limit)
			hSQ.add(b, "broadcast Herald SQLite", r, res, err)
		}
		k.quiesce(ctx)
		res, err := bareSend(ctx, k.fakeURL, fcmProject, o.devices, o.pushWorkers, deviceToken)
		ceil.add(b, "broadcast ceiling (bare sender)", r, res, err)
		if o.selected["broadcast-pg"] {
			k.quiesce(ctx)
			res, err := k.heraldBroadcast(ctx, pg, fmt.Sprintf("broadcast-r%d", r), limit)
			hPG.add(b, "broadcast Herald PostgreSQL", r, res, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	what := fmt.Sprintf("broadcast to %s devices, %%s, fake FCM (HTTP/1.1, 64 connections)", thousands(int64(o.devices)))
	if o.preferences {
		what += ", every owner's preferences and quiet hours stored (category " + preferenceCategory + ")"
	}
	if o.selected["broadcast-sqlite"] {
		b.sendRow(fmt.Sprintf(what, "SQLite"), hSQ, ceil)
	}
	if o.selected["broadcast-pg"] {
		b.sendRow(fmt.Sprintf(what, "PostgreSQL"), hPG, ceil)
	}
	return nil
}

// broadcastLimit bounds one broadcast: -broadcast-limit, or a minute plus
// a second per 2,000 devices.
func (o *options) broadcastLimit(devices int) time.Duration {
	if o.sendLimit > 0 {
		return o.sendLimit
	}
	return time.Minute + time.Duration(devices/2000)*time.Second
}

// millionMeasure: one round of a 1,000,000-device broadcast on PostgreSQL
// and the bare sender, in a schema of its own.
func millionMeasure(ctx context.Context, k *kit, o *options, b *board) error {
	const n = 1_000_000
	s := &site{key: "postgres-1m", name: "PostgreSQL (1M devices)"}
	url, err := k.newPostgresSchema(ctx, "million")
	if err != nil {
		return err
	}
	s.dbURL = url
	if err := k.seed(ctx, s, min(o.users, 8), n, spreadDevices); err != nil {
		return fmt.Errorf("seed %s: %w", s.name, err)
	}
	h, c := &sendSeries{}, &sendSeries{}
	k.quiesce(ctx)
	res, err := k.heraldBroadcast(ctx, s, "broadcast-1m", o.broadcastLimit(n))
	h.add(b, "broadcast 1M Herald PostgreSQL", 1, res, err)
	k.quiesce(ctx)
	res, err = bareSend(ctx, k.fakeURL, fcmProject, n, o.pushWorkers, deviceToken)
	c.add(b, "broadcast 1M ceiling (bare sender)", 1, res, err)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r := row{measure: "broadcast to 1,000,000 devices, PostgreSQL (one round)", target: "< 75 s, RSS < 100 MiB"}
	hs, cs := h.median(), c.median()
	r.herald, r.ceiling = sendCell(hs, true), sendCell(cs, false)
	_, r.ratio = pairedRatio(h.rates(), c.rates())
	if hs == nil || hs.TimedOut || hs.Sent != n || hs.Elapsed >= 75*time.Second || hs.HWM >= 100*1024 || hs.Note != "" {
		r.target += " MISSED"
	}
	b.rows = append(b.rows, r)
	return nil
}

// sendCell shows a broadcast: its rate and time (seconds first for the
// million), and Herald's memory.
func sendCell(r *sendResult, withMemory bool) string {
	if r == nil {
		return "failed"
	}
	v := fmt.Sprintf("%s/s (%.1f s)", rate(r.PerSec()), r.Elapsed.Seconds())
	if r.TimedOut {
		v = fmt.Sprintf("not finished in %.1f s: %s sent, %s/s", r.Elapsed.Seconds(), thousands(r.Sent), rate(r.PerSec()))
	}
	if withMemory {
		v += fmt.Sprintf(", peak RSS %s (VmHWM %s)", mib(r.PeakRSS), mib(r.HWM))
	}
	return v
}

// pairedRatio is the median over the rounds both sides completed of
// Herald's rate over the ceiling's in the same round: interleaved rounds
// pair each Herald run with the ceiling run beside it.
func pairedRatio(h, c map[int]float64) (float64, string) {
	var rs []float64
	for round, hv := range h {
		if cv, ok := c[round]; ok && cv > 0 {
			rs = append(rs, hv/cv)
		}
	}
	if len(rs) == 0 {
		return math.NaN(), "–"
	}
	return ratio(median(rs), 1)
}

// loadSeries collects the rounds of one side of a closed-loop measure.
type loadSeries struct {
	byRound map[int]float64 // rate
	p99s    []float64       // ms
	cpus    []float64       // server CPU per operation, µs, where measured
	steals  []float64       // steal share of the machine in the window, %
	fails   []string
}

func (s *loadSeries) add(b *board, what string, round int, res loadResult, err error) {
	if err != nil {
		logf("%s, round %d: FAILED: %v", what, round, err)
		b.notes = append(b.notes, fmt.Sprintf("%s, round %d failed: %v", what, round, firstLine(err.Error())))
		return
	}
	extra := ""
	if c, m := res.CPUPerOp(); c > 0 {
		server := float64(c) / float64(time.Microsecond)
		extra += ", CPU per op: server " + cpuPerOp(server) + ", machine " + cpuPerOp(float64(m)/float64(time.Microsecond))
		s.cpus = append(s.cpus, server)
	}
	if res.Steal >= 0 {
		extra += fmt.Sprintf(", steal %.0f %%", 100*res.Steal)
		s.steals = append(s.steals, 100*res.Steal)
	}
	logf("%s, round %d: %s/s, p99 %s (%d in %s)%s", what, round, rate(res.PerSec()), ms(res.P99()), res.OK, res.Window, extra)
	if f := res.Failures(); f != "" {
		logf("  not 2xx: %s", f)
		b.notes = append(b.notes, fmt.Sprintf("%s, round %d: answers that were not 2xx: %s", what, round, f))
		s.fails = append(s.fails, f)
	}
	if res.LoggedErrors > 0 {
		logf("  Herald logged %d ERROR lines, the first: %s", res.LoggedErrors, res.FirstLoggedError)
		b.notes = append(b.notes, fmt.Sprintf("%s, round %d: Herald logged %d ERROR lines, the first: %s", what, round, res.LoggedErrors, res.FirstLoggedError))
		s.fails = append(s.fails, "logged errors")
	}
	if s.byRound == nil {
		s.byRound = map[int]float64{}
	}
	s.byRound[round] = res.PerSec()
	s.p99s = append(s.p99s, float64(res.P99())/float64(time.Millisecond))
}

func (s *loadSeries) rates() []float64 { return slices.Collect(maps.Values(s.byRound)) }

// sendSeries collects the rounds of one side of a broadcast measure.
type sendSeries struct{ byRound map[int]sendResult }

func (s *sendSeries) add(b *board, what string, round int, res sendResult, err error) {
	if err != nil {
		logf("%s, round %d: FAILED: %v", what, round, err)
		b.notes = append(b.notes, fmt.Sprintf("%s, round %d failed: %v", what, round, firstLine(err.Error())))
		return
	}
	mem := ""
	if res.HWM > 0 {
		mem = fmt.Sprintf(", RSS peak %s, VmHWM %s", mib(res.PeakRSS), mib(res.HWM))
	}
	logf("%s, round %d: %s sent in %.2f s = %s/s%s", what, round, thousands(res.Sent), res.Elapsed.Seconds(), rate(res.PerSec()), mem)
	if res.Note != "" || res.Failed > 0 {
		n := res.Note
		if n == "" {
			n = fmt.Sprintf("%d failed", res.Failed)
		}
		logf("  %s", n)
		b.notes = append(b.notes, fmt.Sprintf("%s, round %d: %s", what, round, n))
	}
	if res.Elapsed > 0 {
		if s.byRound == nil {
			s.byRound = map[int]sendResult{}
		}
		s.byRound[round] = res
	}
}

func (s *sendSeries) rates() map[int]float64 {
	out := map[int]float64{}
	for r, res := range s.byRound {
		out[r] = res.PerSec()
	}
	return out
}

// median returns the run with the median rate (the lower middle for an
// even count), nil for none.
func (s *sendSeries) median() *sendResult {
	if len(s.byRound) == 0 {
		return nil
	}
	r := slices.Collect(maps.Values(s.byRound))
	slices.SortFunc(r, func(a, b sendResult) int { return cmpFloat(a.PerSec(), b.PerSec()) })
	return &r[(len(r)-1)/2]
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

type row struct{ measure, herald, ceiling, ratio, target string }

// board is the final table and its notes.
type board struct {
	opts   *options
	commit string
	rows   []row
	notes  []string
}

// loadRow adds a closed-loop measure: the medians of each side's rates
// (and p99 latencies when withP99), and the median of the per-round ratios.
func (b *board) loadRow(measure string, h, c *loadSeries, hUnit, cUnit string, withP99 bool, target float64) {
	cell := func(s *loadSeries, unit string) string {
		if len(s.byRound) == 0 {
			return "failed"
		}
		v := rate(median(s.rates())) + unit
		if withP99 {
			v += fmt.Sprintf(", p99 %.1f ms", median(s.p99s))
		}
		if len(s.cpus) > 0 {
			v += ", " + cpuPerOp(median(s.cpus)) + " CPU per request"
		}
		if len(s.fails) > 0 {
			v += " (errors: see notes)"
		}
		return v
	}
	r := row{measure: measure, herald: cell(h, hUnit), ceiling: cell(c, cUnit)}
	if st := slices.Concat(h.steals, c.steals); len(st) > 0 && slices.Max(st) >= 5 {
		b.notes = append(b.notes, fmt.Sprintf("%s: the hypervisor stole up to %.0f %% of the machine's CPU time in a window (median %.0f %%); rounds with steal are slower on either side.",
			measure, slices.Max(st), median(st)))
	}
	x, s := pairedRatio(h.byRound, c.byRound)
	r.ratio = s
	r.target = fmt.Sprintf("≥ %.2g", target)
	if math.IsNaN(x) || x < target || len(h.fails) > 0 {
		r.target += " MISSED"
	}
	b.rows = append(b.rows, r)
}

// sendRow adds a broadcast measure: each side's median run and the median
// of the per-round ratios.
func (b *board) sendRow(measure string, h, c *sendSeries) {
	r := row{measure: measure, target: "≥ 0.8"}
	hs, cs := h.median(), c.median()
	r.herald, r.ceiling = sendCell(hs, true), sendCell(cs, false)
	x, s := pairedRatio(h.rates(), c.rates())
	r.ratio = s
	missed := math.IsNaN(x) || x < 0.8
	for _, res := range h.byRound {
		missed = missed || res.Note != "" || res.TimedOut
	}
	if missed {
		r.target += " MISSED"
	}
	b.rows = append(b.rows, r)
}

func (b *board) print(w *os.File) {
	o := b.opts
	fmt.Fprintf(w, "\nHerald %s, %s, %d CPUs, %s; %d interleaved round(s): medians, and Herald/ceiling is the median of the per-round ratios; users/me and login: %s windows after %s warm-up.\n\n",
		b.commit, time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), runtime.Version(), o.rounds, o.duration, o.warmup)
	if o.neighbour > 0 {
		fmt.Fprintf(w, "A CPU-bound neighbour of %d busy threads ran beside every measure (-neighbour).\n\n", o.neighbour)
	}
	fmt.Fprintln(w, "| Measure | Herald | Ceiling | Herald/ceiling | Target |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, r := range b.rows {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", r.measure, r.herald, r.ceiling, r.ratio, r.target)
	}
	if len(b.notes) > 0 {
		fmt.Fprintln(w, "\nNotes:")
		for _, n := range b.notes {
			fmt.Fprintln(w, "- "+n)
		}
	}
}
