package sqlstore

import (
	"context"
	"strings"

	"github.com/herald-vpn/herald/internal/devices"
)

// InImportTx implements devices.Store: fn reads and writes one import batch
// through the row-level methods of devices.ImportTx, in one transaction.
func (db *DB) InImportTx(ctx context.Context, fn func(devices.ImportTx) error) error {
	return db.inTx(ctx, func(tx *Tx) error { return fn(tx) })
}

// AccountIDsByEmail implements devices.ImportTx, in one query per 500
// emails.
func (tx *Tx) AccountIDsByEmail(ctx context.Context, emails []string) (map[string]string, error) {
	out := make(map[string]string, len(emails))
	for chunk := range chunks(anys(emails), batchIDs) {
		rs, err := tx.q.query(ctx, `SELECT id, email FROM accounts WHERE email IN (`+placeholders(len(chunk))+`)`, chunk...)
		err = each(rs, err, func(r row) error {
			var id, email string
			if err := r.Scan(&id, &email); err != nil {
				return err
			}
			out[email] = id
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TokenHolders implements devices.ImportTx, in one query per 500 tokens.
func (tx *Tx) TokenHolders(ctx context.Context, tokens []string) (map[string]devices.TokenHolder, error) {
	out := make(map[string]devices.TokenHolder, len(tokens))
	for chunk := range chunks(anys(tokens), batchIDs) {
		rs, err := tx.q.query(ctx, `SELECT id, account_id, push_token FROM devices WHERE push_token IN (`+placeholders(len(chunk))+`)`, chunk...)
		err = each(rs, err, func(r row) error {
			var h devices.TokenHolder
			var t string
			if err := r.Scan(&h.DeviceID, &h.AccountID, &t); err != nil {
				return err
			}
			out[t] = h
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// DropTokens implements devices.ImportTx, in one update per 500 devices.
func (tx *Tx) DropTokens(ctx context.Context, deviceIDs []string) error {
	for chunk := range chunks(anys(deviceIDs), batchIDs) {
		if _, err := tx.q.exec(ctx, `UPDATE devices SET push_token = NULL, push_token_status = 'invalid' WHERE id IN (`+placeholders(len(chunk))+`)`, chunk...); err != nil {
			return err
		}
	}
	return nil
}

// PutDevices implements devices.ImportTx, in multi-row upserts of 200
// devices.
func (tx *Tx) PutDevices(ctx context.Context, ds []devices.ImportedDevice) error {
	const perInsert = 200
	for part := range chunks(ds, perInsert) {
		args := make([]any, 0, len(part)*8)
		var values strings.Builder
		for j, d := range part {
			if j > 0 {
				values.WriteString(", ")
			}
			values.WriteString("(?, ?, ?, ?, ?, ?, TRUE, ?, ?)")
			status := devices.TokenValid
			var token any = d.PushToken
			if d.PushToken == "" {
				token, status = nil, devices.TokenInvalid
			}
			args = append(args, d.ID, d.AccountID, d.Platform, d.Name, token, status, tx.now, tx.now)
		}
		if _, err := tx.q.exec(ctx, `INSERT INTO devices (`+deviceColumns+`) VALUES `+values.String()+`
			ON CONFLICT (id) DO UPDATE SET platform = excluded.platform,
				name = CASE WHEN excluded.name = '' THEN devices.name ELSE excluded.name END,
				push_token = excluded.push_token, push_token_status = excluded.push_token_status,
				active = TRUE, last_seen_at = excluded.last_seen_at`, args...); err != nil {
			return err
		}
	}
	return nil
}
