package sqlstore_test

import (
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// MigrationStatus reads without changing: on a fresh database everything
// is pending (and stays so), after Migrate everything is applied, River's
// migrations listed before Herald's.
func TestMigrationStatus(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx := t.Context()
		db, err := sqlstore.Open(ctx, url, sqlstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		count := func() (applied, pending int, list []sqlstore.Migration) {
			t.Helper()
			list, err := db.MigrationStatus(ctx)
			if err != nil {
				t.Fatalf("MigrationStatus: %v", err)
			}
			for _, m := range list {
				if m.Applied {
					applied++
				} else {
					pending++
				}
			}
			return applied, pending, list
		}
		for range 2 {
			if a, p, _ := count(); a != 0 || p == 0 {
				t.Fatalf("fresh database: %d applied, %d pending; want 0 applied and some pending", a, p)
			}
		}
		done, err := db.Migrate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		a, p, list := count()
		if p != 0 || a != len(list) {
			t.Fatalf("after Migrate: %d applied, %d pending, want all %d applied", a, p, len(list))
		}
		if !strings.HasPrefix(list[0].Name, "river ") || list[len(list)-1].Name != done[len(done)-1] {
			t.Errorf("order: first %q, last %q; want River's first and Herald's last (%q)", list[0].Name, list[len(list)-1].Name, done[len(done)-1])
		}
	})
}
