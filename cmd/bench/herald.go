package main

// Herald as the kit runs it: the real binary (`herald serve`), started
// fresh for each measurement with its configuration from scratch (nothing
// from the kit's own environment but -env), seeded with its own commands
// (`herald admin create`, `herald devices import`), driven over HTTP.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite"
)

const (
	benchPassword    = "BenchPass123"
	adminEmail       = "bench-admin@example.com"
	broadcastSubject = "Maintenance"
	broadcastContent = "Tonight 02:00 UTC"
	fcmProject       = "herald-bench"
	highLimit        = "1000000000" // requests per minute: nothing is refused
)

// site is one Herald database and what was seeded in it.
type site struct {
	key     string // "postgres", "sqlite", "postgres-1m"
	name    string // for people
	dbURL   string
	users   []string // emails of the load's accounts
	tokens  []string // their access tokens, in the same order
	subs    []string // their account ids
	admin   string   // the operator's access token
	devices int
}

func (s *site) postgres() bool { return strings.HasPrefix(s.dbURL, "postgres") }

// kit holds what every measurement shares.
type kit struct {
	bin      string            // the herald binary
	self     string            // this program, for its subcommands
	tmp      string            // scratch directory
	env      map[string]string // Herald's configuration, without address and database
	fakeURL  string
	pgBase   string   // the server's URL the schemas are made in
	schemas  []string // PostgreSQL schemas to drop at the end
	logSeq   int
	logMu    sync.Mutex
	jwksFile string
	commit   string
	// fillerAccounts is how many accounts that never log in each site
	// (and the ceiling's table) holds beside the load's.
	fillerAccounts int
	pgUsed         bool // a schema was made: quiesce checkpoints PostgreSQL
	// preferences: every account stores its notification preferences
	// and broadcasts name a category (-preferences).
	preferences bool
}

func (k *kit) logPath(name string) string {
	k.logMu.Lock()
	defer k.logMu.Unlock()
	k.logSeq++
	return filepath.Join(k.tmp, fmt.Sprintf("%02d-%s.log", k.logSeq, name))
}

func (k *kit) heraldEnv(s *site, extra map[string]string) []string {
	env := maps.Clone(k.env)
	env["HERALD_DATABASE_URL"] = s.dbURL
	maps.Copy(env, extra)
	out := make([]string, 0, len(env))
	for _, key := range slices.Sorted(maps.Keys(env)) {
		out = append(out, key+"="+env[key])
	}
	return out
}

// command runs a herald command against s and returns its standard output.
func (k *kit) command(ctx context.Context, s *site, limit time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = k.heraldEnv(s, nil)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = childAttr()
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("herald %s: %w\n%s", strings.Join(args, " "), err, tail(stderr.String(), 20))
	}
	return stdout.String(), nil
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// heraldProc is one running `herald serve`.
type heraldProc struct {
	*child
	addr    string
	baseURL string
}

// start runs Herald on s until stop; label names its log.
func (k *kit) start(ctx context.Context, s *site, label string) (*heraldProc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	c, err := startChild("herald "+label, k.bin, []string{"serve"}, k.heraldEnv(s, map[string]string{"HERALD_ADDR": addr}),
		k.logPath("herald-"+s.key+"-"+label))
	if err != nil {
		return nil, err
	}
	p := &heraldProc{child: c, addr: addr, baseURL: "http://" + addr}
	if err := waitHTTP(ctx, c, p.baseURL+"/readyz", 90*time.Second); err != nil {
		c.Stop(5 * time.Second)
		return nil, err
	}
	return p, nil
}

func (p *heraldProc) stop() { p.Stop(30 * time.Second) }

// logMark is the size of the log now: loggedErrors looks only at what was
// written before it, so that errors of the shutdown (River's maintenance
// cancelled mid-query) do not count against the measurement.
func (p *heraldProc) logMark() int64 {
	st, err := os.Stat(p.log.Name())
	if err != nil {
		return 0
	}
	return st.Size()
}

// loggedErrors counts the ERROR lines of the log up to mark and returns
// the first.
func (p *heraldProc) loggedErrors(mark int64) (int, string) {
	b, err := os.ReadFile(p.log.Name())
	if err != nil {
		return 0, ""
	}
	b = b[:min(int64(len(b)), mark)]
	n, first := 0, ""
	for line := range bytes.Lines(b) {
		if bytes.Contains(line, []byte(`"level":"ERROR"`)) {
			if n == 0 {
				first = strings.TrimSpace(string(line))
				if len(first) > 300 {
					first = first[:300] + "…"
				}
			}
			n++
		}
	}
	return n, first
}

// newPostgresSchema makes a fresh schema on the server and returns a URL
// whose search_path is it.
func (k *kit) newPostgresSchema(ctx context.Context, suffix string) (string, error) {
	conn, err := pgx.Connect(ctx, k.pgBase)
	if err != nil {
		return "", fmt.Errorf("PostgreSQL at %s: %w", k.pgBase, err)
	}
	defer conn.Close(ctx)
	name := fmt.Sprintf("herald_bench_%d_%s", os.Getpid(), suffix)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+name+" CASCADE"); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", err
	}
	k.schemas = append(k.schemas, name)
	k.pgUsed = true
	return withSearchPath(k.pgBase, name)
}

func withSearchPath(base, schema string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

// vacuumSchema runs VACUUM ANALYZE on every table of the URL's schema that
// holds rows; empty tables (deliveries, jobs) are left as a fresh install
// has them, so that their statistics do not claim "empty" once they grow.
func vacuumSchema(ctx context.Context, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return err
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, t := range tables {
		var rows bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+t+")").Scan(&rows); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
		if !rows {
			continue
		}
		if _, err := conn.Exec(ctx, "VACUUM ANALYZE "+t); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// cleanup ends the run: it stops every child process, then drops the
// run's schemas and removes its scratch directory unless keep.
func (k *kit) cleanup(keep bool) {
	stopAllChildren()
	if keep {
		logf("kept %s and PostgreSQL schemas %v", k.tmp, k.schemas)
		return
	}
	k.dropSchemas()
	if k.tmp != "" {
		os.RemoveAll(k.tmp)
	}
}

// dropSchemas removes every schema the run made.
func (k *kit) dropSchemas() {
	if len(k.schemas) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, k.pgBase)
	if err != nil {
		logf("cleanup: %v (schemas %v left behind)", err, k.schemas)
		return
	}
	defer conn.Close(ctx)
	for _, s := range k.schemas {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+s+" CASCADE"); err != nil {
			logf("cleanup: drop schema %s: %v", s, err)
		}
	}
	k.schemas = nil
}

// seed creates the admin and the load's accounts, imports devices (device
// i on account owner(i, the load's emails)) and logs everyone in through a
// short-lived Herald (so the Herald that is measured later has never
// checked a password).
func (k *kit) seed(ctx context.Context, s *site, users, devices int, owner deviceOwner) error {
	t0 := time.Now()
	emails := []string{adminEmail}
	for i := range users {
		emails = append(emails, fmt.Sprintf("bench-user-%03d@example.com", i))
	}
	// Two at a time: each is a process that hashes a password.
	errs := make([]error, len(emails))
	sem := make(chan struct{}, 2)
	var wg sync.WaitGroup
	for i, e := range emails {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, errs[i] = k.command(ctx, s, 2*time.Minute, "admin", "create", "--email", e, "--password", benchPassword)
		}()
		if i == 0 {
			wg.Wait() // the first one also applies the migrations
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.users = emails[1:]
	logf("%s: %d accounts in %.1f s", s.name, len(emails), time.Since(t0).Seconds())
	if k.fillerAccounts > 0 {
		t1 := time.Now()
		if err := insertFillerAccounts(ctx, s, k.fillerAccounts); err != nil {
			return fmt.Errorf("filler accounts: %w", err)
		}
		logf("%s: %s filler accounts in %.1f s (not measured)", s.name, thousands(int64(k.fillerAccounts)), time.Since(t1).Seconds())
	}

	if devices > 0 {
		t1 := time.Now()
		file := filepath.Join(k.tmp, "devices-"+s.key+".jsonl")
		if err := writeDevices(file, devices, s.users, owner); err != nil {
			return err
		}
		out, err := k.command(ctx, s, 20*time.Minute, "devices", "import", "--file", file)
		os.Remove(file)
		if err != nil {
			return err
		}
		if want := fmt.Sprintf("imported %d,", devices); !strings.HasPrefix(strings.TrimSpace(out), want) {
			return fmt.Errorf("devices import printed %q, want %q…", strings.TrimSpace(out), want)
		}
		s.devices = devices
		if k.preferences {
			if err := insertPreferences(ctx, s); err != nil {
				return fmt.Errorf("preferences: %w", err)
			}
		}
		logf("%s: %s devices imported in %.1f s (not measured)", s.name, thousands(int64(devices)), time.Since(t1).Seconds())
	}
	if s.postgres() {
		// As a database that has been in service: statistics gathered and
		// the fresh rows vacuumed, rather than autovacuum doing it in the
		// middle of a measurement.
		if err := vacuumSchema(ctx, s.dbURL); err != nil {
			return fmt.Errorf("vacuum: %w", err)
		}
	}

	p, err := k.start(ctx, s, "seed")
	if err != nil {
		return err
	}
	defer p.stop()
	if s.admin, _, err = login(ctx, p.baseURL, adminEmail); err != nil {
		return err
	}
	s.tokens, s.subs = make([]string, len(s.users)), make([]string, len(s.users))
	for i, e := range s.users {
		if s.tokens[i], s.subs[i], err = login(ctx, p.baseURL, e); err != nil {
			return err
		}
	}
	return nil
}

// fillerAccountsSQL copies the first load account n times under other
// ids, emails and referral codes: the same statement on both databases.
const fillerAccountsSQL = `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < %d)
INSERT INTO accounts (id, email, password_hash, email_verified_at, referral_code, created_at, subscription_plan, subscription_expires_at, subscription_updated_at)
SELECT 'filler-' || n, 'filler-' || n || '@bench.invalid', a.password_hash, a.email_verified_at, 'FILLER' || n, a.created_at,
	a.subscription_plan, a.subscription_expires_at, a.subscription_updated_at
FROM g, accounts a WHERE a.email = '%s'`

// insertFillerAccounts adds n accounts that
// never log in, so that the tables have the size of a service in use and
// lookups by id go through the indexes as they would in production, not
// through a scan of a handful of rows. Written with SQL: creating them
// with Herald's command would hash n passwords.
func insertFillerAccounts(ctx context.Context, s *site, n int) error {
	return execSQL(ctx, s, fmt.Sprintf(fillerAccountsSQL, n, s.users[0]))
}

// execSQL runs one of the kit's own statements on site s.
func execSQL(ctx context.Context, s *site, q string) error {
	if s.postgres() {
		conn, err := pgx.Connect(ctx, s.dbURL)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, q)
		return err
	}
	db, err := openSQLite(s.dbURL)
	if err != nil {
		return err
	}
	defer db.Close()
	_, err = db.ExecContext(ctx, q)
	return err
}

// preferencesSQL stores, for every account, the broadcast category
// (preferenceCategory) on for every channel: each device the broadcast
// reaches then has an owner whose stored choice the walk reads, and
// still gets the push, so the count is the ceiling's.
const preferencesSQL = `INSERT INTO notification_preferences (account_id, category, channel, enabled, updated_at)
SELECT a.id, '` + preferenceCategory + `', c.channel, TRUE, a.created_at FROM accounts a,
	(SELECT 'push' AS channel UNION ALL SELECT 'telegram' UNION ALL SELECT 'email' UNION ALL SELECT 'webPush' UNION ALL SELECT 'inbox') c`

// preferenceCategory is the category of -preferences broadcasts.
const preferenceCategory = "product"

// schedulesSQL gives every account a time zone and quiet hours: two
// hours, half a day from the run (the %d minutes), so that the walk reads
// and decides each device owner's schedule (issue 26's broadcast with
// quiet hours on) and holds no one: the count stays the ceiling's.
const schedulesSQL = `INSERT INTO notification_schedules (account_id, time_zone, quiet_start, quiet_end, updated_at)
SELECT a.id, 'Europe/Berlin', %d, %d, a.created_at FROM accounts a`

func insertPreferences(ctx context.Context, s *site) error {
	if err := execSQL(ctx, s, preferencesSQL); err != nil {
		return err
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		return err
	}
	now := time.Now().In(berlin)
	start := ((now.Hour()+11)%24)*60 + now.Minute()
	return execSQL(ctx, s, fmt.Sprintf(schedulesSQL, start, (start+120)%1440))
}

// openSQLite opens a site's SQLite file for the kit's own statements.
func openSQLite(dbURL string) (*sql.DB, error) {
	path, ok := strings.CutPrefix(dbURL, "sqlite:")
	if !ok {
		return nil, fmt.Errorf("not a SQLite URL: %s", dbURL)
	}
	return sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)")
}

// deviceToken is the push token of device i (the same on every site and
// in the bare sender).
func deviceToken(i int) string { return fmt.Sprintf("bench-device-token-%08d", i) }

// deviceOwner is the email of the account device i is imported on.
type deviceOwner func(i int, emails []string) string

// spreadDevices puts the devices on the load's accounts in turn.
func spreadDevices(i int, emails []string) string { return emails[i%len(emails)] }

func writeDevices(path string, n int, emails []string, owner deviceOwner) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := range n {
		fmt.Fprintf(w, `{"email":%q,"platform":"android","pushToken":%q}`+"\n", owner(i, emails), deviceToken(i))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

var apiClient = &http.Client{Timeout: 60 * time.Second}

// login logs email in through REST and returns the access token and the
// account id (the token's sub).
func login(ctx context.Context, baseURL, email string) (token, sub string, err error) {
	body, _ := json.Marshal(map[string]string{"email": email, "password": benchPassword})
	var out struct {
		Success bool
		Data    struct{ Token string }
		Error   json.RawMessage
	}
	if err := doJSON(ctx, http.MethodPost, baseURL+"/api/v1/auth/login", "", body, &out); err != nil {
		return "", "", fmt.Errorf("login %s: %w", email, err)
	}
	if !out.Success || out.Data.Token == "" {
		return "", "", fmt.Errorf("login %s: %s", email, out.Error)
	}
	parts := strings.Split(out.Data.Token, ".")
	var claims struct{ Sub string }
	if len(parts) == 3 {
		if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
			_ = json.Unmarshal(b, &claims)
		}
	}
	return out.Data.Token, claims.Sub, nil
}

func doJSON(ctx context.Context, method, url, bearer string, body []byte, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, tail(string(b), 5))
	}
	return nil
}

// graphql runs one operation and returns its data, or the first error.
func graphql(ctx context.Context, baseURL, bearer, doc string, vars map[string]any) (map[string]json.RawMessage, error) {
	body, _ := json.Marshal(map[string]any{"query": doc, "variables": vars})
	var out struct {
		Data   map[string]json.RawMessage
		Errors []struct {
			Message    string
			Extensions map[string]any
		}
	}
	if err := doJSON(ctx, http.MethodPost, baseURL+"/graphql", bearer, body, &out); err != nil {
		return nil, err
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("GraphQL: %s %v", out.Errors[0].Message, out.Errors[0].Extensions)
	}
	return out.Data, nil
}

const (
	sendAllDoc = `mutation SendAll($n: NotificationInput!, $c: String) { sendNotificationToAll(notification: $n, category: $c) { status message totalRecipients jobId } }`
	jobDoc     = `query Job($id: ID!) { notificationJob(id: $id) { status sent failed invalidTokens totalRecipients error } }`
	cancelDoc  = `mutation Cancel($id: ID!) { cancelNotificationJob(id: $id) { status } }`
)

type jobState struct {
	Status          string
	Sent            int64
	Failed          int64
	InvalidTokens   int64
	TotalRecipients int64
	Error           *string
}

func (j jobState) finished() bool {
	return j.Status != "queued" && j.Status != "running"
}

// jobPoll is how often the kit asks for a broadcast's state at first: the
// job's start and end are known to within the poll interval (startedAt and
// finishedAt are reported in whole seconds), and the queries (one row by
// primary key) cost Herald little.
const jobPoll = 25 * time.Millisecond

// heraldBroadcast starts Herald on s, broadcasts to every device, polls
// the job until it ends (or limit passes) and stops Herald. The rate is
// the job's sent over the time from the first poll that saw it started
// (not queued) to the first that saw it finished.
func (k *kit) heraldBroadcast(ctx context.Context, s *site, label string, limit time.Duration) (sendResult, error) {
	p, err := k.start(ctx, s, label)
	if err != nil {
		return sendResult{}, err
	}
	defer p.stop()
	sampler := sampleRSS(p.Pid())
	before, _, err := fakeCounts(k.fakeURL)
	if err != nil {
		sampler.Stop()
		return sendResult{}, err
	}
	var category any // the default, service
	if k.preferences {
		category = preferenceCategory
	}
	data, err := graphql(ctx, p.baseURL, s.admin, sendAllDoc, map[string]any{"n": map[string]any{
		"subject": broadcastSubject, "content": broadcastContent, "data": map[string]any{"screen": "status"},
	}, "c": category})
	if err != nil {
		sampler.Stop()
		return sendResult{}, fmt.Errorf("sendNotificationToAll: %w", err)
	}
	var queued struct {
		JobID           string
		TotalRecipients int64
	}
	if err := json.Unmarshal(data["sendNotificationToAll"], &queued); err != nil || queued.JobID == "" {
		sampler.Stop()
		return sendResult{}, fmt.Errorf("sendNotificationToAll answered %s", data["sendNotificationToAll"])
	}
	var res sendResult
	if queued.TotalRecipients != int64(s.devices) {
		res.Note = fmt.Sprintf("totalRecipients %d, want %d; ", queued.TotalRecipients, s.devices)
	}
	t0 := time.Now()
	deadline := t0.Add(limit)
	var job jobState
	var seenStart, seenEnd time.Time
	lastReport, lastSent := t0, int64(0)
	for {
		d, err := graphql(ctx, p.baseURL, s.admin, jobDoc, map[string]any{"id": queued.JobID})
		now := time.Now()
		if err != nil {
			sampler.Stop()
			return sendResult{}, fmt.Errorf("notificationJob: %w", err)
		}
		if err := json.Unmarshal(d["notificationJob"], &job); err != nil {
			sampler.Stop()
			return sendResult{}, err
		}
		if seenStart.IsZero() && (job.Status != "queued" || job.Sent > 0) {
			seenStart = now
		}
		if job.finished() {
			seenEnd = now
			break
		}
		if now.Sub(lastReport) >= 15*time.Second {
			logf("  … %s of %s sent, %s/s over the last %.0f s", thousands(job.Sent), thousands(queued.TotalRecipients),
				rate(float64(job.Sent-lastSent)/now.Sub(lastReport).Seconds()), now.Sub(lastReport).Seconds())
			lastReport, lastSent = now, job.Sent
		}
		if now.After(deadline) {
			// What was sent so far still gives a rate; the job is
			// cancelled so that it does not load the next measurement.
			res.TimedOut = true
			seenEnd = now
			if seenStart.IsZero() {
				seenStart = t0
			}
			_, _ = graphql(ctx, p.baseURL, s.admin, cancelDoc, map[string]any{"id": queued.JobID})
			res.Note += fmt.Sprintf("not finished after %s (%d of %d sent), cancelled; ", limit, job.Sent, queued.TotalRecipients)
			break
		}
		// 25 ms at first, then 0.5 % of the time so far (at most 250 ms):
		// the end is known to within 0.5 % and a long broadcast is not
		// polled thousands of times.
		time.Sleep(min(max(jobPoll, now.Sub(t0)/200), 10*jobPoll))
	}
	res.PeakRSS = sampler.Stop()
	_, res.HWM, _ = memStatus(p.Pid())
	res.HWM = max(res.HWM, res.PeakRSS) // VmHWM is updated lazily
	res.Sent, res.Failed = job.Sent, job.Failed
	res.Elapsed = seenEnd.Sub(seenStart)
	if job.finished() && job.Status != "completed" {
		res.Note += "job " + job.Status + "; "
	}
	if job.Error != nil && *job.Error != "" {
		res.Note += "job error: " + *job.Error + "; "
	}
	if job.Failed > 0 || job.InvalidTokens > 0 {
		res.Note += fmt.Sprintf("%d failed, %d invalid tokens; ", job.Failed, job.InvalidTokens)
	}
	if after, _, err := fakeCounts(k.fakeURL); err == nil && after-before != job.Sent && !res.TimedOut {
		res.Note += fmt.Sprintf("the fake got %d messages for %d sent; ", after-before, job.Sent)
	}
	mark := p.logMark()
	p.stop()
	if n, first := p.loggedErrors(mark); n > 0 {
		res.Note += fmt.Sprintf("Herald logged %d ERROR lines, the first: %s; ", n, first)
	}
	res.Note = strings.TrimSuffix(res.Note, "; ")
	return res, nil
}

// loadOnHerald starts Herald on s, runs a closed loop of the same request
// against it, and stops it; peak RSS and VmHWM are sampled throughout, and
// with settle > 0 VmRSS is read once more that long after the load.
func (k *kit) loadOnHerald(ctx context.Context, s *site, label string, workers int, warmup, window, settle time.Duration,
	request func(host string, worker int) []byte) (loadResult, memory, error) {
	p, err := k.start(ctx, s, label)
	if err != nil {
		return loadResult{}, memory{}, err
	}
	defer p.stop()
	sampler := sampleRSS(p.Pid())
	res, err := closedLoop(ctx, workers, warmup, window, p.Pid(), func(i int) (op, func(), error) {
		rc := newRawConn(p.addr, request(p.addr, i), 60*time.Second)
		return rc.Do, rc.Close, nil
	})
	var m memory
	m.Peak = sampler.Stop()
	_, m.HWM, _ = memStatus(p.Pid())
	m.HWM = max(m.HWM, m.Peak) // VmHWM is updated lazily
	if settle > 0 && err == nil {
		select {
		case <-time.After(settle):
		case <-ctx.Done():
		}
		m.After, _, _ = memStatus(p.Pid())
	}
	mark := p.logMark()
	p.stop()
	res.LoggedErrors, res.FirstLoggedError = p.loggedErrors(mark)
	return res, m, err
}

// memory is what the sampler saw of a Herald process, in KiB.
type memory struct {
	Peak  int64 // largest VmRSS sampled during the load
	HWM   int64 // VmHWM at the end of the load (the kernel's peak since start)
	After int64 // VmRSS a while after the load
}

func usersMeRequest(tokens []string) func(host string, worker int) []byte {
	return func(host string, worker int) []byte {
		return httpRequest("GET", host, "/api/v1/users/me", map[string]string{"Authorization": "Bearer " + tokens[worker%len(tokens)]}, nil)
	}
}

func loginRequest(emails []string) func(host string, worker int) []byte {
	return func(host string, worker int) []byte {
		body, _ := json.Marshal(map[string]string{"email": emails[worker%len(emails)], "password": benchPassword})
		return httpRequest("POST", host, "/api/v1/auth/login", map[string]string{"Content-Type": "application/json"}, body)
	}
}
