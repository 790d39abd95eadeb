package sqlstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
)

// recordCounts are the counts of the admin record: active devices and
// live sessions (the one argument is now).
const recordCounts = `, (SELECT COUNT(*) FROM devices d WHERE d.account_id = a.id AND d.active = TRUE), (SELECT COUNT(*) FROM sessions x WHERE x.account_id = a.id AND x.revoked_at IS NULL AND x.expires_at > ?)`

func scanRecord(r row) (accounts.Record, error) {
	var rec accounts.Record
	a, err := scanAccount(r, &rec.DeviceCount, &rec.SessionCount)
	rec.Account = a
	return rec, err
}

// likePrefix is the LIKE pattern (ESCAPE '\') of everything beginning p.
func likePrefix(p string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p) + "%"
}

// placeholderSuffix is the LIKE pattern of every guest's placeholder
// address (accounts.GuestDomain has no wildcard to escape).
const placeholderSuffix = "%" + accounts.GuestDomain

// emailPrefix is the condition of an email search: the prefix's LIKE
// (which an index on email answers) and, on the rows it finds, not a
// guest's placeholder, so that searching "guest" lists no guest.
const emailPrefix = `(a.email LIKE ? ESCAPE '\' AND a.email NOT LIKE ?)`

// SearchAccounts implements accounts.Store.
func (db *DB) SearchAccounts(ctx context.Context, f accounts.Filter, afterID string, limit int) ([]accounts.Record, error) {
	if f.EmailPrefix != "" && f.ID == "" && f.Plan == "" && f.Active == nil && f.Verified == nil && f.Disabled == nil && f.Guest == nil {
		return db.searchByEmailPrefix(ctx, f, afterID, limit)
	}
	q := `SELECT ` + accountColumns + recordCounts + accountFrom + `1 = 1`
	args := []any{f.Now}
	switch {
	case f.EmailPrefix != "" && f.ID != "":
		q += ` AND (` + emailPrefix + ` OR a.id = ?)`
		args = append(args, likePrefix(f.EmailPrefix), placeholderSuffix, f.ID)
	case f.EmailPrefix != "":
		q += ` AND ` + emailPrefix
		args = append(args, likePrefix(f.EmailPrefix), placeholderSuffix)
	case f.ID != "":
		q += ` AND a.id = ?`
		args = append(args, f.ID)
	}
	if f.Plan != "" {
		q += ` AND a.subscription_plan = ?`
		args = append(args, f.Plan)
	}
	if f.Active != nil {
		if *f.Active {
			q += ` AND a.subscription_expires_at > ?`
		} else {
			q += ` AND a.subscription_expires_at <= ?`
		}
		args = append(args, f.Now)
	}
	if f.Verified != nil {
		if *f.Verified {
			q += ` AND a.email_verified_at IS NOT NULL`
		} else {
			q += ` AND a.email_verified_at IS NULL`
		}
	}
	if f.Disabled != nil {
		if *f.Disabled {
			q += ` AND a.disabled_at IS NOT NULL`
		} else {
			q += ` AND a.disabled_at IS NULL`
		}
	}
	if f.Guest != nil {
		if *f.Guest {
			q += ` AND a.guest_install_id IS NOT NULL`
		} else {
			q += ` AND a.guest_install_id IS NULL`
		}
	}
	if afterID != "" {
		q += ` AND a.id < ?`
		args = append(args, afterID)
	}
	q += ` ORDER BY a.id DESC LIMIT ?`
	args = append(args, limit)
	rs, err := db.conn().query(ctx, q, args...)
	return collect(rs, err, scanRecord)
}

// searchByEmailPrefix is the console's search by the beginning of an
// address alone, in two steps: the page's ids from the index of live
// accounts by email and id (migration 0051; no table row read to choose
// them), then those rows. One query: the same page SearchAccounts's
// general form would give.
func (db *DB) searchByEmailPrefix(ctx context.Context, f accounts.Filter, afterID string, limit int) ([]accounts.Record, error) {
	inner := `SELECT id FROM accounts WHERE deleted_at IS NULL AND email LIKE ? ESCAPE '\' AND email NOT LIKE ?`
	args := []any{f.Now, likePrefix(f.EmailPrefix), placeholderSuffix}
	if afterID != "" {
		inner += ` AND id < ?`
		args = append(args, afterID)
	}
	inner += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rs, err := db.conn().query(ctx, `SELECT `+accountColumns+recordCounts+accountFrom+`a.id IN (`+inner+`) ORDER BY a.id DESC`, args...)
	return collect(rs, err, scanRecord)
}

// AccountRecord implements accounts.Store.
func (db *DB) AccountRecord(ctx context.Context, id string) (accounts.Record, error) {
	return scanRecord(db.conn().queryRow(ctx, `SELECT `+accountColumns+recordCounts+accountFrom+`a.id = ?`, db.Now(), id))
}

// operatorsLock is the PostgreSQL advisory lock (with the schema's hash,
// so that deployments sharing a server do not wait for each other) held by
// every change that may take an account out of the enabled admins, so that
// two of them are decided one after the other: without it, two admins
// disabling each other would each count the other as enabled, and both
// succeed.
const operatorsLock = 72_630_042 // "herald operators"

// standing reads what allow decides on: on PostgreSQL under the lock of
// the operators (SQLite's IMMEDIATE transaction holds the database's write
// lock already), the account's row under its lock, and the other enabled
// admins. ErrNotFound when the account is unknown or deleted.
func (tx *Tx) standing(ctx context.Context, id string) (accounts.Standing, error) {
	if tx.db.dialect == storage.Postgres {
		if _, err := tx.q.exec(ctx, `SELECT pg_advisory_xact_lock(?, hashtext(current_schema()))`, operatorsLock); err != nil {
			return accounts.Standing{}, err
		}
	}
	a, err := scanAccount(tx.q.queryRow(ctx, `SELECT `+accountColumns+accountFrom+`a.id = ?`+tx.db.forUpdate(), id))
	if err != nil {
		return accounts.Standing{}, err
	}
	st := accounts.Standing{Account: a}
	err = tx.q.queryRow(ctx, `SELECT COUNT(*) FROM accounts WHERE deleted_at IS NULL AND disabled_at IS NULL AND id <> ? AND ' ' || scope || ' ' LIKE ?`,
		id, "% "+auth.ScopeAdmin+" %").Scan(&st.OtherAdmins)
	return st, err
}

// check calls allow, when there is one, with the account's standing.
func (tx *Tx) check(ctx context.Context, id string, allow func(accounts.Standing) error) error {
	if allow == nil {
		return nil
	}
	st, err := tx.standing(ctx, id)
	if err != nil {
		return err
	}
	return allow(st)
}

// SetDisabled implements accounts.Store. The account's row is updated
// before its sessions are revoked: on PostgreSQL a login that is creating
// a session holds that row (CreateSession), so the revocation that
// follows sees its session.
func (db *DB) SetDisabled(ctx context.Context, id string, disabled bool, reason string, allow func(accounts.Standing) error) (bool, error) {
	var changed bool
	err := db.inTx(ctx, func(tx *Tx) error {
		if err := tx.check(ctx, id, allow); err != nil {
			return err
		}
		var n int64
		var err error
		if disabled {
			n, err = tx.q.exec(ctx, `UPDATE accounts SET disabled_at = ?, disabled_reason = ? WHERE id = ? AND deleted_at IS NULL AND disabled_at IS NULL`, tx.now, reason, id)
		} else {
			n, err = tx.q.exec(ctx, `UPDATE accounts SET disabled_at = NULL, disabled_reason = '' WHERE id = ? AND deleted_at IS NULL AND disabled_at IS NOT NULL`, id)
		}
		if err != nil {
			return err
		}
		if n == 0 {
			// Unchanged: the account is already so, or does not exist.
			var found string
			return tx.q.queryRow(ctx, `SELECT id FROM accounts WHERE id = ? AND deleted_at IS NULL`, id).Scan(&found)
		}
		changed = true
		if !disabled {
			return nil
		}
		return tx.revokeAllSessions(ctx, id)
	})
	return changed, err
}

// LockAccountForDeletion implements accounts.Store (inside InTx).
func (db *DB) LockAccountForDeletion(ctx context.Context, id string, allow func(accounts.Standing) error) error {
	return db.inCallersTx(ctx, func(tx *Tx) error {
		if err := tx.check(ctx, id, allow); err != nil {
			return err
		}
		var found string
		return tx.q.queryRow(ctx, `SELECT id FROM accounts WHERE id = ? AND deleted_at IS NULL`+db.forUpdate(), id).Scan(&found)
	})
}

// erasures are the statements of the row-level steps of deleting an
// account; each takes the account's id.
var erasures = map[accounts.Erasure]string{
	accounts.EraseRefreshTokens:           `DELETE FROM refresh_tokens WHERE session_id IN (SELECT id FROM sessions WHERE account_id = ?)`,
	accounts.EraseSessions:                `DELETE FROM sessions WHERE account_id = ?`,
	accounts.EraseDevices:                 `DELETE FROM devices WHERE account_id = ?`,
	accounts.EraseOneTimeCodes:            `DELETE FROM one_time_codes WHERE account_id = ?`,
	accounts.ErasePendingCodes:            `DELETE FROM pending_codes WHERE account_id = ?`,
	accounts.EraseCodeSends:               `DELETE FROM code_sends WHERE account_id = ?`,
	accounts.EraseCodeSendLeases:          `DELETE FROM code_send_leases WHERE account_id = ?`,
	accounts.EraseMessengerLinks:          `DELETE FROM telegram_link_tokens WHERE user_id = ?`,
	accounts.UnlinkMessenger:              `UPDATE telegram_subscribers SET user_id = NULL WHERE user_id = ?`,
	accounts.EraseGrants:                  `DELETE FROM entitlements WHERE account_id = ? AND source IN ('trial', 'admin', 'referral')`,
	accounts.UnlinkPurchaseHistory:        `UPDATE entitlement_changes SET account_id = NULL WHERE account_id = ?`,
	accounts.UnlinkPurchases:              `UPDATE entitlements SET account_id = NULL WHERE account_id = ?`,
	accounts.EraseMFAFactors:              `DELETE FROM mfa_factors WHERE account_id = ?`,
	accounts.EraseMFARecoveryCodes:        `DELETE FROM mfa_recovery_codes WHERE account_id = ?`,
	accounts.EraseMFAFailures:             `DELETE FROM mfa_failures WHERE account_id = ?`,
	accounts.EraseMFAChallenges:           `DELETE FROM mfa_challenges WHERE account_id = ?`,
	accounts.ErasePasskeys:                `DELETE FROM passkey_credentials WHERE account_id = ?`,
	accounts.ErasePasskeyCeremonies:       `DELETE FROM passkey_ceremonies WHERE account_id = ?`,
	accounts.EraseSecurityLog:             `DELETE FROM security_events WHERE account_id = ?`,
	accounts.EraseNotificationPreferences: `DELETE FROM notification_preferences WHERE account_id = ?`,
	accounts.EraseNotificationSchedule:    `DELETE FROM notification_schedules WHERE account_id = ?`,
	accounts.EraseNotificationDigests:     `DELETE FROM notification_digests WHERE account_id = ?`,
	accounts.EraseInbox:                   `DELETE FROM inbox_items WHERE account_id = ?`,
	accounts.EraseNotificationCapCounts:   `DELETE FROM notification_cap_counts WHERE account_id = ?`,
	accounts.EraseNotificationCapUses:     `DELETE FROM notification_cap_uses WHERE account_id = ?`,
}

// EraseAccount implements accounts.Store (inside InTx).
func (db *DB) EraseAccount(ctx context.Context, id string, step accounts.Erasure) error {
	return db.inCallersTx(ctx, func(tx *Tx) error {
		switch step {
		case accounts.EraseToTombstone:
			// The tombstone: unique placeholders (derived from the id, so
			// no address can ever match them) where the email and
			// referral code were; a guest's install is freed for a new
			// guest.
			tomb := "deleted:" + id
			_, err := tx.q.exec(ctx, `UPDATE accounts SET email = ?, password_hash = '', referral_code = ?, scope = '', email_verified_at = NULL,
				disabled_at = NULL, disabled_reason = '', last_login_at = NULL, guest_install_id = NULL, deleted_at = ? WHERE id = ?`, tomb, tomb, tx.now, id)
			return err
		case accounts.EraseIdentities:
			if err := tx.revokeIdentityTokens(ctx, `account_id = ?`, id); err != nil {
				return err
			}
			_, err := tx.q.exec(ctx, `DELETE FROM identities WHERE account_id = ?`, id)
			return err
		case accounts.ScrubEvents:
			return tx.scrubAccountEvents(ctx, id)
		case accounts.AnnounceRevokedAccount:
			// The sessions' rows are gone; every replica forgets them too.
			return tx.revoked(ctx, sessions.RevokedAccount, id)
		}
		stmt, ok := erasures[step]
		if !ok {
			return fmt.Errorf("sqlstore: unknown step %q of deleting an account", step)
		}
		_, err := tx.q.exec(ctx, stmt, id)
		return err
	})
}

// AccountTombstone is what remains of an account's row: its email,
// password hash and deleted_at (for the tests that check deletion).
func (db *DB) AccountTombstone(ctx context.Context, id string) (email, passwordHash string, deleted bool, err error) {
	var at *string
	err = db.conn().queryRow(ctx, `SELECT email, password_hash, CAST(deleted_at AS TEXT) FROM accounts WHERE id = ?`, id).Scan(&email, &passwordHash, &at)
	return email, passwordHash, at != nil, err
}
