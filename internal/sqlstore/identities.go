package sqlstore

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/identities"
	"github.com/herald-vpn/herald/internal/storage"
)

// The store of provider identities (identities.Store). Apple's refresh
// token is sealed, bound to its identity's row (identitySecretContext).

func identitySecretContext(id string) string { return "identities:" + id }

const identityColumns = `id, account_id, provider, subject, email, private_relay, revoke_token IS NOT NULL, created_at, last_used_at`

func scanIdentity(r row) (identities.Identity, error) {
	var i identities.Identity
	var provider string
	var used *time.Time
	if err := r.Scan(&i.ID, &i.AccountID, &provider, &i.Subject, &i.Email, &i.PrivateRelay, &i.HasRevokeToken, &i.CreatedAt, &used); err != nil {
		return i, err
	}
	i.Provider, i.CreatedAt = identities.Provider(provider), i.CreatedAt.UTC()
	if used != nil {
		t := used.UTC()
		i.LastUsedAt = &t
	}
	return i, nil
}

// LockIdentity implements identities.Store.
func (db *DB) LockIdentity(ctx context.Context, p identities.Provider, subject string) (identities.Identity, error) {
	var i identities.Identity
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		var err error
		i, err = scanIdentity(tx.q.queryRow(ctx, `SELECT `+identityColumns+` FROM identities WHERE provider = ? AND subject = ?`+db.forUpdate(), string(p), subject))
		return err
	})
	return i, err
}

// InsertIdentity implements identities.Store: storage.ErrConflict when
// the (provider, subject) is held already.
func (db *DB) InsertIdentity(ctx context.Context, i identities.Identity) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `INSERT INTO identities (id, account_id, provider, subject, email, private_relay, created_at, last_used_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			i.ID, i.AccountID, string(i.Provider), i.Subject, i.Email, i.PrivateRelay, i.CreatedAt, i.LastUsedAt)
		return err
	})
}

// TouchIdentity implements identities.Store.
func (db *DB) TouchIdentity(ctx context.Context, id string, at time.Time) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE identities SET last_used_at = ? WHERE id = ?`, at, id)
		return err
	})
}

// SetIdentityRevokeToken implements identities.Store.
func (db *DB) SetIdentityRevokeToken(ctx context.Context, id, token string) error {
	return db.inTx(ctx, func(tx *Tx) error {
		_, err := tx.q.exec(ctx, `UPDATE identities SET revoke_token = ? WHERE id = ?`, db.keys.Seal([]byte(token), identitySecretContext(id)), id)
		return err
	})
}

// OpenRevokeToken opens a sealed revoke token of the identity id (the
// revocation job's).
func (db *DB) OpenRevokeToken(identityID string, sealed []byte) (string, error) {
	plain, err := db.keys.Open(sealed, identitySecretContext(identityID))
	return string(plain), err
}

// Identities implements identities.Store.
func (db *DB) Identities(ctx context.Context, accountID string) ([]identities.Identity, error) {
	rs, err := db.conn().query(ctx, `SELECT `+identityColumns+` FROM identities WHERE account_id = ? ORDER BY created_at, id`, accountID)
	return collect(rs, err, scanIdentity)
}

// DeleteIdentity implements identities.Store.
func (db *DB) DeleteIdentity(ctx context.Context, accountID, id string) (identities.Identity, error) {
	var i identities.Identity
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		if i, err = scanIdentity(tx.q.queryRow(ctx, `SELECT `+identityColumns+` FROM identities WHERE id = ? AND account_id = ?`+db.forUpdate(), id, accountID)); err != nil {
			return err
		}
		if err := tx.revokeIdentityTokens(ctx, `id = ?`, id); err != nil {
			return err
		}
		n, err := tx.q.exec(ctx, `DELETE FROM identities WHERE id = ?`, id)
		if err == nil && n == 0 {
			err = storage.ErrNotFound
		}
		return err
	})
	return i, err
}

// revokeIdentityTokens enqueues the revocation of the tokens of the
// identities where (a condition on one argument) holds, before they go.
func (tx *Tx) revokeIdentityTokens(ctx context.Context, where string, arg any) error {
	type held struct {
		id, provider string
		sealed       []byte
	}
	rs, err := tx.q.query(ctx, `SELECT id, provider, revoke_token FROM identities WHERE revoke_token IS NOT NULL AND `+where, arg)
	tokens, err := collect(rs, err, func(r row) (held, error) {
		var h held
		return h, r.Scan(&h.id, &h.provider, &h.sealed)
	})
	if err != nil {
		return err
	}
	for _, h := range tokens {
		if _, err := tx.InsertJob(ctx, identities.RevokeArgs{IdentityID: h.id, Provider: identities.Provider(h.provider), Sealed: h.sealed}, nil); err != nil {
			return err
		}
	}
	return nil
}

// WaysIn implements identities.Store.
func (db *DB) WaysIn(ctx context.Context, accountID string) (identities.WaysIn, error) {
	var w identities.WaysIn
	err := db.inCallersTx(ctx, func(tx *Tx) error {
		var hash string
		if err := tx.q.queryRow(ctx, `SELECT password_hash FROM accounts WHERE id = ?`+db.forUpdate(), accountID).Scan(&hash); err != nil {
			return err
		}
		w.Password = hash != ""
		if err := tx.q.queryRow(ctx, `SELECT COUNT(*) FROM passkey_credentials WHERE account_id = ?`, accountID).Scan(&w.Passkeys); err != nil {
			return err
		}
		return tx.q.queryRow(ctx, `SELECT COUNT(*) FROM identities WHERE account_id = ?`, accountID).Scan(&w.Identities)
	})
	return w, err
}
