package sqlstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/view"
	"github.com/herald-vpn/herald/internal/webhooks"
	"github.com/riverqueue/river"
)

// pushJobs is the table of push broadcasts in the fan-out layer.
var pushJobs = fanoutJobs[notifications.Job]{
	table: "notification_jobs", columns: jobColumns,
	scan:  func(r row) (notifications.Job, error) { return scanJob(r) },
	event: func(j notifications.Job) webhooks.Payload { return view.NewNotificationJobEvent(j) },
	waits: `resume_at IS NOT NULL AND resume_at > ?`,
}

const jobColumns = `id, status, subject, content, data, total_recipients, sent, failed, invalid_tokens, created_at, started_at, finished_at, last_error, push_options, send_at, audience_platforms, audience_plans, audience_status, category, opted_out, inbox, inbox_written_at IS NOT NULL, inbox_items, capped, cap_per_day, urgent, held, resume_at, local_date, local_minute, channels, emailed, email_opted_out, email_capped, no_email_address`

func scanJob(r row, extra ...any) (notifications.Job, error) {
	var j notifications.Job
	var data, opts *string
	var platforms, plans, channels string
	var started, finished, sendAt, resumeAt *time.Time
	var localDate *string
	var localMinute *int
	dest := append([]any{&j.ID, &j.Status, &j.Subject, &j.Content, &data, &j.TotalRecipients, &j.Sent, &j.Failed, &j.InvalidTokens,
		&j.CreatedAt, &started, &finished, &j.Error, &opts, &sendAt, &platforms, &plans, &j.Audience.SubscriptionStatus, &j.Category, &j.OptedOut, &j.Inbox, &j.InboxWritten, &j.InboxItems, &j.Capped, &j.CapPerDay, &j.Urgent, &j.Held, &resumeAt, &localDate, &localMinute,
		&channels, &j.Email.Queued, &j.Email.OptedOut, &j.Email.Capped, &j.Email.NoEmailAddress}, extra...)
	if err := r.Scan(dest...); err != nil {
		return notifications.Job{}, err
	}
	if data != nil {
		m, err := notifications.DecodeData([]byte(*data))
		if err != nil {
			return notifications.Job{}, fmt.Errorf("job %s: data: %w", j.ID, err)
		}
		j.Data = m
	}
	if opts != nil {
		if err := json.Unmarshal([]byte(*opts), &j.Options); err != nil {
			return notifications.Job{}, fmt.Errorf("job %s: push options: %w", j.ID, err)
		}
	}
	j.CreatedAt = j.CreatedAt.UTC()
	if localDate != nil && localMinute != nil {
		j.SendAtLocal = &notifications.LocalTime{Date: *localDate, Minutes: *localMinute}
	}
	j.StartedAt, j.FinishedAt, j.SendAt, j.ResumeAt = utcPtr(started), utcPtr(finished), utcPtr(sendAt), utcPtr(resumeAt)
	j.Audience.Platforms, j.Audience.Plans = splitList(platforms), splitList(plans)
	j.Channels = splitList(channels)
	return j, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// audienceOf is the condition that a device is in the audience of the
// job row (or CTE) j, whose columns are named by the arguments: each list
// is ” (everyone) or comma-bracketed; the subscription status is as of
// the job's creation, so the count and the walk agree.
func audienceOf(platforms, plans, status, created string) string {
	return `(` + platforms + ` = '' OR ` + platforms + ` LIKE '%,' || devices.platform || ',%')
	AND ((` + plans + ` = '' AND ` + status + ` = '') OR EXISTS (SELECT 1 FROM accounts sub WHERE sub.id = devices.account_id AND sub.deleted_at IS NULL
		AND (` + plans + ` = '' OR ` + plans + ` LIKE '%,' || sub.subscription_plan || ',%')
		AND (` + status + ` = '' OR (` + status + ` = 'active' AND sub.subscription_expires_at > ` + created + `)
			OR (` + status + ` = 'expired' AND sub.subscription_expires_at <= ` + created + `))))`
}

var (
	inAudience      = audienceOf("j.audience_platforms", "j.audience_plans", "j.audience_status", "j.created_at")
	inAudienceOfCTE = audienceOf("j.audience_platforms", "j.audience_plans", "j.audience_status", "j.job_created")
)

// channelList stores a job's channels; none is push alone, as the
// column's default says for the jobs made before channels.
func channelList(channels []string) string {
	if len(channels) == 0 {
		return joinList([]string{notifications.ChannelPush})
	}
	return joinList(channels)
}

// joinList stores a list as ",a,b," (” when empty), for LIKE '%,x,%'.
func joinList(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return "," + strings.Join(l, ",") + ","
}

func splitList(s string) []string {
	if s = strings.Trim(s, ","); s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// recipients is the condition of a broadcast recipient: its beginning
// matches the predicate of the devices_recipients partial index word for
// word; then the devices of disabled accounts are left out (an account's
// row by primary key; the accounts of devices are almost never disabled).
// optedOut is the condition that the owner of a device turned the
// category of the job row (or CTE) j off on the device's channel
// (notifications.DeviceChannel); a critical category is never stored
// off (preferences.Catalogue.Check).
const optedOut = `EXISTS (SELECT 1 FROM notification_preferences np WHERE np.account_id = devices.account_id AND np.category = j.category
	AND np.channel = CASE WHEN devices.platform = '` + devices.PlatformWeb + `' THEN '` + preferences.ChannelWebPush + `' ELSE '` + preferences.ChannelPush + `' END
	AND np.enabled = FALSE)`

// scheduleOf is the schedule of the owner of a device (the devices row
// or alias dev) as one text column, "zone|start|end" (-1 for no quiet
// hours; NULL without a schedule row), read by parseSchedule: the walk
// decides quiet hours in Go, with the zone database the sends use.
func scheduleOf(dev string) string { return scheduleFor(dev + ".account_id") }

// scheduleFor is scheduleOf for the account whose id is the column
// account (the email walk's accounts).
func scheduleFor(account string) string {
	return `(SELECT s.time_zone || '|' || COALESCE(s.quiet_start, -1) || '|' || COALESCE(s.quiet_end, -1) FROM notification_schedules s WHERE s.account_id = ` + account + `)`
}

// parseSchedule reads scheduleOf's column.
func parseSchedule(v *string) preferences.Schedule {
	if v == nil {
		return preferences.Schedule{}
	}
	parts := strings.Split(*v, "|")
	if len(parts) != 3 {
		return preferences.Schedule{}
	}
	s := preferences.Schedule{TimeZone: parts[0]}
	start, err1 := strconv.Atoi(parts[1])
	end, err2 := strconv.Atoi(parts[2])
	if err1 == nil && err2 == nil && start >= 0 && end >= 0 {
		s.Quiet = &preferences.QuietHours{Start: start, End: end}
	}
	return s
}

const recipients = `active = TRUE AND push_token_status = 'valid' AND devices.push_token IS NOT NULL AND NOT EXISTS (SELECT 1 FROM accounts acct WHERE acct.id = devices.account_id AND acct.disabled_at IS NOT NULL)`

// AccountDisabled implements notifications.Store.
func (db *DB) AccountDisabled(ctx context.Context, accountID string) (bool, error) {
	var n int
	err := db.conn().queryRow(ctx, `SELECT COUNT(*) FROM accounts WHERE id = ? AND disabled_at IS NOT NULL`, accountID).Scan(&n)
	return n > 0, err
}

// CreateBroadcast implements notifications.Store.
func (db *DB) CreateBroadcast(ctx context.Context, b notifications.NewBroadcast, job river.JobArgs) (notifications.Job, error) {
	var j notifications.Job
	err := db.inTx(ctx, func(tx *Tx) error {
		var data any
		if b.Data != nil {
			data = string(b.Data)
		}
		var opts any
		if b.Options != nil {
			opts = string(b.Options)
		}
		status, insertOpts := notifications.StatusQueued, (*river.InsertOpts)(nil)
		if b.SendAt != nil {
			// River holds the job until then; any replica's runner
			// starts it.
			status, insertOpts = notifications.StatusScheduled, &river.InsertOpts{ScheduledAt: *b.SendAt}
		}
		a := b.Audience
		var localDate, localMinute any
		if b.SendAtLocal != nil {
			localDate, localMinute = b.SendAtLocal.Date, b.SendAtLocal.Minutes
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO notification_jobs (id, subject, content, data, status, total_recipients, created_at, push_options, send_at,
			audience_platforms, audience_plans, audience_status, category, inbox, cap_per_day, urgent, local_date, local_minute, channels) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			b.ID, b.Subject, b.Content, data, status, tx.now, opts, b.SendAt, joinList(a.Platforms), joinList(a.Plans), a.SubscriptionStatus, b.Category, b.Inbox, b.CapPerDay, b.Urgent, localDate, localMinute, channelList(b.Channels)); err != nil {
			return err
		}
		// Counted with the walk's own condition, read from the job row;
		// a job without push walks no device.
		if (notifications.Job{Channels: b.Channels}).Pushes() {
			if _, err := tx.q.exec(ctx, `UPDATE notification_jobs SET total_recipients = (SELECT COUNT(*) FROM devices, notification_jobs j
			WHERE j.id = ? AND `+recipients+` AND `+inAudience+`) WHERE id = ?`, b.ID, b.ID); err != nil {
				return err
			}
		}
		var total int
		if err := tx.q.queryRow(ctx, `SELECT total_recipients FROM notification_jobs WHERE id = ?`, b.ID).Scan(&total); err != nil {
			return err
		}
		if _, err := tx.InsertJob(ctx, job, insertOpts); err != nil {
			return err
		}
		m, err := notifications.DecodeData(b.Data)
		if err != nil {
			return err
		}
		j = notifications.Job{ID: b.ID, Status: status, Subject: b.Subject, Content: b.Content, Data: m, TotalRecipients: total, CreatedAt: tx.now, SendAt: utcPtr(b.SendAt), Audience: b.Audience, Category: b.Category, Inbox: b.Inbox, CapPerDay: b.CapPerDay, Urgent: b.Urgent, SendAtLocal: b.SendAtLocal, Channels: splitList(channelList(b.Channels))}
		if b.Options != nil {
			if err := json.Unmarshal(b.Options, &j.Options); err != nil {
				return err
			}
		}
		return nil
	})
	return j, err
}

// BroadcastJob implements notifications.Store.
func (db *DB) BroadcastJob(ctx context.Context, id string) (notifications.Job, error) {
	return scanJob(db.conn().queryRow(ctx, `SELECT `+jobColumns+` FROM notification_jobs WHERE id = ?`, id))
}

// BroadcastJobs implements notifications.Store: job IDs are UUIDv7, so ID
// order is creation order.
func (db *DB) BroadcastJobs(ctx context.Context, beforeID string, limit int) ([]notifications.Job, error) {
	var rs rows
	var err error
	if beforeID == "" {
		rs, err = db.conn().query(ctx, `SELECT `+jobColumns+` FROM notification_jobs ORDER BY id DESC LIMIT ?`, limit)
	} else {
		rs, err = db.conn().query(ctx, `SELECT `+jobColumns+` FROM notification_jobs WHERE id < ? ORDER BY id DESC LIMIT ?`, beforeID, limit)
	}
	return collect(rs, err, func(r row) (notifications.Job, error) { return scanJob(r) })
}

// CancelBroadcast implements notifications.Store.
func (db *DB) CancelBroadcast(ctx context.Context, id string) (notifications.Job, error) {
	return pushJobs.cancel(ctx, db, id)
}

// RequeueStalledBroadcasts implements notifications.Store.
func (db *DB) RequeueStalledBroadcasts(ctx context.Context, minInterval time.Duration, newJob func(id string) river.JobArgs) ([]string, error) {
	return pushJobs.requeueStalled(ctx, db, minInterval, newJob)
}

// AcquireBroadcast implements notifications.Store.
func (db *DB) AcquireBroadcast(ctx context.Context, id, owner string, until time.Time) (notifications.Lease, error) {
	j, l, err := pushJobs.acquire(ctx, db, id, owner, until)
	return notifications.Lease{Job: j, Lease: l}, err
}

// errClaimLost rolls back a claim whose job changed under it.
var errClaimLost = errors.New("broadcast no longer this worker's")

// ClaimNextBatch implements notifications.Store. The job row is read
// without a lock and written last, conditionally on the cursor it was read
// with: the claims are inserted while outcomes are being recorded, and the
// row is locked only for the final update. On PostgreSQL an uncapped job
// is claimed in one statement (claimStatement); a capped one, whose
// owners are counted one by one, as on SQLite.
func (db *DB) ClaimNextBatch(ctx context.Context, id, owner string, limit int, until time.Time) (notifications.Claims, error) {
	if db.dialect == storage.Postgres {
		c, capped, err := db.claimPostgres(ctx, id, owner, limit, until)
		if err != nil || !capped {
			return c, err
		}
	}
	var c notifications.Claims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.Claims{}
		if err := tx.commitWithoutFlush(ctx); err != nil {
			return err
		}
		var status, cursor, category string
		var holder *string
		var done bool
		var created time.Time
		var capPerDay int
		if err := tx.q.queryRow(ctx, `SELECT status, lease_owner, walk_cursor, walk_done, created_at, category, cap_per_day FROM notification_jobs WHERE id = ?`, id).
			Scan(&status, &holder, &cursor, &done, &created, &category, &capPerDay); err != nil {
			return err
		}
		if status != notifications.StatusRunning || holder == nil || *holder != owner {
			c.Stop = true
			return nil
		}
		if done {
			c.Done = true
			return nil
		}
		type found struct {
			notifications.Claim
			accountID string
			skip      string // the delivery row of a device not claimed
		}
		// Each owner's schedule comes with the page (their quiet hours,
		// and a capped job's day), not one query per owner.
		rs, err := tx.q.query(ctx, `SELECT devices.id, devices.platform, devices.push_token, devices.account_id, `+scheduleOf("devices")+`, `+optedOut+` FROM devices, notification_jobs j
			WHERE j.id = ? AND `+recipients+` AND `+inAudience+` AND devices.id > ? AND devices.created_at <= ? AND devices.push_token IS NOT NULL
			ORDER BY devices.id LIMIT ?`,
			id, cursor, created, limit)
		page, err := collect(rs, err, func(r row) (found, error) {
			var f found
			var out bool
			var sched *string
			err := r.Scan(&f.DeviceID, &f.Platform, &f.Token, &f.accountID, &sched, &out)
			f.Schedule = parseSchedule(sched)
			if out {
				f.skip = notifications.DeliveryOptedOut
			}
			return f, err
		})
		if err != nil {
			return err
		}
		if capPerDay > 0 {
			owners := map[string]preferences.Schedule{}
			for _, f := range page {
				if f.skip == "" {
					owners[f.accountID] = f.Schedule
				}
			}
			over, err := db.useBroadcastCaps(ctx, tx, id, category, capPerDay, owners)
			if err != nil {
				return err
			}
			for i, f := range page {
				if f.skip == "" && over[f.accountID] {
					page[i].skip = notifications.DeliveryCapped
				}
			}
		}
		c.Done = len(page) < limit
		next, optedOut, capped := cursor, 0, 0
		for _, f := range page {
			switch f.skip {
			case notifications.DeliveryOptedOut:
				optedOut++
			case notifications.DeliveryCapped:
				capped++
			default:
				c.Claims = append(c.Claims, f.Claim)
			}
			c.Last, next = f.DeviceID, f.DeviceID
		}
		n, err := tx.q.exec(ctx, `UPDATE notification_jobs SET walk_cursor = ?, walk_done = ?, lease_until = `+db.dbAt()+`, opted_out = opted_out + ?, capped = capped + ?
			WHERE id = ? AND status = 'running' AND lease_owner = ? AND walk_cursor = ?`, next, c.Done, db.dbUntilArg(until), optedOut, capped, id, owner, cursor)
		if err != nil {
			return err
		}
		if n == 0 {
			return errClaimLost
		}
		// A skipped device's row says so, so that a resumed walk does not
		// take it for a claim whose outcome is unknown.
		for _, f := range page {
			if f.skip != "" {
				if _, err := tx.q.exec(ctx, `INSERT INTO notification_deliveries (job_id, device_id, status, claimed_by, updated_at) VALUES (?, ?, ?, ?, ?)`,
					id, f.DeviceID, f.skip, owner, tx.now); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if errors.Is(err, errClaimLost) {
		return notifications.Claims{Stop: true}, nil
	}
	return c, err
}

// useBroadcastCaps counts each of owners (their schedules: the day is on
// their own clock) once against their cap of category (limit a day), as
// broadcast jobID (notifications.CapSendID), inside tx, and returns those
// over it. The owners are taken in account order, so two broadcasts'
// claims lock the count rows they share in the same order and never
// deadlock; an owner counted by an earlier batch or run of the job gets
// its first decision again and is not counted twice.
func (db *DB) useBroadcastCaps(ctx context.Context, tx *Tx, jobID, category string, limit int, owners map[string]preferences.Schedule) (map[string]bool, error) {
	ctx = context.WithValue(ctx, txKey{}, tx)
	over := map[string]bool{}
	for _, account := range slices.Sorted(maps.Keys(owners)) {
		allowed, err := preferences.UseCap(ctx, db, preferences.CapUse{AccountID: account, Category: category, Window: owners[account].CapWindow(tx.now),
			SendID: notifications.CapSendID(jobID), Limit: limit})
		if err != nil {
			return nil, err
		}
		if !allowed {
			over[account] = true
		}
	}
	return over, nil
}

// The cursor is compared through a scalar subquery so that it bounds the
// index scan (Index Cond: id > $n); compared as a join column it only
// filters a scan from the first device, which made each batch cost as
// much as all the batches before it.
//
// claimStatement is ClaimNextBatch on PostgreSQL in one statement: read
// the job, take the next devices after its cursor and move the cursor —
// only if nobody moved it since (upd is empty otherwise) — and write a
// row for each device skipped because its owner opted out (skips). The job row is
// locked by upd alone, until the statement's implicit commit. One row per
// device found (or one row of NULLs when none is). A capped job claims
// nothing here (its owners are counted one by one: ClaimNextBatch).
var claimStatement = `WITH j AS (
	SELECT status, lease_owner, walk_cursor, walk_done, created_at AS job_created, audience_platforms, audience_plans, audience_status, category, cap_per_day
	FROM notification_jobs WHERE id = $1
),
found AS (
	SELECT devices.id, devices.platform, devices.push_token, ` + optedOut + ` AS opted_out, ` + scheduleOf("devices") + ` AS sched FROM devices, j
	WHERE j.status = 'running' AND j.lease_owner = $2 AND NOT j.walk_done AND j.cap_per_day = 0
		AND ` + recipients + ` AND ` + inAudienceOfCTE + ` AND devices.id > (SELECT walk_cursor FROM j) AND devices.created_at <= j.job_created AND devices.push_token IS NOT NULL
	ORDER BY devices.id LIMIT $3
),
upd AS (
	UPDATE notification_jobs n SET walk_cursor = COALESCE((SELECT max(id) FROM found), j.walk_cursor),
		walk_done = (SELECT count(*) FROM found) < $3, lease_until = ` + pgDBAt("$4") + `,
		opted_out = n.opted_out + (SELECT count(*) FROM found WHERE found.opted_out)
	FROM j WHERE n.id = $1 AND j.status = 'running' AND j.lease_owner = $2 AND NOT j.walk_done AND j.cap_per_day = 0
		AND n.status = 'running' AND n.lease_owner = $2 AND n.walk_cursor = j.walk_cursor
	RETURNING n.walk_done
),
skips AS (
	INSERT INTO notification_deliveries (job_id, device_id, status, claimed_by, updated_at)
	SELECT $1, found.id, '` + notifications.DeliveryOptedOut + `', $2, $5 FROM found, upd WHERE found.opted_out
)
SELECT j.status, j.lease_owner, j.walk_done, (SELECT walk_done FROM upd), f.id, f.platform, f.push_token, f.opted_out, j.cap_per_day > 0, f.sched
FROM j LEFT JOIN found f ON TRUE
ORDER BY f.id`

// claimPostgres runs claimStatement in one round trip, its commit not
// waiting for the WAL flush (see commitWithoutFlush). capped reports a
// capped job, for which it claimed nothing.
func (db *DB) claimPostgres(ctx context.Context, id, owner string, limit int, until time.Time) (_ notifications.Claims, capped bool, _ error) {
	ctx, cancel := db.bound(ctx)
	if cancel != nil {
		defer cancel()
	}
	conn, err := db.acquire(ctx)
	if err != nil {
		return notifications.Claims{}, false, err
	}
	defer conn.Release()
	var c notifications.Claims
	var rows, lost int
	var b pgx.Batch
	b.Queue(`SET LOCAL synchronous_commit TO OFF`)
	b.Queue(claimStatement, id, owner, limit, db.dbUntilArg(until), db.Now()).Query(func(r pgx.Rows) error {
		for r.Next() {
			rows++
			var status string
			var holder, deviceID, platform, token, sched *string
			var done bool
			var moved, skip *bool
			if err := r.Scan(&status, &holder, &done, &moved, &deviceID, &platform, &token, &skip, &capped, &sched); err != nil {
				return err
			}
			switch {
			case capped:
			case status != notifications.StatusRunning || holder == nil || *holder != owner:
				c.Stop = true
			case done:
				c.Done = true
			case moved == nil:
				lost++
			default:
				c.Done = *moved
				if deviceID != nil {
					c.Last = *deviceID
					if !*skip { // an opted-out device is counted, not claimed
						c.Claims = append(c.Claims, notifications.Claim{DeviceID: *deviceID, Platform: *platform, Token: *token, Schedule: parseSchedule(sched)})
					}
				}
			}
		}
		return r.Err()
	})
	if err := db.health.note(translate(conn.SendBatch(ctx, &b).Close())); err != nil {
		return notifications.Claims{}, false, err
	}
	switch {
	case rows == 0:
		return notifications.Claims{}, false, storage.ErrNotFound
	case capped:
		return notifications.Claims{}, true, nil
	case c.Stop || lost > 0:
		return notifications.Claims{Stop: true}, false, nil
	case c.Done && len(c.Claims) == 0 && c.Last == "":
		return notifications.Claims{Done: true}, false, nil
	}
	return c, false, nil
}

// ReclaimDeliveries implements notifications.Store.
func (db *DB) ReclaimDeliveries(ctx context.Context, id, owner string, retriesOnly bool, after string, limit int, until time.Time) (notifications.Claims, error) {
	var c notifications.Claims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.Claims{}
		if err := tx.commitWithoutFlush(ctx); err != nil {
			return err
		}
		ok, err := pushJobs.holdsLease(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if !ok {
			c.Stop = true
			return nil
		}
		// The IN term lets SQLite use the notification_deliveries_open
		// partial index.
		which := `d.status IN ('claimed', 'retry')`
		if retriesOnly {
			which = `d.status IN ('claimed', 'retry') AND d.status = 'retry'`
		}
		rs, err := tx.q.query(ctx, `SELECT d.device_id, v.platform, v.push_token, v.active, v.push_token_status, `+scheduleOf("v")+`
			FROM notification_deliveries d LEFT JOIN devices v ON v.id = d.device_id
			WHERE d.job_id = ? AND d.device_id > ? AND `+which+`
			ORDER BY d.device_id LIMIT ?`, id, after, limit)
		var take, skip []any
		err = each(rs, err, func(r row) error {
			var deviceID string
			var platform, token, tokenStatus, sched *string
			var active *bool
			if err := r.Scan(&deviceID, &platform, &token, &active, &tokenStatus, &sched); err != nil {
				return err
			}
			c.Last = deviceID
			if platform == nil || token == nil || active == nil || !*active || tokenStatus == nil || *tokenStatus != "valid" {
				skip = append(skip, deviceID)
				return nil
			}
			c.Claims = append(c.Claims, notifications.Claim{DeviceID: deviceID, Platform: *platform, Token: *token, Schedule: parseSchedule(sched)})
			take = append(take, deviceID)
			return nil
		})
		if err != nil {
			return err
		}
		for part := range chunks(take, 500) {
			a := append([]any{owner, tx.now, id}, part...)
			if _, err := tx.q.exec(ctx, `UPDATE notification_deliveries SET status = 'claimed', claimed_by = ?, updated_at = ? WHERE job_id = ? AND device_id IN (`+placeholders(len(part))+`)`, a...); err != nil {
				return err
			}
		}
		for part := range chunks(skip, 500) {
			a := append([]any{tx.now, id}, part...)
			if _, err := tx.q.exec(ctx, `UPDATE notification_deliveries SET status = 'skipped', updated_at = ? WHERE job_id = ? AND device_id IN (`+placeholders(len(part))+`)`, a...); err != nil {
				return err
			}
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_jobs SET lease_until = `+db.dbAt()+` WHERE id = ?`, db.dbUntilArg(until), id)
		return err
	})
	return c, err
}

// recordPostgres is RecordDeliveries without dead tokens in one
// statement: the outcomes as arrays, written as rows (a device's first, or
// an update of a delivery the owner claimed), and the counters, the
// settled cursor and the lease moved.
var recordPostgres = `WITH v AS (SELECT * FROM unnest($1::text[], $2::text[], $9::timestamptz[]) AS v(device_id, status, due_at)),
ins AS (
	INSERT INTO notification_deliveries AS d (job_id, device_id, status, claimed_by, updated_at, due_at)
	SELECT $4, v.device_id, v.status, $5, $3, v.due_at FROM v
	ON CONFLICT (job_id, device_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, due_at = excluded.due_at
		WHERE d.status = 'claimed' AND d.claimed_by = $5
	RETURNING d.status
),
cnt AS (
	SELECT count(*) FILTER (WHERE status = 'sent') AS sent, count(*) FILTER (WHERE status = 'failed') AS failed,
		count(*) FILTER (WHERE status = 'held') AS held FROM ins
)
UPDATE notification_jobs j SET sent = j.sent + cnt.sent + CASE WHEN j.lease_owner = $5 THEN $7 ELSE 0 END,
	failed = j.failed + cnt.failed, held = j.held + cnt.held,
	settled_cursor = CASE WHEN j.lease_owner = $5 AND $8 > j.settled_cursor THEN $8 ELSE j.settled_cursor END,
	lease_until = CASE WHEN j.lease_owner = $5 THEN ` + pgDBAt("$6") + ` ELSE j.lease_until END
FROM cnt WHERE j.id = $4 RETURNING j.lease_owner`

// firstOutcomes drops every outcome of a device after its first, so that
// one write never touches a row twice.
func firstOutcomes(outcomes []notifications.Outcome) []notifications.Outcome {
	seen := make(map[string]bool, len(outcomes))
	out := outcomes[:0:0]
	for _, o := range outcomes {
		if !seen[o.DeviceID] {
			seen[o.DeviceID] = true
			out = append(out, o)
		}
	}
	return out
}

// RecordDeliveries implements notifications.Store. On PostgreSQL it is one
// statement, one round trip: outcomes are written while sends go on, and
// the sooner they are written the fewer a crash can repeat.
func (db *DB) RecordDeliveries(ctx context.Context, id, owner string, rec notifications.Record, until time.Time) (bool, error) {
	outcomes := firstOutcomes(rec.Outcomes)
	// Dead tokens raise events, which need a transaction of the store's
	// own: the one-statement path serves the outcomes without them.
	if db.dialect == storage.Postgres && !anyInvalid(outcomes) {
		ids, statuses, dues := make([]string, len(outcomes)), make([]string, len(outcomes)), make([]*time.Time, len(outcomes))
		for i, o := range outcomes {
			ids[i], statuses[i] = o.DeviceID, o.Status
			if !o.DueAt.IsZero() {
				dues[i] = &o.DueAt
			}
		}
		ctx, cancel := db.bound(ctx)
		if cancel != nil {
			defer cancel()
		}
		c, err := db.acquire(ctx)
		if err != nil {
			return false, err
		}
		defer c.Release()
		// One round trip, one implicit transaction that does not wait for
		// its WAL flush: a PostgreSQL crash could lose the last fraction of
		// a second of outcomes, which then count as unknown and are sent
		// again; Herald's own crash loses nothing written here.
		var b pgx.Batch
		b.Queue(`SET LOCAL synchronous_commit TO OFF`)
		var holder *string
		b.Queue(recordPostgres, ids, statuses, db.Now(), id, owner, db.dbUntilArg(until), rec.Sent, rec.Settled, dues).
			QueryRow(func(r pgx.Row) error { return r.Scan(&holder) })
		if err := db.health.note(translate(c.SendBatch(ctx, &b).Close())); err != nil {
			return false, err
		}
		return holder != nil && *holder == owner, nil
	}
	var kept bool
	err := db.inTx(ctx, func(tx *Tx) error {
		counted := map[string]int64{}
		for part := range chunks(outcomes, 250) {
			args := make([]any, 0, len(part)*5+1)
			q := make([]byte, 0, len(part)*20)
			for i, o := range part {
				if i > 0 {
					q = append(q, ", "...)
				}
				q = append(q, "(?, ?, ?, ?, ?, ?)"...)
				var due any
				if !o.DueAt.IsZero() {
					due = o.DueAt.UTC()
				}
				args = append(args, id, o.DeviceID, o.Status, owner, tx.now, due)
			}
			args = append(args, owner)
			rs, err := tx.q.query(ctx, `INSERT INTO notification_deliveries (job_id, device_id, status, claimed_by, updated_at, due_at) VALUES `+string(q)+`
				ON CONFLICT (job_id, device_id) DO UPDATE SET status = excluded.status, updated_at = excluded.updated_at, due_at = excluded.due_at
				WHERE notification_deliveries.status = 'claimed' AND notification_deliveries.claimed_by = ?
				RETURNING status`, args...)
			err = each(rs, err, func(r row) error {
				st, err := scanString(r)
				counted[st]++
				return err
			})
			if err != nil {
				return err
			}
		}
		var dead []devicePushToken
		for _, o := range outcomes {
			if o.Status == notifications.DeliveryInvalid {
				dead = append(dead, devicePushToken{o.DeviceID, o.Token})
			}
		}
		if err := tx.invalidatePushTokens(ctx, dead); err != nil {
			return err
		}
		// Counters, the settled cursor and the lease in one statement on
		// the job row, last, so its lock is held only to the commit.
		sent, failed, invalid, held := counted[notifications.DeliverySent], counted[notifications.DeliveryFailed], counted[notifications.DeliveryInvalid], counted[notifications.DeliveryHeld]
		var holder *string
		if err := tx.q.queryRow(ctx, `UPDATE notification_jobs SET sent = sent + ? + CASE WHEN lease_owner = ? THEN ? ELSE 0 END,
			failed = failed + ?, invalid_tokens = invalid_tokens + ?, held = held + ?,
			settled_cursor = CASE WHEN lease_owner = ? AND ? > settled_cursor THEN ? ELSE settled_cursor END,
			lease_until = CASE WHEN lease_owner = ? THEN `+db.dbAt()+` ELSE lease_until END WHERE id = ? RETURNING lease_owner`,
			sent, owner, rec.Sent, failed, invalid, held, owner, rec.Settled, rec.Settled, owner, db.dbUntilArg(until), id).Scan(&holder); err != nil {
			return err
		}
		kept = holder != nil && *holder == owner
		return nil
	})
	return kept, err
}

// ResumeWalk implements notifications.Store.
func (db *DB) ResumeWalk(ctx context.Context, id, owner, after string, limit int, until time.Time) (notifications.Claims, error) {
	var c notifications.Claims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.Claims{}
		var status, settled, cursor string
		var holder *string
		if err := tx.q.queryRow(ctx, `SELECT status, lease_owner, settled_cursor, walk_cursor FROM notification_jobs WHERE id = ?`, id).
			Scan(&status, &holder, &settled, &cursor); err != nil {
			return err
		}
		if status != notifications.StatusRunning || holder == nil || *holder != owner {
			c.Stop = true
			return nil
		}
		from := max(after, settled)
		if from >= cursor {
			c.Done = true
			return nil
		}
		// The bounds are parameters, not the job's columns, so that they
		// bound the index scan.
		rs, err := tx.q.query(ctx, `SELECT devices.id, devices.platform, devices.push_token, `+scheduleOf("devices")+` FROM devices, notification_jobs j
			WHERE j.id = ? AND `+recipients+` AND `+inAudience+` AND devices.id > ? AND devices.id <= ?
				AND devices.created_at <= j.created_at AND devices.push_token IS NOT NULL
				AND NOT EXISTS (SELECT 1 FROM notification_deliveries d WHERE d.job_id = j.id AND d.device_id = devices.id)
			ORDER BY devices.id LIMIT ?`, id, from, cursor, limit)
		c.Claims, err = collect(rs, err, func(r row) (notifications.Claim, error) {
			var cl notifications.Claim
			var sched *string
			err := r.Scan(&cl.DeviceID, &cl.Platform, &cl.Token, &sched)
			cl.Schedule = parseSchedule(sched)
			return cl, err
		})
		if err != nil {
			return err
		}
		if c.Done = len(c.Claims) < limit; c.Done {
			c.Last = cursor
		} else {
			c.Last = c.Claims[len(c.Claims)-1].DeviceID
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_jobs SET lease_until = `+db.dbAt()+` WHERE id = ? AND lease_owner = ?`, db.dbUntilArg(until), id, owner)
		return err
	})
	return c, err
}

func anyInvalid(outcomes []notifications.Outcome) bool {
	for _, o := range outcomes {
		if o.Status == notifications.DeliveryInvalid {
			return true
		}
	}
	return false
}

// ReleaseHeld implements notifications.Store.
func (db *DB) ReleaseHeld(ctx context.Context, id, owner, after string, now time.Time, limit int, until time.Time) (notifications.Claims, error) {
	var c notifications.Claims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.Claims{}
		ok, err := pushJobs.holdsLease(ctx, tx, id, owner)
		if err != nil {
			return err
		}
		if !ok {
			c.Stop = true
			return nil
		}
		// The status term lets both databases use the
		// notification_deliveries_held partial index.
		rs, err := tx.q.query(ctx, `SELECT d.device_id, devices.platform, devices.push_token, devices.active, devices.push_token_status,
				devices.account_id IS NOT NULL AND EXISTS (SELECT 1 FROM accounts acct WHERE acct.id = devices.account_id AND acct.disabled_at IS NOT NULL),
				devices.account_id IS NOT NULL AND `+optedOut+`, `+scheduleOf("devices")+`
			FROM notification_deliveries d JOIN notification_jobs j ON j.id = d.job_id LEFT JOIN devices ON devices.id = d.device_id
			WHERE d.job_id = ? AND d.status = 'held' AND d.due_at <= ? AND d.device_id > ?
			ORDER BY d.device_id LIMIT ?`, id, now.UTC(), after, limit)
		var take, skip, out []any
		err = each(rs, err, func(r row) error {
			var deviceID string
			var platform, token, tokenStatus, sched *string
			var active *bool
			var disabled, optOut bool
			if err := r.Scan(&deviceID, &platform, &token, &active, &tokenStatus, &disabled, &optOut, &sched); err != nil {
				return err
			}
			c.Last = deviceID
			switch {
			case platform == nil || token == nil || active == nil || !*active || tokenStatus == nil || *tokenStatus != "valid" || disabled:
				skip = append(skip, deviceID)
			case optOut:
				out = append(out, deviceID)
			default:
				c.Claims = append(c.Claims, notifications.Claim{DeviceID: deviceID, Platform: *platform, Token: *token, Schedule: parseSchedule(sched)})
				take = append(take, deviceID)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, set := range []struct {
			status string
			ids    []any
		}{{notifications.DeliveryClaimed, take}, {notifications.DeliverySkipped, skip}, {notifications.DeliveryOptedOut, out}} {
			for part := range chunks(set.ids, 500) {
				a := append([]any{set.status, owner, tx.now, id}, part...)
				if _, err := tx.q.exec(ctx, `UPDATE notification_deliveries SET status = ?, claimed_by = ?, updated_at = ?, due_at = NULL
					WHERE job_id = ? AND status = 'held' AND device_id IN (`+placeholders(len(part))+`)`, a...); err != nil {
					return err
				}
			}
		}
		_, err = tx.q.exec(ctx, `UPDATE notification_jobs SET held = held - ?, opted_out = opted_out + ?, lease_until = `+db.dbAt()+` WHERE id = ?`,
			len(take)+len(skip)+len(out), len(out), db.dbUntilArg(until), id)
		return err
	})
	return c, err
}

// ParkBroadcast implements notifications.Store.
func (db *DB) ParkBroadcast(ctx context.Context, id, owner string, newJob func(id string) river.JobArgs) (bool, error) {
	var parked bool
	err := db.inTx(ctx, func(tx *Tx) error {
		parked = false
		var due *time.Time
		err := tx.q.queryRow(ctx, `SELECT due_at FROM notification_deliveries WHERE job_id = ? AND status = 'held' ORDER BY due_at LIMIT 1`, id).Scan(&due)
		if errors.Is(err, storage.ErrNotFound) || (err == nil && due == nil) {
			_, err := tx.q.exec(ctx, `UPDATE notification_jobs SET resume_at = NULL WHERE id = ? AND resume_at IS NOT NULL`, id)
			return err
		}
		if err != nil {
			return err
		}
		parked = true
		n, err := tx.q.exec(ctx, `UPDATE notification_jobs SET resume_at = ?, lease_owner = NULL, lease_until = NULL WHERE id = ? AND status = 'running' AND lease_owner = ?`,
			due.UTC(), id, owner)
		if err != nil || n == 0 {
			return err // cancelled, or no longer owner's: nothing to schedule
		}
		_, err = tx.InsertJob(ctx, newJob(id), &river.InsertOpts{ScheduledAt: due.UTC()})
		return err
	})
	return parked, err
}

// FinishBroadcast implements notifications.Store.
func (db *DB) FinishBroadcast(ctx context.Context, id, owner, status, errMsg string) (notifications.Job, error) {
	return pushJobs.finish(ctx, db, id, owner, status, errMsg)
}

// ReleaseBroadcast implements notifications.Store.
func (db *DB) ReleaseBroadcast(ctx context.Context, id, owner string) error {
	return pushJobs.release(ctx, db, id, owner)
}

var _ notifications.Store = (*DB)(nil)
