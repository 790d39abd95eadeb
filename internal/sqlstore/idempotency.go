package sqlstore

import (
	"context"

	"github.com/herald-vpn/herald/internal/idempotency"
)

// ClaimIdempotencyKey implements idempotency.Store: one statement, so two
// replicas claiming the same key at once cannot both win (the primary key
// decides).
func (db *DB) ClaimIdempotencyKey(ctx context.Context, c idempotency.Claim) (bool, error) {
	n, err := db.conn().exec(ctx, `INSERT INTO idempotency_keys (caller, idem_key, operation, request_hash, status, claim_token, response, claimed_until, created_at)
		VALUES (?, ?, ?, ?, 'pending', ?, NULL, ?, ?)
		ON CONFLICT (caller, idem_key) DO UPDATE SET operation = excluded.operation, request_hash = excluded.request_hash,
			status = 'pending', claim_token = excluded.claim_token, response = NULL,
			claimed_until = excluded.claimed_until, created_at = excluded.created_at
		WHERE idempotency_keys.created_at < ?
			OR (idempotency_keys.status = 'pending' AND idempotency_keys.claimed_until < ? AND idempotency_keys.request_hash = excluded.request_hash)`,
		c.Caller, c.Key, c.Operation, c.RequestHash, c.Token, c.ClaimedUntil, c.Now, c.Now.Add(-idempotency.Window), c.Now)
	return n == 1, err
}

// IdempotencyRecord implements idempotency.Store.
func (db *DB) IdempotencyRecord(ctx context.Context, caller, key string) (idempotency.Record, error) {
	var r idempotency.Record
	var resp *string
	err := db.conn().queryRow(ctx, `SELECT operation, request_hash, status, response, claimed_until FROM idempotency_keys WHERE caller = ? AND idem_key = ?`, caller, key).
		Scan(&r.Operation, &r.RequestHash, &r.Status, &resp, &r.ClaimedUntil)
	if resp != nil {
		r.Response = []byte(*resp)
	}
	return r, err
}

// CompleteIdempotencyKey implements idempotency.Store.
func (db *DB) CompleteIdempotencyKey(ctx context.Context, caller, key, token string, response []byte) error {
	_, err := db.conn().exec(ctx, `UPDATE idempotency_keys SET status = 'done', response = ? WHERE caller = ? AND idem_key = ? AND claim_token = ?`,
		string(response), caller, key, token)
	return err
}

// ReleaseIdempotencyKey implements idempotency.Store.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, caller, key, token string) error {
	_, err := db.conn().exec(ctx, `DELETE FROM idempotency_keys WHERE caller = ? AND idem_key = ? AND claim_token = ? AND status = 'pending'`, caller, key, token)
	return err
}
