package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apikeys"
)

const apiKeyColumns = `id, name, scopes, secret_hash, rate_limit, expires_at, created_at, last_used_at, revoked_at`

func scanAPIKey(r row) (apikeys.Key, error) {
	var k apikeys.Key
	var scopes string
	err := r.Scan(&k.ID, &k.Name, &scopes, &k.SecretHash, &k.RateLimit, &k.ExpiresAt, &k.CreatedAt, &k.LastUsedAt, &k.RevokedAt)
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt = k.CreatedAt.UTC()
	k.ExpiresAt, k.LastUsedAt, k.RevokedAt = utcPtr(k.ExpiresAt), utcPtr(k.LastUsedAt), utcPtr(k.RevokedAt)
	return k, err
}

// CreateAPIKey implements apikeys.Store.
func (db *DB) CreateAPIKey(ctx context.Context, k apikeys.Key) error {
	_, err := db.conn().exec(ctx, `INSERT INTO api_keys (`+apiKeyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		k.ID, k.Name, strings.Join(k.Scopes, " "), k.SecretHash, k.RateLimit, k.ExpiresAt, k.CreatedAt, k.LastUsedAt, k.RevokedAt)
	return err
}

// APIKeyByID implements apikeys.Store: one primary-key lookup per request
// made with a key.
func (db *DB) APIKeyByID(ctx context.Context, id string) (apikeys.Key, error) {
	return scanAPIKey(db.conn().queryRow(ctx, `SELECT `+apiKeyColumns+` FROM api_keys WHERE id = ?`, id))
}

// ListAPIKeys implements apikeys.Store.
func (db *DB) ListAPIKeys(ctx context.Context) ([]apikeys.Key, error) {
	rs, err := db.conn().query(ctx, `SELECT `+apiKeyColumns+` FROM api_keys ORDER BY created_at DESC, id`)
	return collect(rs, err, scanAPIKey)
}

// RevokeAPIKey implements apikeys.Store.
func (db *DB) RevokeAPIKey(ctx context.Context, id string, at time.Time) (apikeys.Key, error) {
	if _, err := db.conn().exec(ctx, `UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL`, at, id); err != nil {
		return apikeys.Key{}, err
	}
	return db.APIKeyByID(ctx, id)
}

// TouchAPIKey implements apikeys.Store.
func (db *DB) TouchAPIKey(ctx context.Context, id string, at, staleBefore time.Time) error {
	_, err := db.conn().exec(ctx, `UPDATE api_keys SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`, at, id, staleBefore)
	return err
}
