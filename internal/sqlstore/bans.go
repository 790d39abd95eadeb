package sqlstore

import (
	"context"

	"github.com/herald-vpn/herald/internal/limits"
	"github.com/herald-vpn/herald/internal/storage"
)

// ListBans implements limits.BanStore.
func (db *DB) ListBans(ctx context.Context) ([]limits.Ban, error) {
	rs, err := db.conn().query(ctx, `SELECT ip, reason, created_at FROM bans ORDER BY created_at, ip`)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []limits.Ban
	for rs.Next() {
		var b limits.Ban
		if err := rs.Scan(&b.IP, &b.Reason, &b.CreatedAt); err != nil {
			return nil, translate(err)
		}
		b.CreatedAt = b.CreatedAt.UTC()
		out = append(out, b)
	}
	return out, translate(rs.Err())
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
