package sqlstore

import (
	"context"

	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/storage"
)

// ListBans implements limits.BanStore.
func (db *DB) ListBans(ctx context.Context) ([]limits.Ban, error) {
	rs, err := db.conn().query(ctx, `SELECT ip, reason, created_at FROM bans ORDER BY created_at, ip`)
	return collect(rs, err, scanBan)
}

// AddBan implements limits.BanStore; banning a banned address keeps the
// first ban.
func (db *DB) AddBan(ctx context.Context, b limits.Ban) error {
	_, err := db.conn().exec(ctx, `INSERT INTO bans (ip, reason, created_at) VALUES (?, ?, ?) ON CONFLICT (ip) DO NOTHING`, b.IP, b.Reason, b.CreatedAt)
	return err
}

// LiftBan removes a ban; storage.ErrNotFound when there was none.
func (db *DB) LiftBan(ctx context.Context, ip string) error {
	n, err := db.conn().exec(ctx, `DELETE FROM bans WHERE ip = ?`, ip)
	if err != nil {
		return err
	}
	if n == 0 {
		return storage.ErrNotFound
	}
	return nil
}

// BanByIP implements limits.BanAdminStore.
func (db *DB) BanByIP(ctx context.Context, ip string) (limits.Ban, error) {
	return scanBan(db.conn().queryRow(ctx, `SELECT ip, reason, created_at FROM bans WHERE ip = ?`, ip))
}

// ListBansAfter implements limits.BanAdminStore with keyset pagination on
// (created_at, ip), newest first.
func (db *DB) ListBansAfter(ctx context.Context, after *limits.BanPosition, limit int) ([]limits.Ban, error) {
	q := `SELECT ip, reason, created_at FROM bans`
	var args []any
	if after != nil {
		q += ` WHERE created_at < ? OR (created_at = ? AND ip < ?)`
		args = append(args, after.CreatedAt, after.CreatedAt, after.IP)
	}
	q += ` ORDER BY created_at DESC, ip DESC LIMIT ?`
	rs, err := db.conn().query(ctx, q, append(args, limit)...)
	return collect(rs, err, scanBan)
}

func scanBan(r row) (limits.Ban, error) {
	var b limits.Ban
	err := r.Scan(&b.IP, &b.Reason, &b.CreatedAt)
	b.CreatedAt = b.CreatedAt.UTC()
	return b, err
}

var _ limits.BanAdminStore = (*DB)(nil)
