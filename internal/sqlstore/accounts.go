package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/sessions"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/riverqueue/river"
)

// profileColumns are what an account's owner sees of it (users/me), and
// the first columns of every account read.
const profileColumns = `a.id, a.email, a.email_verified_at, a.referral_code, a.created_at, a.subscription_plan, a.subscription_expires_at, a.locale, a.subscription_source, a.subscription_auto_renew, a.subscription_grace_ends_at, a.password_change_required, a.guest_install_id IS NOT NULL`

// accountColumns are what the other account reads return. The password
// hash is not among them: only the reads that check a password select it,
// so that an authenticated request does not load it.
const accountColumns = profileColumns + `, a.scope, a.disabled_at, a.disabled_reason, a.last_login_at`

// accountFrom never finds a deleted account (a tombstone); the caller
// appends its conditions.
const accountFrom = ` FROM accounts a WHERE a.deleted_at IS NULL AND `

// profileDest is where profileColumns scan to; accountDest where
// accountColumns do.
func profileDest(a *accounts.Account) []any {
	return []any{&a.ID, &a.Email, &a.EmailVerifiedAt, &a.ReferralCode, &a.CreatedAt, &a.Subscription.Plan, &a.Subscription.ExpiresAt, &a.Locale, &a.Subscription.Source, &a.Subscription.AutoRenew, &a.Subscription.GraceEndsAt, &a.PasswordChangeRequired, &a.Guest}
}

func accountDest(a *accounts.Account) []any {
	return append(profileDest(a), &a.Scope, &a.DisabledAt, &a.DisabledReason, &a.LastLoginAt)
}

// accountInUTC puts a scanned account's times in UTC.
func accountInUTC(a *accounts.Account) {
	a.EmailVerifiedAt, a.DisabledAt, a.LastLoginAt = utcPtr(a.EmailVerifiedAt), utcPtr(a.DisabledAt), utcPtr(a.LastLoginAt)
	a.CreatedAt = a.CreatedAt.UTC()
	a.Subscription.ExpiresAt = a.Subscription.ExpiresAt.UTC()
	a.Subscription.GraceEndsAt = utcPtr(a.Subscription.GraceEndsAt)
}

// scanAccount scans accountColumns, then extra.
func scanAccount(r row, extra ...any) (accounts.Account, error) {
	var a accounts.Account
	if err := r.Scan(append(accountDest(&a), extra...)...); err != nil {
		return accounts.Account{}, err
	}
	accountInUTC(&a)
	return a, nil
}

// AccountIDByReferralCode implements accounts.Store.
func (db *DB) AccountIDByReferralCode(ctx context.Context, code string) (string, error) {
	var id string
	err := db.inTx(ctx, func(tx *Tx) error {
		return tx.q.queryRow(ctx, `SELECT id FROM accounts WHERE referral_code = ?`, code).Scan(&id)
	})
	return id, err
}

// InsertAccount implements accounts.Store.
func (db *DB) InsertAccount(ctx context.Context, n accounts.NewAccount, sub subscriptions.Subscription) error {
	return db.inTx(ctx, func(tx *Tx) error {
		var verifiedAt *time.Time
		if n.Verified {
			verifiedAt = &tx.now
		}
		var guest *string
		if n.GuestInstallID != "" {
			guest = &n.GuestInstallID
		}
		_, err := tx.q.exec(ctx, `INSERT INTO accounts (id, email, password_hash, referral_code, scope, locale, email_verified_at, created_at,
			subscription_plan, subscription_expires_at, subscription_source, subscription_updated_at, guest_install_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			n.ID, n.Email, n.PasswordHash, n.ReferralCode, n.Scope, n.Locale, verifiedAt, tx.now, sub.Plan, sub.ExpiresAt, string(sub.Source), tx.now, guest)
		return err
	})
}

// InsertReferralReward implements accounts.Store.
func (db *DB) InsertReferralReward(ctx context.Context, referredID, referrerID string, bonus time.Duration) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO referral_rewards (referred_id, referrer_id, bonus_seconds, created_at) VALUES (?, ?, ?, ?)`,
			referredID, referrerID, int64(bonus/time.Second), tx.now)
		return err
	})
}

// lockSubscription reads a live account's subscription and locks its row
// until the transaction ends (PostgreSQL FOR UPDATE; SQLite's IMMEDIATE
// transaction holds the write lock already). ErrNotFound for an unknown or
// deleted account.
func (tx *Tx) lockSubscription(ctx context.Context, accountID string) (subscriptions.Subscription, error) {
	var sub subscriptions.Subscription
	err := tx.q.queryRow(ctx, `SELECT subscription_plan, subscription_expires_at, subscription_source, subscription_auto_renew, subscription_grace_ends_at
		FROM accounts WHERE id = ? AND deleted_at IS NULL`+tx.db.forUpdate(), accountID).
		Scan(&sub.Plan, &sub.ExpiresAt, &sub.Source, &sub.AutoRenew, &sub.GraceEndsAt)
	sub.ExpiresAt, sub.GraceEndsAt = sub.ExpiresAt.UTC(), utcPtr(sub.GraceEndsAt)
	return sub, err
}

// SaveSubscription implements subscriptions.Store.
func (db *DB) SaveSubscription(ctx context.Context, accountID string, sub subscriptions.Subscription) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE accounts SET subscription_plan = ?, subscription_expires_at = ?, subscription_source = ?, subscription_auto_renew = ?,
			subscription_grace_ends_at = ?, subscription_updated_at = ? WHERE id = ?`,
			sub.Plan, sub.ExpiresAt, sub.Source, sub.AutoRenew, sub.GraceEndsAt, tx.now, accountID)
		return err
	})
}

// AccountProfile implements accounts.Store: the hottest read of an
// authenticated client, so it reads no column that users/me does not show.
func (db *DB) AccountProfile(ctx context.Context, id string) (accounts.Account, error) {
	var a accounts.Account
	if err := db.conn().queryRow(ctx, `SELECT `+profileColumns+accountFrom+`a.id = ?`, id).Scan(profileDest(&a)...); err != nil {
		return accounts.Account{}, err
	}
	accountInUTC(&a)
	return a, nil
}

// AccountByEmail implements accounts.Store; email is already normalized.
func (db *DB) AccountByEmail(ctx context.Context, email string) (accounts.Account, error) {
	var hash string
	a, err := scanAccount(db.txOrConn(ctx).queryRow(ctx, `SELECT `+accountColumns+`, a.password_hash`+accountFrom+`a.email = ?`, email), &hash)
	a.PasswordHash = hash
	return a, err
}

// AccountPasswordHash implements accounts.Store.
func (db *DB) AccountPasswordHash(ctx context.Context, id string) (string, error) {
	var hash string
	err := db.conn().queryRow(ctx, `SELECT a.password_hash`+accountFrom+`a.id = ?`, id).Scan(&hash)
	return hash, err
}

// AccountByID implements accounts.Store.
func (db *DB) AccountByID(ctx context.Context, id string) (accounts.Account, error) {
	return scanAccount(db.txOrConn(ctx).queryRow(ctx, `SELECT `+accountColumns+accountFrom+`a.id = ?`, id))
}

// AcquireSendLease implements accounts.Store: one conditional upsert, so
// two replicas cannot both win.
func (db *DB) AcquireSendLease(ctx context.Context, accountID string, p accounts.Purpose, until time.Time) (bool, error) {
	// The lease's times are the database's clock (clock.go).
	n, err := db.conn().exec(ctx, `INSERT INTO code_send_leases (account_id, purpose, locked_until) VALUES (?, ?, `+db.dbAt()+`)
		ON CONFLICT (account_id, purpose) DO UPDATE SET locked_until = excluded.locked_until
		WHERE code_send_leases.locked_until < `+db.dbAt(), accountID, string(p), db.dbUntilArg(until), db.dbAtArg(0))
	return n == 1, err
}

// ReleaseSendLease implements accounts.Store.
func (db *DB) ReleaseSendLease(ctx context.Context, accountID string, p accounts.Purpose) error {
	_, err := db.conn().exec(ctx, `DELETE FROM code_send_leases WHERE account_id = ? AND purpose = ?`, accountID, string(p))
	return err
}

// SendStats implements accounts.Store.
func (db *DB) SendStats(ctx context.Context, accountID string, p accounts.Purpose, windowStart time.Time) (accounts.SendStats, error) {
	var st accounts.SendStats
	rs, err := db.conn().query(ctx, `SELECT requested, sent_at FROM code_sends WHERE account_id = ? AND purpose = ? ORDER BY sent_at DESC`, accountID, string(p))
	err = each(rs, err, func(r row) error {
		var requested bool
		var at time.Time
		if err := r.Scan(&requested, &at); err != nil {
			return err
		}
		at = at.UTC()
		if st.LastSent.IsZero() {
			st.LastSent = at
		}
		if !requested {
			return nil
		}
		if st.LastRequested.IsZero() {
			st.LastRequested = at
		}
		if !at.After(windowStart) {
			return errStop
		}
		st.RequestedInWindow++
		st.OldestInWindow = at
		return nil
	})
	return st, err
}

// RecordCodeSent implements accounts.Store.
func (db *DB) RecordCodeSent(ctx context.Context, c accounts.CodeSent) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if err := tx.lockAccount(ctx, c.AccountID); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `DELETE FROM one_time_codes WHERE account_id = ? AND purpose = ?`, c.AccountID, string(c.Purpose)); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `DELETE FROM pending_codes WHERE account_id = ? AND purpose = ?`, c.AccountID, string(c.Purpose)); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO one_time_codes (account_id, purpose, code_hash, expires_at, attempts_left, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			c.AccountID, string(c.Purpose), c.Hash, c.ExpiresAt, c.Attempts, tx.now); err != nil {
			return err
		}
		sentAt := tx.now
		if !c.StartedAt.IsZero() {
			sentAt = c.StartedAt.UTC()
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO code_sends (account_id, purpose, requested, sent_at) VALUES (?, ?, ?, ?)`,
			c.AccountID, string(c.Purpose), c.Requested, sentAt); err != nil {
			return err
		}
		if _, err := tx.q.exec(ctx, `DELETE FROM code_sends WHERE account_id = ? AND sent_at < ?`, c.AccountID, tx.now.Add(-accounts.SendHistory)); err != nil {
			return err
		}
		_, err := tx.q.exec(ctx, `DELETE FROM code_send_leases WHERE account_id = ? AND purpose = ?`, c.AccountID, string(c.Purpose))
		return err
	})
}

// LockAccount implements accounts.Store (inside InTx).
func (db *DB) LockAccount(ctx context.Context, accountID string) error {
	return db.inCallersTx(ctx, func(tx *Tx) error { return tx.lockAccount(ctx, accountID) })
}

// StoredCodes implements accounts.Store.
func (db *DB) StoredCodes(ctx context.Context, accountID string, p accounts.Purpose) (live, pending *accounts.StoredCode, err error) {
	err = db.inTx(ctx, func(tx *Tx) error {
		var l, pe accounts.StoredCode
		err := tx.q.queryRow(ctx, `SELECT code_hash, expires_at, attempts_left FROM one_time_codes WHERE account_id = ? AND purpose = ?`,
			accountID, string(p)).Scan(&l.Hash, &l.ExpiresAt, &l.AttemptsLeft)
		if err == nil {
			live = &l
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		err = tx.q.queryRow(ctx, `SELECT code_hash, expires_at FROM pending_codes WHERE account_id = ? AND purpose = ?`,
			accountID, string(p)).Scan(&pe.Hash, &pe.ExpiresAt)
		if err == nil {
			pending = &pe
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		return nil
	})
	return live, pending, err
}

// SetCodeAttempts implements accounts.Store.
func (db *DB) SetCodeAttempts(ctx context.Context, accountID string, p accounts.Purpose, left int) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE one_time_codes SET attempts_left = ? WHERE account_id = ? AND purpose = ?`, left, accountID, string(p))
		return err
	})
}

// DeleteCodes implements accounts.Store.
func (db *DB) DeleteCodes(ctx context.Context, accountID string, p accounts.Purpose) error {
	return db.inTx(ctx, func(tx *Tx) error {
		for _, table := range []string{"one_time_codes", "pending_codes"} {
			if _, err := tx.q.exec(ctx, `DELETE FROM `+table+` WHERE account_id = ? AND purpose = ?`, accountID, string(p)); err != nil {
				return err
			}
		}
		return nil
	})
}

// MarkVerified implements accounts.Store.
func (db *DB) MarkVerified(ctx context.Context, accountID string) (bool, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) (err error) {
		n, err = tx.q.exec(ctx, `UPDATE accounts SET email_verified_at = ? WHERE id = ? AND email_verified_at IS NULL`, tx.now, accountID)
		return err
	})
	return n > 0, err
}

// RevokeAllSessions implements accounts.Store.
func (db *DB) RevokeAllSessions(ctx context.Context, accountID string) error {
	return db.inTx(ctx, func(tx *Tx) error { return tx.revokeAllSessions(ctx, accountID) })
}

// lockAccount takes the account row's lock for the rest of the
// transaction, so that the code operations of one account serialize.
// SQLite's IMMEDIATE transactions hold the database's write lock already.
func (tx *Tx) lockAccount(ctx context.Context, accountID string) error {
	if tx.db.dialect != storage.Postgres {
		return nil
	}
	var id string
	err := tx.q.queryRow(ctx, `SELECT id FROM accounts WHERE id = ? FOR UPDATE`, accountID).Scan(&id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // nothing to protect: no codes can exist either
	}
	return err
}

// Secret implements accounts.Store.
func (db *DB) Secret(ctx context.Context, name string, generate func() ([]byte, error)) ([]byte, error) {
	var v []byte
	err := db.conn().queryRow(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v)
	if err == nil {
		return db.openSecret(name, v)
	}
	if !errors.Is(err, storage.ErrNotFound) {
		return nil, err
	}
	fresh, err := generate()
	if err != nil {
		return nil, err
	}
	// The first replica to write wins; everyone reads back its value.
	if _, err := db.conn().exec(ctx, `INSERT INTO secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT (name) DO NOTHING`, name, db.sealSecret(name, fresh), db.Now()); err != nil {
		return nil, err
	}
	if err = db.conn().queryRow(ctx, `SELECT value FROM secrets WHERE name = ?`, name).Scan(&v); err != nil {
		return nil, err
	}
	return db.openSecret(name, v)
}

// StagePendingCode implements accounts.Store.
func (db *DB) StagePendingCode(ctx context.Context, accountID string, p accounts.Purpose, hash []byte, expiresAt time.Time) error {
	_, err := db.conn().exec(ctx, `INSERT INTO pending_codes (account_id, purpose, code_hash, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (account_id, purpose) DO UPDATE SET code_hash = excluded.code_hash, expires_at = excluded.expires_at`,
		accountID, string(p), hash, expiresAt)
	return err
}

// DropPendingCode implements accounts.Store.
func (db *DB) DropPendingCode(ctx context.Context, accountID string, p accounts.Purpose) error {
	_, err := db.conn().exec(ctx, `DELETE FROM pending_codes WHERE account_id = ? AND purpose = ?`, accountID, string(p))
	return err
}

// SetLocale implements accounts.Store.
func (db *DB) SetLocale(ctx context.Context, accountID, locale string) error {
	n, err := db.conn().exec(ctx, `UPDATE accounts SET locale = ? WHERE id = ? AND deleted_at IS NULL`, locale, accountID)
	if err == nil && n == 0 {
		err = storage.ErrNotFound
	}
	return err
}

// SetPasswordChangeRequired implements accounts.Store.
func (db *DB) SetPasswordChangeRequired(ctx context.Context, accountID string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE accounts SET password_change_required = TRUE WHERE id = ? AND deleted_at IS NULL`, accountID)
		return err
	})
}

// UpdatePasswordHash implements accounts.Store.
func (db *DB) UpdatePasswordHash(ctx context.Context, accountID, hash string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE accounts SET password_hash = ?, password_change_required = FALSE WHERE id = ?`, hash, accountID)
		return err
	})
}

// RehashPassword implements accounts.Store.
func (db *DB) RehashPassword(ctx context.Context, accountID, hash string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE accounts SET password_hash = ? WHERE id = ?`, hash, accountID)
		return err
	})
}

// SetScope implements accounts.Store.
func (db *DB) SetScope(ctx context.Context, accountID, scope string, revokeSessions bool, allow func(accounts.Standing) error) error {
	return db.inTx(ctx, func(tx *Tx) error {
		if err := tx.check(ctx, accountID, allow); err != nil {
			return err
		}
		n, err := tx.q.exec(ctx, `UPDATE accounts SET scope = ? WHERE id = ?`, scope, accountID)
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		if revokeSessions {
			return tx.revokeAllSessions(ctx, accountID)
		}
		return nil
	})
}

// EnqueueJob implements accounts.Store: in the transaction ctx carries
// (InTx), else on its own.
func (db *DB) EnqueueJob(ctx context.Context, args river.JobArgs) error {
	if tx, ok := db.txOf(ctx); ok {
		_, err := tx.InsertJob(ctx, args, nil)
		return err
	}
	_, err := db.InsertJob(ctx, args, nil)
	return err
}

// ScheduleJob is EnqueueJob for a job River holds until at.
func (db *DB) ScheduleJob(ctx context.Context, args river.JobArgs, at time.Time) error {
	opts := &river.InsertOpts{ScheduledAt: at}
	if tx, ok := db.txOf(ctx); ok {
		_, err := tx.InsertJob(ctx, args, opts)
		return err
	}
	_, err := db.InsertJob(ctx, args, opts)
	return err
}

// SetPendingEmail implements accounts.Store.
func (db *DB) SetPendingEmail(ctx context.Context, accountID, email string) error {
	var v *string
	if email != "" {
		v = &email
	}
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE accounts SET pending_email = ? WHERE id = ? AND deleted_at IS NULL`, v, accountID)
		if err == nil && n == 0 {
			err = storage.ErrNotFound
		}
		return err
	})
}

// PendingEmail implements accounts.Store.
func (db *DB) PendingEmail(ctx context.Context, accountID string) (string, error) {
	var email *string
	err := db.inTx(ctx, func(tx *Tx) error {
		return tx.q.queryRow(ctx, `SELECT pending_email FROM accounts WHERE id = ? AND deleted_at IS NULL`, accountID).Scan(&email)
	})
	if err != nil || email == nil {
		return "", err
	}
	return *email, nil
}

// ChangeEmail implements accounts.Store.
func (db *DB) ChangeEmail(ctx context.Context, accountID, email string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE accounts SET email = ?, email_verified_at = ?, pending_email = NULL WHERE id = ? AND deleted_at IS NULL`, email, tx.now, accountID)
		if err == nil && n == 0 {
			err = storage.ErrNotFound
		}
		return err
	})
}

// RevokeOtherSessions implements accounts.Store: each ended session is
// announced by id, so that every replica's cache drops it and keeps the
// one that stays.
func (db *DB) RevokeOtherSessions(ctx context.Context, accountID, keep string) (int, error) {
	var ended int
	err := db.inTx(ctx, func(tx *Tx) error {
		rs, err := tx.q.query(ctx, `SELECT id FROM sessions WHERE account_id = ? AND id <> ? AND revoked_at IS NULL AND expires_at > ?`, accountID, keep, tx.now)
		ids, err := collect(rs, err, func(r row) (string, error) {
			var id string
			return id, r.Scan(&id)
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			if _, err := tx.q.exec(ctx, `UPDATE sessions SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, tx.now, id); err != nil {
				return err
			}
			if err := tx.revoked(ctx, sessions.RevokedSession, id); err != nil {
				return err
			}
		}
		ended = len(ids)
		return nil
	})
	return ended, err
}

// GuestByInstall implements accounts.Store: the live guest of an app
// install; storage.ErrNotFound for none.
func (db *DB) GuestByInstall(ctx context.Context, installID string) (accounts.Account, error) {
	return scanAccount(db.txOrConn(ctx).queryRow(ctx, `SELECT `+accountColumns+accountFrom+`a.guest_install_id = ?`, installID))
}

// UpgradeGuest implements accounts.Store: the guest becomes an account
// of email (verified or not) and password hash ("" keeps none): false
// when it is no longer a guest. storage.ErrConflict when the email is
// taken.
func (db *DB) UpgradeGuest(ctx context.Context, accountID, email, hash string, verified bool) (bool, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var verifiedAt *time.Time
		if verified {
			verifiedAt = &tx.now
		}
		var err error
		if email == "" {
			n, err = tx.q.exec(ctx, `UPDATE accounts SET guest_install_id = NULL WHERE id = ? AND guest_install_id IS NOT NULL AND deleted_at IS NULL`, accountID)
			return err
		}
		n, err = tx.q.exec(ctx, `UPDATE accounts SET guest_install_id = NULL, email = ?, password_hash = ?, email_verified_at = ? WHERE id = ? AND guest_install_id IS NOT NULL AND deleted_at IS NULL`,
			email, hash, verifiedAt, accountID)
		return err
	})
	return n > 0, err
}

// StaleGuests implements accounts.Store: guests made before `before`
// none of whose sessions was used (signed in or refreshed) since, at most
// limit.
func (db *DB) StaleGuests(ctx context.Context, before time.Time, limit int) ([]string, error) {
	rs, err := db.conn().query(ctx, `SELECT a.id FROM accounts a WHERE a.guest_install_id IS NOT NULL AND a.deleted_at IS NULL AND a.created_at < ?
		AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.account_id = a.id AND (s.created_at >= ? OR s.last_used_at >= ?))
		ORDER BY a.created_at LIMIT ?`, before, before, before, limit)
	return collect(rs, err, func(r row) (string, error) {
		var id string
		return id, r.Scan(&id)
	})
}
