package main

// The soak's sampler: every interval, what Herald's process holds (from
// /proc), what its Go runtime reports (/metrics), its database
// connections, its job lag, and each operation's latencies in the window.

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// series is one sampled quantity.
type series struct {
	Name string
	Unit string
	Rule flatRule
	T    []float64 // seconds since the load started
	V    []float64
}

type soakSampler struct {
	p           *heraldProc
	s           *site
	metricsURL  string
	l           *soakLoad
	http        *http.Client
	mu          sync.Mutex
	byName      map[string]*series
	order       []string
	sampleError string // the first sample that could not be read
	// latencyRel is the latencies' share of the mean (their rules' Rel).
	latencyRel float64
	pg         *pgx.Conn
	sq         *sql.DB
}

func newSoakSampler(p *heraldProc, s *site, metricsAddr string, l *soakLoad) *soakSampler {
	return &soakSampler{p: p, s: s, metricsURL: "http://" + metricsAddr + "/metrics", l: l,
		http: &http.Client{Timeout: 10 * time.Second}, byName: map[string]*series{}, latencyRel: ruleLatencyP50.Rel}
}

// The flatness rules, per kind of series (see slope.go and the README):
// a rise over the judged part of the run within the larger of a share of
// the mean, an absolute floor, and three times the series' own noise.
var (
	ruleMemory     = flatRule{Rel: 0.10, Abs: 8, NoiseK: 3}  // MiB
	ruleCount      = flatRule{Rel: 0.10, Abs: 20, NoiseK: 3} // goroutines, open files
	ruleConns      = flatRule{Rel: 0, Abs: 4, NoiseK: 3}
	ruleLag        = flatRule{Rel: 0.5, Abs: 2, NoiseK: 3}   // seconds
	ruleQueue      = flatRule{Rel: 0.5, Abs: 100, NoiseK: 3} // jobs, parked deliveries, undelivered events
	ruleLatencyP50 = flatRule{Rel: 0.5, Abs: 5, NoiseK: 3}   // ms
	ruleLatencyP99 = flatRule{Rel: 0.5, Abs: 25, NoiseK: 3}  // ms
)

func (sm *soakSampler) add(name, unit string, rule flatRule, t, v float64) {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	s, ok := sm.byName[name]
	if !ok {
		s = &series{Name: name, Unit: unit, Rule: rule}
		sm.byName[name] = s
		sm.order = append(sm.order, name)
	}
	s.T = append(s.T, t)
	s.V = append(s.V, v)
}

func (sm *soakSampler) noteError(ctx context.Context, what string, err error) {
	if ctx.Err() != nil { // the run ended mid-sample
		return
	}
	sm.mu.Lock()
	defer sm.mu.Unlock()
	if sm.sampleError == "" {
		sm.sampleError = fmt.Sprintf("%s: %v", what, err)
		logf("  sample: %s", sm.sampleError)
	}
}

func (sm *soakSampler) all() []*series {
	sm.mu.Lock()
	defer sm.mu.Unlock()
	out := make([]*series, 0, len(sm.order))
	for _, n := range sm.order {
		out = append(out, sm.byName[n])
	}
	return out
}

// run samples every interval until ctx ends.
func (sm *soakSampler) run(ctx context.Context, start time.Time, interval time.Duration) {
	defer sm.closeDB()
	sm.l.takeWindow() // the capacity run's latencies are not the soak's
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			sm.sample(ctx, now.Sub(start).Seconds(), interval)
		}
	}
}

func (sm *soakSampler) sample(ctx context.Context, t float64, interval time.Duration) {
	pid := sm.p.Pid()
	if rss, _, err := memStatus(pid); err == nil {
		sm.add("rss", "MiB", ruleMemory, t, float64(rss)/1024)
	} else {
		sm.noteError(ctx, "RSS", err)
	}
	if n, err := openFDs(pid); err == nil {
		sm.add("open files", "", ruleCount, t, float64(n))
	} else {
		sm.noteError(ctx, "open files", err)
	}
	if m, err := sm.scrape(ctx); err == nil {
		if v, ok := m["go_goroutines"]; ok {
			sm.add("goroutines", "", ruleCount, t, v)
		}
		if v, ok := m["go_memstats_heap_inuse_bytes"]; ok {
			sm.add("heap in use", "MiB", ruleMemory, t, v/(1<<20))
		}
	} else {
		sm.noteError(ctx, "/metrics", err)
	}
	if n, err := sm.dbConns(ctx, pid); err == nil {
		sm.add("database connections", "", ruleConns, t, float64(n))
	} else {
		sm.noteError(ctx, "database connections", err)
	}
	if lag, avail, parkedAge, parked, err := sm.jobLag(ctx); err == nil {
		sm.add("job lag", "s", ruleLag, t, lag)
		sm.add("jobs available", "", ruleQueue, t, avail)
		sm.add("webhook parked age", "s", ruleLag, t, parkedAge)
		sm.add("webhook parked", "", ruleQueue, t, parked)
	} else {
		sm.noteError(ctx, "job lag", err)
	}
	pending := sm.l.recv.missing(sm.l.expectedEvents())
	sm.add("webhook events undelivered", "", ruleQueue, t, float64(len(pending)))
	for name, lat := range sm.l.takeWindow() {
		// A broadcast is one request every few minutes: no series.
		if len(lat) == 0 || name == "broadcast" {
			continue
		}
		slices.Sort(lat)
		p50, p99 := ruleLatencyP50, ruleLatencyP99
		p50.Rel, p99.Rel = sm.latencyRel, sm.latencyRel
		sm.add("p50 "+name, "ms", p50, t, float64(percentile(lat, 50))/float64(time.Millisecond))
		sm.add("p99 "+name, "ms", p99, t, float64(percentile(lat, 99))/float64(time.Millisecond))
		sm.add("rate "+name, "/s", flatRule{}, t, float64(len(lat))/interval.Seconds())
	}
}

// openFDs counts the files pid has open.
func openFDs(pid int) (int, error) {
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0, err
	}
	return len(ents), nil
}

// scrape reads the unlabelled samples of Herald's /metrics.
func (sm *soakSampler) scrape(ctx context.Context) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", sm.metricsURL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := sm.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		name, val, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(val), 64); err == nil {
			out[name] = v
		}
	}
	return out, sc.Err()
}

// dbConns is Herald's database connections: on PostgreSQL its backends
// (by the application name the soak gave it), on SQLite the descriptors
// it holds open on the database's files (the database, its WAL and
// shared-memory index: each connection holds the first two).
func (sm *soakSampler) dbConns(ctx context.Context, pid int) (int, error) {
	if sm.s.postgres() {
		conn, err := sm.pgConn(ctx)
		if err != nil {
			return 0, err
		}
		var n int
		err = conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1`, soakAppName()).Scan(&n)
		return n, err
	}
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	file := strings.TrimPrefix(sm.s.dbURL, "sqlite:")
	n := 0
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && target == file {
			n++
		}
	}
	return n, nil
}

func (sm *soakSampler) pgConn(ctx context.Context) (*pgx.Conn, error) {
	if sm.pg != nil && !sm.pg.IsClosed() {
		return sm.pg, nil
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// The kit's own connection, without Herald's application name.
	conn, err := pgx.Connect(cctx, strings.Replace(sm.s.dbURL, "application_name="+soakAppName(), "application_name=herald-soak-sampler", 1))
	if err != nil {
		return nil, err
	}
	sm.pg = conn
	return conn, nil
}

func (sm *soakSampler) closeDB() {
	if sm.pg != nil {
		sm.pg.Close(context.Background())
	}
	if sm.sq != nil {
		sm.sq.Close()
	}
}

// Job lag: the age of the oldest River job that is due and not yet taken
// (available, scheduled in the past), how many such jobs there are, and
// the same of the webhook deliveries parked for a slot of their endpoint.
const (
	jobLagPG = `SELECT
	COALESCE(EXTRACT(EPOCH FROM now() - min(scheduled_at)), 0)::float8, count(*)::float8
	FROM river_job WHERE state = 'available' AND scheduled_at <= now()`
	parkedPG     = `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(parked_at)), 0)::float8, count(*)::float8 FROM webhook_parked`
	jobLagSQLite = `SELECT
	COALESCE((julianday('now') - julianday(min(scheduled_at))) * 86400.0, 0.0), CAST(count(*) AS REAL)
	FROM river_job WHERE state = 'available' AND julianday(scheduled_at) <= julianday('now')`
	parkedSQLite = `SELECT COALESCE((julianday('now') - julianday(min(parked_at))) * 86400.0, 0.0), CAST(count(*) AS REAL) FROM webhook_parked`
)

// drainJobs waits until no job is due and no webhook delivery is parked,
// in two polls in a row (a job that ends may queue the next), and
// returns how long that took; past limit it fails.
func (sm *soakSampler) drainJobs(ctx context.Context, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	quiet := 0
	for {
		_, avail, _, parked, err := sm.jobLag(ctx)
		if err != nil {
			return 0, fmt.Errorf("jobs left: %w", err)
		}
		if avail == 0 && parked == 0 {
			if quiet++; quiet == 2 {
				return time.Since(start), nil
			}
		} else {
			quiet = 0
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("%.0f jobs due and %.0f webhook deliveries parked %s after the load stopped", avail, parked, limit)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (sm *soakSampler) jobLag(ctx context.Context) (lag, avail, parkedAge, parked float64, err error) {
	if sm.s.postgres() {
		conn, err := sm.pgConn(ctx)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		if err := conn.QueryRow(ctx, jobLagPG).Scan(&lag, &avail); err != nil {
			return 0, 0, 0, 0, err
		}
		err = conn.QueryRow(ctx, parkedPG).Scan(&parkedAge, &parked)
		return lag, avail, parkedAge, parked, err
	}
	if sm.sq == nil {
		db, err := openSQLite(sm.s.dbURL)
		if err != nil {
			return 0, 0, 0, 0, err
		}
		db.SetMaxOpenConns(1)
		sm.sq = db
	}
	if err := sm.sq.QueryRowContext(ctx, jobLagSQLite).Scan(&lag, &avail); err != nil {
		return 0, 0, 0, 0, err
	}
	err = sm.sq.QueryRowContext(ctx, parkedSQLite).Scan(&parkedAge, &parked)
	return lag, avail, parkedAge, parked, err
}
