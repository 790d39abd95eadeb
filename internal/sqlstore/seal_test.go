package sqlstore_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/seal"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/webhooks"
)

func sealKey(b byte) []byte { return bytes.Repeat([]byte{b}, seal.KeySize) }

// openSealed opens the database at url with keys (nil: none).
func openSealed(t *testing.T, url string, keys *seal.Keyring) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), url, sqlstore.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func keyring(t *testing.T, current []byte, previous ...[]byte) *seal.Keyring {
	t.Helper()
	k, err := seal.NewKeyring(current, previous...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// rawSecrets is every stored secret as the database holds it: the secrets
// table's values and the webhook endpoints' secrets and previous secrets.
func rawSecrets(t *testing.T, url string) []string {
	t.Helper()
	out := sqlstoretest.RawColumn(t, url, `SELECT value FROM secrets`)
	out = append(out, sqlstoretest.RawColumn(t, url, `SELECT secret FROM webhook_endpoints`)...)
	return append(out, sqlstoretest.RawColumn(t, url, `SELECT previous_secret FROM webhook_endpoints WHERE previous_secret IS NOT NULL`)...)
}

// With a key, the secrets table and the webhook signing secrets hold only
// sealed values, none containing its plain text, on every database: rows
// written before the key are sealed by SealSecrets, rows written after are
// sealed as they are written, and the store reads back the plain values.
// A wrong key fails SealSecrets before it writes anything; a rotation
// (the old key as previous) seals every row again under the new key.
func TestSecretsSealedAtRest(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		t.Parallel()
		ctx := context.Background()
		now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
		seeds := map[string]string{"jwt_ed25519_seed": "seed-0123456789abcdef", "refresh_hash_key": "hmac-fedcba9876543210"}
		const hookSecret, rotated = "whsec_cGxhaW4tc2VjcmV0LW9uZQ", "whsec_cGxhaW4tc2VjcmV0LXR3bw"
		plainTexts := []string{hookSecret, rotated, seeds["jwt_ed25519_seed"], seeds["refresh_hash_key"]}
		secret := func(db *sqlstore.DB, name string) (string, error) {
			v, err := db.Secret(ctx, name, func() ([]byte, error) { return []byte(seeds[name]), nil })
			return string(v), err
		}
		readBack := func(t *testing.T, db *sqlstore.DB, what string) {
			t.Helper()
			for name, want := range seeds {
				if got, err := secret(db, name); err != nil || got != want {
					t.Fatalf("%s: secret %s = %q, %v; want %q", what, name, got, err, want)
				}
			}
			e, err := db.WebhookEndpoint(ctx, "ep1")
			if err != nil || e.Secret != rotated || e.PreviousSecret != hookSecret {
				t.Fatalf("%s: endpoint secrets %q, %q, %v", what, e.Secret, e.PreviousSecret, err)
			}
		}
		allSealedBy := func(t *testing.T, id, what string) {
			t.Helper()
			raw := rawSecrets(t, url)
			if len(raw) != 4 {
				t.Fatalf("%s: %d stored secrets, want 4: %q", what, len(raw), raw)
			}
			for _, v := range raw {
				if by, ok := seal.SealedBy([]byte(v)); !ok || by != id {
					t.Errorf("%s: stored %q, want sealed by key %s", what, v, id)
				}
				for _, p := range plainTexts {
					if strings.Contains(v, p) {
						t.Errorf("%s: the database holds %q in plain text", what, p)
					}
				}
			}
		}

		// Before any key: plain, as before.
		plain := openSealed(t, url, nil)
		if _, err := plain.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		for name := range seeds {
			if _, err := secret(plain, name); err != nil {
				t.Fatal(err)
			}
		}
		if err := plain.CreateWebhookEndpoint(ctx, webhooks.Endpoint{ID: "ep1", URL: "https://example.com/hook", EventTypes: webhooks.Catalogue, Secret: hookSecret, CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.RotateWebhookSecret(ctx, "ep1", rotated, now.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if st, err := plain.SealStatus(ctx); err != nil || st.Plain != 4 || st.Current+st.Previous+len(st.Unreadable) != 0 {
			t.Fatalf("status without a key: %+v %v", st, err)
		}
		if n, err := plain.SealSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("SealSecrets without a key = %d, %v; want nothing done", n, err)
		}
		plain.Close()

		// A key: the existing rows are sealed, and read back as they were.
		k1 := keyring(t, sealKey(1))
		db1 := openSealed(t, url, k1)
		if n, err := db1.SealSecrets(ctx); err != nil || n != 4 {
			t.Fatalf("SealSecrets = %d, %v; want 4 sealed", n, err)
		}
		allSealedBy(t, k1.ID(), "after sealing")
		readBack(t, db1, "after sealing")
		if st, err := db1.SealStatus(ctx); err != nil || st.Current != 4 || st.Plain+st.Previous+len(st.Unreadable) != 0 {
			t.Fatalf("status once sealed: %+v %v", st, err)
		}
		if n, err := db1.SealSecrets(ctx); err != nil || n != 0 {
			t.Fatalf("SealSecrets again = %d, %v; want nothing left to seal", n, err)
		}
		// New rows are sealed as they are written.
		if err := db1.CreateWebhookEndpoint(ctx, webhooks.Endpoint{ID: "ep2", URL: "https://example.com/hook2", EventTypes: webhooks.Catalogue, Secret: "whsec_bmV3LXNlY3JldA", CreatedAt: now, UpdatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if _, err := db1.Secret(ctx, "api_key_hash_key", func() ([]byte, error) { return []byte("new-hmac-key"), nil }); err != nil {
			t.Fatal(err)
		}
		for _, v := range rawSecrets(t, url) {
			if !seal.IsSealed([]byte(v)) || strings.Contains(v, "bmV3LXNlY3JldA") || strings.Contains(v, "new-hmac-key") {
				t.Errorf("a row written with a key is stored as %q", v)
			}
		}
		if err := db1.DeleteWebhookEndpoint(ctx, "ep2"); err != nil {
			t.Fatal(err)
		}
		if err := sqlstore.Exec(ctx, db1, `DELETE FROM secrets WHERE name = 'api_key_hash_key'`); err != nil {
			t.Fatal(err)
		}
		db1.Close()

		// A wrong key: refused, naming the key that sealed them, and
		// nothing is written.
		wrong := openSealed(t, url, keyring(t, sealKey(2)))
		before := rawSecrets(t, url)
		_, err := wrong.SealSecrets(ctx)
		if !errors.Is(err, sqlstore.ErrSecretsUnreadable) || !strings.Contains(err.Error(), k1.ID()) {
			t.Fatalf("SealSecrets with a wrong key = %v, want unreadable secrets naming key %s", err, k1.ID())
		}
		if after := rawSecrets(t, url); strings.Join(after, "|") != strings.Join(before, "|") {
			t.Fatal("a wrong key changed the stored secrets")
		}
		if st, err := wrong.SealStatus(ctx); err != nil || len(st.Unreadable) != 4 || len(st.SealedBy) != 1 || st.SealedBy[0] != k1.ID() {
			t.Fatalf("status with a wrong key: %+v %v", st, err)
		}
		if _, err := secret(wrong, "jwt_ed25519_seed"); err == nil {
			t.Fatal("a wrong key reads a secret")
		}
		wrong.Close()
		// No key at all: the sealed rows are not readable either.
		none := openSealed(t, url, nil)
		if _, err := none.SealSecrets(ctx); !errors.Is(err, sqlstore.ErrSecretsUnreadable) || !strings.Contains(err.Error(), "no encryption key is set") {
			t.Fatalf("SealSecrets without the key = %v", err)
		}
		if _, err := none.WebhookEndpoint(ctx, "ep1"); !errors.Is(err, seal.ErrNoKey) {
			t.Fatalf("an endpoint read without the key: %v, want ErrNoKey", err)
		}
		none.Close()

		// Rotation: the new key, the old one as previous; every row is
		// sealed again under the new key, then the old key can go.
		k2 := keyring(t, sealKey(2), sealKey(1))
		db2 := openSealed(t, url, k2)
		if st, err := db2.SealStatus(ctx); err != nil || st.Previous != 4 {
			t.Fatalf("status before the rotation's start: %+v %v", st, err)
		}
		if n, err := db2.SealSecrets(ctx); err != nil || n != 4 {
			t.Fatalf("SealSecrets rotating = %d, %v; want 4 sealed again", n, err)
		}
		allSealedBy(t, k2.ID(), "after the rotation")
		db2.Close()
		readBack(t, openSealed(t, url, keyring(t, sealKey(2))), "with the new key alone")
	})
}
