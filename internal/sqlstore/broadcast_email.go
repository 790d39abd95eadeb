package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/riverqueue/river"
)

// emailOptedOut is the condition that account a turned the category of
// the job row j off on the email channel (a critical category is never
// stored off).
const emailOptedOut = `EXISTS (SELECT 1 FROM notification_preferences np WHERE np.account_id = a.id AND np.category = j.category
	AND np.channel = '` + preferences.ChannelEmail + `' AND np.enabled = FALSE)`

// emailAudienceTail, followed by inAudience and a closing parenthesis, is
// the condition that account a is in the audience of the job row j: live,
// not disabled, with an active device in the job's audience created no
// later than the job (the accounts its inbox items go to,
// KeepBroadcastInbox, with the device walk's creation bound).
const emailAudienceTail = ` AND a.deleted_at IS NULL AND a.disabled_at IS NULL
	AND EXISTS (SELECT 1 FROM devices WHERE devices.account_id = a.id AND devices.active = TRUE AND devices.created_at <= j.created_at AND `

// ClaimEmailBatch implements notifications.Store. The job row is read
// first and written last, conditionally on the email cursor it was read
// with and on owner's lease of the running job: the email jobs are
// inserted in the same transaction, so a run that lost the job (a
// takeover moved the cursor, a cancel) rolls them back with it.
//
// Each account's schedule (time zone and quiet hours) is read in the
// page's query, one scalar subquery by primary key per row like the
// device walk's (scheduleFor), and handed to email, which says when the
// account's email is due: its River job is scheduled then (now for the
// zero time).
func (db *DB) ClaimEmailBatch(ctx context.Context, id, owner string, limit int, until time.Time, email func(accountID string, s preferences.Schedule) (notifications.EmailArgs, time.Time)) (notifications.EmailClaims, error) {
	var c notifications.EmailClaims
	err := db.inTx(ctx, func(tx *Tx) error {
		c = notifications.EmailClaims{}
		var status, cursor, category string
		var holder *string
		var done bool
		var capPerDay int
		if err := tx.q.queryRow(ctx, `SELECT status, lease_owner, email_cursor, email_done, category, cap_per_day FROM notification_jobs WHERE id = ?`, id).
			Scan(&status, &holder, &cursor, &done, &category, &capPerDay); err != nil {
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
			acct     accounts.Account
			schedule *string
			optedOut bool
			skip     string // "" (email it), opted out, no address or capped
		}
		rs, err := tx.q.query(ctx, `SELECT a.id, a.email, a.email_verified_at, a.guest_install_id IS NOT NULL,
			`+scheduleFor("a.id")+`, `+emailOptedOut+`
			FROM accounts a, notification_jobs j WHERE j.id = ? AND a.id > ?`+emailAudienceTail+inAudience+`)
			ORDER BY a.id LIMIT ?`, id, cursor, limit)
		page, err := collect(rs, err, func(r row) (found, error) {
			var f found
			err := r.Scan(&f.acct.ID, &f.acct.Email, &f.acct.EmailVerifiedAt, &f.acct.Guest, &f.schedule, &f.optedOut)
			return f, err
		})
		if err != nil {
			return err
		}
		owners := map[string]preferences.Schedule{}
		for i, f := range page {
			switch {
			case f.optedOut:
				page[i].skip = notifications.DeliveryOptedOut
			case !notifications.HasEmailAddress(f.acct):
				page[i].skip = skipNoAddress
			default:
				owners[f.acct.ID] = parseSchedule(f.schedule)
			}
		}
		if capPerDay > 0 && len(owners) > 0 {
			over, err := db.useBroadcastCaps(ctx, tx, id, category, capPerDay, owners)
			if err != nil {
				return err
			}
			for i, f := range page {
				if f.skip == "" && over[f.acct.ID] {
					page[i].skip = notifications.DeliveryCapped
				}
			}
		}
		c.Done = len(page) < limit
		next, optedOut, noAddress, capped := cursor, 0, 0, 0
		for _, f := range page {
			switch f.skip {
			case notifications.DeliveryOptedOut:
				optedOut++
			case skipNoAddress:
				noAddress++
			case notifications.DeliveryCapped:
				capped++
			default:
				args, due := email(f.acct.ID, parseSchedule(f.schedule))
				var opts *river.InsertOpts
				if !due.IsZero() {
					opts = &river.InsertOpts{Queue: notifications.QueueEmail, ScheduledAt: due}
				}
				if _, err := tx.InsertJob(ctx, args, opts); err != nil {
					return err
				}
				c.Queued++
			}
			next = f.acct.ID
		}
		n, err := tx.q.exec(ctx, `UPDATE notification_jobs SET email_cursor = ?, email_done = ?, lease_until = ?, emailed = emailed + ?,
			no_email_address = no_email_address + ?, email_opted_out = email_opted_out + ?, email_capped = email_capped + ?
			WHERE id = ? AND status = 'running' AND lease_owner = ? AND email_cursor = ?`,
			next, c.Done, until, c.Queued, noAddress, optedOut, capped, id, owner, cursor)
		if err != nil {
			return err
		}
		if n == 0 {
			return errClaimLost
		}
		return nil
	})
	if errors.Is(err, errClaimLost) {
		return notifications.EmailClaims{Stop: true}, nil
	}
	return c, err
}

// skipNoAddress marks, within a page, an account without a verified real
// address.
const skipNoAddress = "no_email_address"
