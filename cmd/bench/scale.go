package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/jackc/pgx/v5"
)

// The scale measure (issue 23, "ten times larger"): PostgreSQL holding
// -scale-accounts accounts and -scale-devices devices, seeded by SQL (not
// measured: creating them through Herald would hash a million passwords),
// then the operator's reads at that size, each a sequence of requests to
// one Herald process:
//   - the console overview (target: p99 under 200 ms);
//   - the admin user search by email prefix, random prefixes of 2 to 8
//     characters (target: p99 under 50 ms);
//   - the user list paged by cursor from the first page and from 1 %,
//     50 % and 99 % of the way down (target: the deepest page costs what
//     the first does, within a factor of 2);
//   - with -scale-broadcast, a broadcast to every device with a valid
//     token, its peak RSS (target: under 150 MiB) and the database's size
//     before and after it.

// scaleSeedSQL adds accounts and devices in bulk. Emails are spread by a
// hash of the account's number, not in the order of the ids, as real
// addresses are; ids sort as Herald's time-ordered ids do (newest last).
// One device in a hundred has a token a provider called dead, one in a
// hundred none; two in three are Android phones, the rest iPhones.
const scaleSeedSQL = `
INSERT INTO accounts (id, email, password_hash, email_verified_at, referral_code, created_at, subscription_plan, subscription_expires_at, subscription_updated_at)
SELECT 'scale-' || lpad(n::text, 9, '0'), 'u' || (('x' || substr(md5(n::text), 1, 8))::bit(32)::bigint %% 100000000) || '-' || n || '@scale.example',
	a.password_hash, a.email_verified_at, 'SCALE' || n, now() - ((%[1]d - n) || ' minutes')::interval,
	a.subscription_plan, a.subscription_expires_at, a.subscription_updated_at
FROM generate_series(1, %[1]d) n, accounts a WHERE a.email = '%[3]s';
INSERT INTO devices (id, account_id, platform, name, push_token, push_token_status, active, created_at, last_seen_at)
SELECT 'scale-device-' || lpad(n::text, 10, '0'), 'scale-' || lpad((1 + n %% %[1]d)::text, 9, '0'),
	CASE WHEN n %% 3 = 0 THEN 'ios' ELSE 'android' END, 'Phone',
	CASE WHEN n %% 100 = 1 THEN NULL ELSE 'scale-token-' || n END,
	CASE WHEN n %% 100 = 2 THEN 'invalid' ELSE 'valid' END, TRUE, now(), now()
FROM generate_series(1, %[2]d) n`

// scaleValidDevices is how many of n seeded devices a broadcast reaches.
func scaleValidDevices(n int) int {
	reach := 0
	for _, r := range []int{1, 2} { // n % 100 == 1 (no token) and == 2 (dead) are left out
		if n >= r {
			reach += (n-r)/100 + 1
		}
	}
	return n - reach
}

func scaleMeasure(ctx context.Context, k *kit, o *options, b *board) error {
	s := &site{key: "postgres-scale", name: "PostgreSQL (scale)"}
	u, err := k.newPostgresSchema(ctx, "scale")
	if err != nil {
		return err
	}
	s.dbURL = u
	fillers := k.fillerAccounts
	k.fillerAccounts = 0
	err = k.seed(ctx, s, 1, 0, spreadDevices)
	k.fillerAccounts = fillers
	if err != nil {
		return fmt.Errorf("seed %s: %w", s.name, err)
	}
	t0 := time.Now()
	if err := execSQL(ctx, s, fmt.Sprintf(scaleSeedSQL, o.scaleAccounts, o.scaleDevices, s.users[0])); err != nil {
		return fmt.Errorf("scale seed: %w", err)
	}
	if err := vacuumSchema(ctx, s.dbURL); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	logf("%s: %s accounts and %s devices added by SQL in %.0f s (not measured)", s.name, thousands(int64(o.scaleAccounts)), thousands(int64(o.scaleDevices)), time.Since(t0).Seconds())

	p, err := k.start(ctx, s, "scale")
	if err != nil {
		return err
	}
	defer p.stop()
	if s.admin, _, err = login(ctx, p.baseURL, adminEmail); err != nil {
		return err
	}
	size := fmt.Sprintf("%s accounts, %s devices, PostgreSQL", thousands(int64(o.scaleAccounts)), thousands(int64(o.scaleDevices)))
	get := func(path string) (time.Duration, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.baseURL+path, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+s.admin)
		t := time.Now()
		resp, err := apiClient.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		var env struct {
			Success bool `json:"success"`
		}
		err = json.NewDecoder(resp.Body).Decode(&env)
		d := time.Since(t)
		if err != nil || resp.StatusCode != http.StatusOK || !env.Success {
			return d, fmt.Errorf("GET %s: status %d, %v", path, resp.StatusCode, err)
		}
		return d, nil
	}
	series := func(n int, path func(i int) string) ([]time.Duration, error) {
		var ds []time.Duration
		for i := range n {
			d, err := get(path(i))
			if err != nil {
				return nil, err
			}
			ds = append(ds, d)
		}
		slices.Sort(ds)
		return ds, nil
	}
	latencies := func(ds []time.Duration) string {
		return fmt.Sprintf("p50 %s, p99 %s (%d requests)", ms(percentile(ds, 50)), ms(percentile(ds, 99)), len(ds))
	}

	// A few requests first, so that the measure is of a server in use, not
	// of its first connections.
	if _, err := series(5, func(int) string { return "/api/v1/admin/overview" }); err != nil {
		return err
	}
	ov, err := series(100, func(int) string { return "/api/v1/admin/overview" })
	if err != nil {
		return err
	}
	r := row{measure: "console overview (`GET /api/v1/admin/overview`), " + size, herald: latencies(ov), ceiling: "–", ratio: "–", target: "p99 < 200 ms"}
	if percentile(ov, 99) >= 200*time.Millisecond {
		r.target += " MISSED"
	}
	b.rows = append(b.rows, r)

	rng := rand.New(rand.NewPCG(1, 2))
	search, err := series(300, func(int) string {
		prefix := "u" + fmt.Sprint(rng.IntN(100_000_000))
		prefix = prefix[:min(len(prefix), 2+rng.IntN(7))]
		return "/api/v1/admin/users?first=50&query=" + url.QueryEscape(prefix)
	})
	if err != nil {
		return err
	}
	r = row{measure: "admin user search by email prefix (2–8 characters, 50 a page), " + size, herald: latencies(search), ceiling: "–", ratio: "–", target: "p99 < 50 ms"}
	if percentile(search, 99) >= 50*time.Millisecond {
		r.target += " MISSED"
	}
	b.rows = append(b.rows, r)

	// The user list from four depths: the cursor of a page is the last id
	// it showed (newest first), read here by SQL at each depth.
	conn, err := pgx.Connect(ctx, s.dbURL)
	if err != nil {
		return err
	}
	codec := cursor.New[string]("user")
	var cells []string
	var first, deepest time.Duration
	for _, depth := range []float64{0, 0.01, 0.5, 0.99} {
		after := ""
		if depth > 0 {
			var id string
			if err := conn.QueryRow(ctx, `SELECT id FROM accounts WHERE deleted_at IS NULL ORDER BY id DESC OFFSET $1 LIMIT 1`, int(depth*float64(o.scaleAccounts))).Scan(&id); err != nil {
				conn.Close(ctx)
				return err
			}
			if after, err = codec.Encode(id); err != nil {
				conn.Close(ctx)
				return err
			}
		}
		ds, err := series(50, func(int) string { return "/api/v1/admin/users?first=50&after=" + url.QueryEscape(after) })
		if err != nil {
			conn.Close(ctx)
			return err
		}
		med := percentile(ds, 50)
		if depth == 0 {
			first = med
		}
		deepest = max(deepest, med)
		cells = append(cells, fmt.Sprintf("%.0f %%: p50 %s", depth*100, ms(med)))
	}
	conn.Close(ctx)
	r = row{measure: "admin user list by cursor at four depths (50 a page), " + size, herald: fmt.Sprint(cells), ceiling: "–",
		ratio: fmt.Sprintf("deepest/first %.2f", float64(deepest)/float64(first)), target: "deepest ≤ 2 × first"}
	if deepest > 2*first {
		r.target += " MISSED"
	}
	b.rows = append(b.rows, r)
	p.stop()

	if !o.scaleBroadcast {
		return nil
	}
	sizeBefore, err := schemaSize(ctx, s.dbURL)
	if err != nil {
		return err
	}
	s.devices = scaleValidDevices(o.scaleDevices)
	k.quiesce(ctx)
	res, err := k.heraldBroadcast(ctx, s, "broadcast-scale", o.broadcastLimit(s.devices))
	if err != nil {
		return err
	}
	sizeAfter, err := schemaSize(ctx, s.dbURL)
	if err != nil {
		return err
	}
	r = row{measure: fmt.Sprintf("broadcast to %s devices, %s (one round)", thousands(int64(s.devices)), size), herald: sendCell(&res, true) +
		fmt.Sprintf("; database %s before, %s after", mib(sizeBefore/1024), mib(sizeAfter/1024)), ceiling: "–", ratio: "–", target: "RSS < 150 MiB"}
	if res.TimedOut || res.Note != "" || int(res.Sent) != s.devices || res.HWM >= 150*1024 {
		r.target += " MISSED"
	}
	if res.Note != "" {
		b.notes = append(b.notes, "scale broadcast: "+res.Note)
	}
	b.rows = append(b.rows, r)
	return nil
}

// schemaSize is the bytes of the tables and indexes of the schema dbURL's
// search_path names.
func schemaSize(ctx context.Context, dbURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
		WHERE ns.nspname = current_schema() AND c.relkind IN ('r', 'm')`).Scan(&n)
	return n, err
}
