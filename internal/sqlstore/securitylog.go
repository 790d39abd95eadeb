package sqlstore

import (
	"context"
	"encoding/json"
	"time"

	"github.com/herald-vpn/herald/internal/securitylog"
)

// RecordSecurityEvent writes e to the account's security log (the
// operators' log, account_id NULL, when e.AccountID is ""), in the
// transaction ctx carries when there is one (so the entry commits or
// rolls back with the change it records), in its own otherwise (a failed
// login). e is normalized first; its device key is kept for the
// new-device rule.
func (db *DB) RecordSecurityEvent(ctx context.Context, e securitylog.Event) error {
	if err := e.Normalize(); err != nil {
		return err
	}
	detail := []byte("{}")
	if len(e.Detail) > 0 {
		var err error
		if detail, err = json.Marshal(e.Detail); err != nil {
			return err
		}
	}
	return db.inTx(ctx, func(tx *Tx) error {
		at := e.At
		if at.IsZero() {
			at = tx.now
		}
		_, err := tx.q.exec(ctx, `INSERT INTO security_events (id, account_id, kind, outcome, actor, ip, user_agent, device_key, detail, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			e.ID, nullable(e.AccountID), string(e.Kind), string(e.Outcome), e.Actor, e.IP, e.UserAgent, securitylog.DeviceKey(e.UserAgent, e.IP), string(detail), at)
		return err
	})
}

// SecurityEvents lists an account's security log (the operators' log,
// the entries of no account, when accountID is ""), newest first: at most
// limit entries with ids below beforeID ("" for the newest).
func (db *DB) SecurityEvents(ctx context.Context, accountID, beforeID string, limit int) ([]securitylog.Event, error) {
	q := `SELECT id, COALESCE(account_id, ''), kind, outcome, actor, ip, user_agent, detail, created_at FROM security_events WHERE account_id = ?`
	args := []any{accountID}
	if accountID == "" {
		q, args = `SELECT id, '', kind, outcome, actor, ip, user_agent, detail, created_at FROM security_events WHERE account_id IS NULL`, nil
	}
	if beforeID != "" {
		q += ` AND id < ?`
		args = append(args, beforeID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rs, err := db.txOrConn(ctx).query(ctx, q, args...)
	return collect(rs, err, func(r row) (securitylog.Event, error) {
		var e securitylog.Event
		var kind, outcome, detail string
		if err := r.Scan(&e.ID, &e.AccountID, &kind, &outcome, &e.Actor, &e.IP, &e.UserAgent, &detail, &e.At); err != nil {
			return e, err
		}
		e.Kind, e.Outcome = securitylog.Kind(kind), securitylog.Outcome(outcome)
		if detail != "" && detail != "{}" {
			if err := json.Unmarshal([]byte(detail), &e.Detail); err != nil {
				return e, err
			}
		}
		return e, nil
	})
}

// SignInHistory reports whether the account signed in successfully
// before, and whether with device key, for securitylog.AlertsFor: two
// EXISTS, not the account's every key.
func (db *DB) SignInHistory(ctx context.Context, accountID, key string) (before, seen bool, err error) {
	// Inside the sign-in's transaction, on its connection: a second one
	// from the pool while it holds one could wait on its peers for good.
	const signIns = `SELECT 1 FROM security_events WHERE account_id = ? AND kind = ? AND outcome = ?`
	err = db.txOrConn(ctx).queryRow(ctx, `SELECT EXISTS (`+signIns+`), EXISTS (`+signIns+` AND device_key = ?)`,
		accountID, string(securitylog.LoginOK), string(securitylog.OK), accountID, string(securitylog.LoginOK), string(securitylog.OK), key).Scan(&before, &seen)
	return before, seen, err
}

// PruneSecurityLog deletes the entries older than retention.
func (db *DB) PruneSecurityLog(ctx context.Context, retention time.Duration) (int64, error) {
	var n int64
	err := db.inTx(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.q.exec(ctx, `DELETE FROM security_events WHERE created_at < ?`, tx.now.Add(-retention))
		return err
	})
	return n, err
}
