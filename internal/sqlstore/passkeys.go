package sqlstore

import (
	"context"
	"errors"
	"time"

	"github.com/herald-vpn/herald/internal/passkeys"
	"github.com/herald-vpn/herald/internal/storage"
)

// The store of passkeys (passkeys.Store, and mfa.Store's HasPasskey and
// DeletePasskeys). A credential's record is the library's JSON; its
// credential id and signature counter are columns too.

const passkeyColumns = `id, account_id, name, record, counter_regressions, last_regression_at, created_at, last_used_at`

func scanPasskey(r row) (passkeys.Credential, error) {
	var c passkeys.Credential
	var record string
	var regressed, used *time.Time
	if err := r.Scan(&c.ID, &c.AccountID, &c.Name, &record, &c.CounterRegressions, &regressed, &c.CreatedAt, &used); err != nil {
		return c, err
	}
	rec, err := passkeys.DecodeRecord(record)
	if err != nil {
		return c, err
	}
	c.Record, c.CreatedAt = rec, c.CreatedAt.UTC()
	if regressed != nil {
		t := regressed.UTC()
		c.LastRegressionAt = &t
	}
	if used != nil {
		t := used.UTC()
		c.LastUsedAt = &t
	}
	return c, nil
}

// Passkeys implements passkeys.Store.
func (db *DB) Passkeys(ctx context.Context, accountID string) ([]passkeys.Credential, error) {
	rs, err := db.mfaReader(ctx).query(ctx, `SELECT `+passkeyColumns+` FROM passkey_credentials WHERE account_id = ? ORDER BY created_at, id`, accountID)
	return collect(rs, err, scanPasskey)
}

// LockPasskeyByCredentialID implements passkeys.Store.
func (db *DB) LockPasskeyByCredentialID(ctx context.Context, credentialID []byte) (passkeys.Credential, error) {
	var c passkeys.Credential
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		var err error
		c, err = scanPasskey(tx.q.queryRow(ctx, `SELECT `+passkeyColumns+` FROM passkey_credentials WHERE credential_id = ?`+db.forUpdate(), credentialID))
		return err
	})
	return c, err
}

// InsertPasskey implements passkeys.Store.
func (db *DB) InsertPasskey(ctx context.Context, c passkeys.Credential) error {
	record, err := passkeys.EncodeRecord(c.Record)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO passkey_credentials (id, account_id, credential_id, name, record, sign_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.AccountID, c.Record.ID, c.Name, record, int64(c.Record.Authenticator.SignCount), c.CreatedAt)
		return err
	})
}

// SavePasskeyUse implements passkeys.Store.
func (db *DB) SavePasskeyUse(ctx context.Context, c passkeys.Credential) error {
	record, err := passkeys.EncodeRecord(c.Record)
	if err != nil {
		return err
	}
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE passkey_credentials SET record = ?, sign_count = ?, counter_regressions = ?, last_regression_at = ?, last_used_at = ? WHERE id = ? AND account_id = ?`,
			record, int64(c.Record.Authenticator.SignCount), c.CounterRegressions, c.LastRegressionAt, c.LastUsedAt, c.ID, c.AccountID)
		if err == nil && n == 0 {
			err = storage.ErrNotFound
		}
		return err
	})
}

// RenamePasskey implements passkeys.Store.
func (db *DB) RenamePasskey(ctx context.Context, accountID, id, name string) (passkeys.Credential, error) {
	var c passkeys.Credential
	err := db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE passkey_credentials SET name = ? WHERE id = ? AND account_id = ?`, name, id, accountID)
		if err != nil {
			return err
		}
		if n == 0 {
			return storage.ErrNotFound
		}
		c, err = scanPasskey(tx.q.queryRow(ctx, `SELECT `+passkeyColumns+` FROM passkey_credentials WHERE id = ?`, id))
		return err
	})
	return c, err
}

// DeletePasskey implements passkeys.Store.
func (db *DB) DeletePasskey(ctx context.Context, accountID, id string) (bool, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.exec(ctx, `DELETE FROM passkey_credentials WHERE id = ? AND account_id = ?`, id, accountID)
		return err
	})
	return n > 0, err
}

// DeletePasskeys implements mfa.Store.
func (db *DB) DeletePasskeys(ctx context.Context, accountID string) (int, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.exec(ctx, `DELETE FROM passkey_credentials WHERE account_id = ?`, accountID)
		return err
	})
	return int(n), err
}

// CountPasskeys implements mfa.Store.
func (db *DB) CountPasskeys(ctx context.Context, accountID string) (int, error) {
	var n int
	err := db.mfaReader(ctx).queryRow(ctx, `SELECT COUNT(*) FROM passkey_credentials WHERE account_id = ?`, accountID).Scan(&n)
	return n, err
}

// HasPasskey implements mfa.Store.
func (db *DB) HasPasskey(ctx context.Context, accountID string) (bool, error) {
	var n int
	err := db.mfaReader(ctx).queryRow(ctx, `SELECT COUNT(*) FROM passkey_credentials WHERE account_id = ?`, accountID).Scan(&n)
	if errors.Is(err, storage.ErrNotFound) {
		return false, nil
	}
	return n > 0, err
}

// CreatePasskeyCeremony implements passkeys.Store.
func (db *DB) CreatePasskeyCeremony(ctx context.Context, c passkeys.Ceremony) error {
	session, err := passkeys.EncodeCeremonySession(c.Session)
	if err != nil {
		return err
	}
	var account *string
	if c.AccountID != "" {
		account = &c.AccountID
	}
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO passkey_ceremonies (id, kind, account_id, challenge, session, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			c.ID, c.Kind, account, c.Challenge, session, c.CreatedAt, c.ExpiresAt)
		return err
	})
}

// LockPasskeyCeremony implements passkeys.Store.
func (db *DB) LockPasskeyCeremony(ctx context.Context, id, challenge string) (passkeys.Ceremony, error) {
	var c passkeys.Ceremony
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		where, arg := `id = ?`, id
		if id == "" {
			where, arg = `challenge = ?`, challenge
		}
		var account *string
		var session string
		var used *time.Time
		err := tx.q.queryRow(ctx, `SELECT id, kind, account_id, challenge, session, created_at, expires_at, used_at FROM passkey_ceremonies WHERE `+where+db.forUpdate(), arg).
			Scan(&c.ID, &c.Kind, &account, &c.Challenge, &session, &c.CreatedAt, &c.ExpiresAt, &used)
		if err != nil {
			return err
		}
		if account != nil {
			c.AccountID = *account
		}
		if c.Session, err = passkeys.DecodeCeremonySession(session); err != nil {
			return err
		}
		c.CreatedAt, c.ExpiresAt = c.CreatedAt.UTC(), c.ExpiresAt.UTC()
		if used != nil {
			u := used.UTC()
			c.UsedAt = &u
		}
		return nil
	})
	return c, err
}

// UsePasskeyCeremony implements passkeys.Store.
func (db *DB) UsePasskeyCeremony(ctx context.Context, id string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		n, err := tx.q.exec(ctx, `UPDATE passkey_ceremonies SET used_at = ? WHERE id = ? AND used_at IS NULL`, tx.now, id)
		if err == nil && n == 0 {
			err = storage.ErrConflict
		}
		return err
	})
}
