package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-vpn/herald/internal/seal"
)

// The secrets the store keeps, sealed with the store's keys (Options.Keys,
// HERALD_ENCRYPTION_KEY) when it has them: the rows of the secrets table
// (the generated JWT seed, the HMAC keys of codes, refresh tokens and API
// keys, the Telegram webhook secret), the signing secrets of webhook
// endpoints (secret, previous_secret) and the TOTP secrets of second
// factors (mfa_factors.secret). Each value is bound to its row, so
// a sealed value copied elsewhere does not open. Reads accept plain values
// (written before a key was set); SealSecrets seals them.

func secretContext(name string) string      { return "secrets:" + name }
func webhookSecretContext(id string) string { return "webhook_endpoints:" + id }

// sealSecret is a secrets row's value as stored.
func (db *DB) sealSecret(name string, plain []byte) []byte {
	return db.keys.Seal(plain, secretContext(name))
}

// openSecret is a stored secrets row's plain value.
func (db *DB) openSecret(name string, stored []byte) ([]byte, error) {
	v, err := db.keys.Open(stored, secretContext(name))
	if err != nil {
		return nil, fmt.Errorf("secret %q: %w", name, err)
	}
	return v, nil
}

// sealWebhookSecret is a webhook endpoint's signing secret as stored.
func (db *DB) sealWebhookSecret(id, plain string) string {
	return string(db.keys.Seal([]byte(plain), webhookSecretContext(id)))
}

// openWebhookSecrets opens an endpoint's secret and previous secret ("":
// none).
func (db *DB) openWebhookSecrets(id, secret, previous string) (string, string, error) {
	s, err := db.keys.Open([]byte(secret), webhookSecretContext(id))
	if err != nil {
		return "", "", fmt.Errorf("webhook endpoint %s: signing secret: %w", id, err)
	}
	if previous == "" {
		return string(s), "", nil
	}
	p, err := db.keys.Open([]byte(previous), webhookSecretContext(id))
	if err != nil {
		return "", "", fmt.Errorf("webhook endpoint %s: previous signing secret: %w", id, err)
	}
	return string(s), string(p), nil
}

// storedSecret is one secret as it is stored, and where.
type storedSecret struct {
	what    string // for people: secret "jwt_ed25519_seed", webhook endpoint X's secret
	context string
	value   []byte
	// update writes a new value in place of the one read (a no-op when
	// another process changed it meanwhile).
	update func(ctx context.Context, value []byte) error
}

// storedSecrets reads every secret the store keeps, as stored.
func (db *DB) storedSecrets(ctx context.Context) ([]storedSecret, error) {
	rs, err := db.conn().query(ctx, `SELECT name, value FROM secrets ORDER BY name`)
	out, err := collect(rs, err, func(r row) (storedSecret, error) {
		var name string
		var value []byte
		if err := r.Scan(&name, &value); err != nil {
			return storedSecret{}, err
		}
		return storedSecret{what: fmt.Sprintf("secret %q", name), context: secretContext(name), value: value,
			update: func(ctx context.Context, v []byte) error {
				_, err := db.conn().exec(ctx, `UPDATE secrets SET value = ? WHERE name = ? AND value = ?`, v, name, value)
				return err
			}}, nil
	})
	if err != nil {
		return nil, err
	}
	type endpoint struct{ id, secret, previous string }
	rs, err = db.conn().query(ctx, `SELECT id, secret, COALESCE(previous_secret, '') FROM webhook_endpoints ORDER BY id`)
	endpoints, err := collect(rs, err, func(r row) (endpoint, error) {
		var e endpoint
		return e, r.Scan(&e.id, &e.secret, &e.previous)
	})
	if err != nil {
		return nil, err
	}
	for _, e := range endpoints {
		out = append(out, storedSecret{what: "webhook endpoint " + e.id + "'s signing secret", context: webhookSecretContext(e.id), value: []byte(e.secret),
			update: func(ctx context.Context, v []byte) error {
				_, err := db.conn().exec(ctx, `UPDATE webhook_endpoints SET secret = ? WHERE id = ? AND secret = ?`, string(v), e.id, e.secret)
				return err
			}})
		if e.previous != "" {
			out = append(out, storedSecret{what: "webhook endpoint " + e.id + "'s previous signing secret", context: webhookSecretContext(e.id), value: []byte(e.previous),
				update: func(ctx context.Context, v []byte) error {
					_, err := db.conn().exec(ctx, `UPDATE webhook_endpoints SET previous_secret = ? WHERE id = ? AND previous_secret = ?`, string(v), e.id, e.previous)
					return err
				}})
		}
	}
	type factor struct {
		id     string
		secret []byte
	}
	rs, err = db.conn().query(ctx, `SELECT id, secret FROM mfa_factors ORDER BY id`)
	factors, err := collect(rs, err, func(r row) (factor, error) {
		var f factor
		return f, r.Scan(&f.id, &f.secret)
	})
	if err != nil {
		return nil, err
	}
	for _, f := range factors {
		out = append(out, storedSecret{what: "second factor " + f.id + "'s TOTP secret", context: mfaSecretContext(f.id), value: f.secret,
			update: func(ctx context.Context, v []byte) error {
				_, err := db.conn().exec(ctx, `UPDATE mfa_factors SET secret = ? WHERE id = ? AND secret = ?`, v, f.id, f.secret)
				return err
			}})
	}
	type identity struct {
		id     string
		sealed []byte
	}
	rs, err = db.conn().query(ctx, `SELECT id, revoke_token FROM identities WHERE revoke_token IS NOT NULL ORDER BY id`)
	held, err := collect(rs, err, func(r row) (identity, error) {
		var i identity
		return i, r.Scan(&i.id, &i.sealed)
	})
	if err != nil {
		return nil, err
	}
	for _, i := range held {
		out = append(out, storedSecret{what: "identity " + i.id + "'s Apple refresh token", context: identitySecretContext(i.id), value: i.sealed,
			update: func(ctx context.Context, v []byte) error {
				_, err := db.conn().exec(ctx, `UPDATE identities SET revoke_token = ? WHERE id = ? AND revoke_token = ?`, v, i.id, i.sealed)
				return err
			}})
	}
	return out, nil
}

// SealStatus counts the stored secrets by how they are kept.
type SealStatus struct {
	Plain    int // not sealed
	Current  int // sealed by the current key
	Previous int // sealed by a previous key: sealed again at the next start
	// Unreadable describe the secrets that do not open (no key, a key not
	// given, a changed value), one line each.
	Unreadable []string
	// SealedBy are the ids of the keys that sealed the unreadable ones.
	SealedBy []string
}

// SealStatus reads every stored secret and says how it is kept, without
// changing anything (herald check).
func (db *DB) SealStatus(ctx context.Context) (SealStatus, error) {
	secrets, err := db.storedSecrets(ctx)
	if err != nil {
		return SealStatus{}, err
	}
	var st SealStatus
	for _, s := range secrets {
		switch _, err := db.keys.Open(s.value, s.context); {
		case err != nil:
			st.Unreadable = append(st.Unreadable, s.what+": "+err.Error())
			if id, ok := seal.SealedBy(s.value); ok && !slices.Contains(st.SealedBy, id) {
				st.SealedBy = append(st.SealedBy, id)
			}
		case !seal.IsSealed(s.value):
			st.Plain++
		case db.keys.Current(s.value):
			st.Current++
		default:
			st.Previous++
		}
	}
	return st, nil
}

// ErrSecretsUnreadable: stored secrets do not open with the keys given.
var ErrSecretsUnreadable = errors.New("stored secrets do not open with the keys given")

// SealSecrets seals every stored secret that is not sealed by the current
// key (plain, or sealed by a previous key) and returns how many it sealed.
// Without a key it changes nothing. A secret that does not open (sealed
// by a key not given, or changed) fails it, wrapping
// ErrSecretsUnreadable, before anything is written: a server must not
// start on secrets it cannot read. Replicas may run it at once: each row
// is replaced only if it still holds what was read.
func (db *DB) SealSecrets(ctx context.Context) (int, error) {
	secrets, err := db.storedSecrets(ctx)
	if err != nil {
		return 0, err
	}
	plain := make([][]byte, len(secrets))
	var unreadable []string
	for i, s := range secrets {
		if plain[i], err = db.keys.Open(s.value, s.context); err != nil {
			unreadable = append(unreadable, s.what+": "+err.Error())
		}
	}
	if len(unreadable) > 0 {
		return 0, fmt.Errorf("%w: %s", ErrSecretsUnreadable, strings.Join(unreadable, "; "))
	}
	if db.keys == nil {
		return 0, nil
	}
	sealed := 0
	for i, s := range secrets {
		if db.keys.Current(s.value) {
			continue
		}
		if err := s.update(ctx, db.keys.Seal(plain[i], s.context)); err != nil {
			return sealed, fmt.Errorf("seal %s: %w", s.what, err)
		}
		sealed++
	}
	return sealed, nil
}
