package sqlstore_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/testsupport"
)

// The security log's store, on every database: entries listed newest
// first by page, an entry rolled back with the transaction it was
// recorded in, the device keys of successful sign-ins, retention, and
// deletion with the account.
func TestSecurityLogConformance(t *testing.T) {
	runConformance(t, []storeCase{
		{"RecordListPage", testSecurityLogList},
		{"RolledBackWithItsChange", testSecurityLogRollback},
		{"RetentionAndDeletion", testSecurityLogRetention},
		{"OperatorsLogHasNoAccount", testOperatorSecurityLog},
	}, mustOpen)
}

func secEvent(id, account string, k securitylog.Kind, ua, ip string) securitylog.Event {
	return securitylog.Event{ID: id, AccountID: account, Kind: k, Outcome: securitylog.OK, Actor: securitylog.ActorUser, IP: ip, UserAgent: ua}
}

func testSecurityLogList(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	mustAccount(t, db, "a2")
	e := secEvent("sec_1", "a1", securitylog.LoginOK, "App/1.0", "203.0.113.9")
	e.Detail = map[string]string{"method": "password"}
	for _, ev := range []securitylog.Event{e, secEvent("sec_2", "a1", securitylog.LoginOK, "App/2.0", "203.0.113.10"),
		secEvent("sec_3", "a1", securitylog.Logout, "App/2.0", "198.51.100.1"), secEvent("sec_4", "a2", securitylog.LoginOK, "Other/1", "192.0.2.1")} {
		if err := db.RecordSecurityEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	page, err := db.SecurityEvents(ctx, "a1", "", 2)
	if err != nil || len(page) != 2 || page[0].ID != "sec_3" || page[1].ID != "sec_2" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	page, err = db.SecurityEvents(ctx, "a1", page[1].ID, 2)
	if err != nil || len(page) != 1 || page[0].ID != "sec_1" || page[0].Detail["method"] != "password" || page[0].IP != "203.0.113.9" || !page[0].At.Equal(clk.Now()) {
		t.Fatalf("second page = %+v, %v", page, err)
	}
	// Two sign-ins of one app on one /24 are one device; the logout is no sign-in.
	for _, tc := range []struct {
		account, key  string
		before, known bool
	}{
		{"a1", securitylog.DeviceKey("App/1.0", "203.0.113.9"), true, true},
		{"a1", securitylog.DeviceKey("App/1.0", "203.0.113.77"), true, true}, // the same /24
		{"a1", securitylog.DeviceKey("Other/2.0", "203.0.113.9"), true, false},
		{"nobody", securitylog.DeviceKey("App/1.0", "203.0.113.9"), false, false},
	} {
		before, seen, err := db.SignInHistory(ctx, tc.account, tc.key)
		if err != nil || before != tc.before || seen != tc.known {
			t.Fatalf("SignInHistory(%s, %s) = %v %v %v, want %v %v", tc.account, tc.key, before, seen, err, tc.before, tc.known)
		}
	}
	if err := db.RecordSecurityEvent(ctx, secEvent("sec_5", "a1", "bogus", "", "")); !errors.Is(err, securitylog.ErrBadKind) {
		t.Fatalf("an unknown kind: %v", err)
	}
}

func testSecurityLogRollback(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	boom := errors.New("the change failed")
	err := db.InTx(ctx, func(ctx context.Context) error {
		if err := db.RecordSecurityEvent(ctx, secEvent("sec_1", "a1", securitylog.PasswordChanged, "", "")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if page, err := db.SecurityEvents(ctx, "a1", "", 10); err != nil || len(page) != 0 {
		t.Fatalf("an entry outlived its rolled-back change: %+v, %v", page, err)
	}
}

func testSecurityLogRetention(t *testing.T, db *sqlstore.DB, clk *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	if err := db.RecordSecurityEvent(ctx, secEvent("sec_1", "a1", securitylog.LoginOK, "", "")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(10 * 24 * time.Hour)
	if err := db.RecordSecurityEvent(ctx, secEvent("sec_2", "a1", securitylog.Logout, "", "")); err != nil {
		t.Fatal(err)
	}
	if n, err := db.PruneSecurityLog(ctx, 5*24*time.Hour); err != nil || n != 1 {
		t.Fatalf("pruned %d, %v; want the older entry", n, err)
	}
	if page, _ := db.SecurityEvents(ctx, "a1", "", 10); len(page) != 1 || page[0].ID != "sec_2" {
		t.Fatalf("after the purge: %+v", page)
	}
	if err := accounts.DeleteAccount(ctx, db, "a1", nil); err != nil {
		t.Fatal(err)
	}
	if page, err := db.SecurityEvents(ctx, "a1", "", 10); err != nil || len(page) != 0 {
		t.Fatalf("after deletion: %+v, %v", page, err)
	}
}

// The operators' log: entries of no account (an API key made at the
// command line) are listed by SecurityEvents(""), never in an account's
// log, and stay when an account is deleted.
func testOperatorSecurityLog(t *testing.T, db *sqlstore.DB, _ *testsupport.Clock) {
	ctx := context.Background()
	mustAccount(t, db, "a1")
	cli := func(id string, k securitylog.Kind) securitylog.Event {
		return securitylog.Event{ID: id, Kind: k, Outcome: securitylog.OK, Actor: securitylog.ActorCLI, Detail: map[string]string{"keyId": "k_" + id}}
	}
	for _, e := range []securitylog.Event{cli("sec_1", securitylog.APIKeyCreated), secEvent("sec_2", "a1", securitylog.APIKeyCreated, "", ""), cli("sec_3", securitylog.APIKeyRevoked)} {
		if err := db.RecordSecurityEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(evs []securitylog.Event) (out []string) {
		for _, e := range evs {
			out = append(out, e.ID+"/"+e.AccountID+"/"+e.Actor+"/"+e.Detail["keyId"])
		}
		return out
	}
	if page, err := db.SecurityEvents(ctx, "", "", 10); err != nil || !slices.Equal(ids(page), []string{"sec_3//cli/k_sec_3", "sec_1//cli/k_sec_1"}) {
		t.Fatalf("the operators' log = %v, %v", ids(page), err)
	}
	if page, err := db.SecurityEvents(ctx, "", "sec_3", 10); err != nil || !slices.Equal(ids(page), []string{"sec_1//cli/k_sec_1"}) {
		t.Fatalf("the operators' log after sec_3 = %v, %v", ids(page), err)
	}
	if page, err := db.SecurityEvents(ctx, "a1", "", 10); err != nil || !slices.Equal(ids(page), []string{"sec_2/a1/user/"}) {
		t.Fatalf("a1's log = %v, %v", ids(page), err)
	}
	if err := accounts.DeleteAccount(ctx, db, "a1", nil); err != nil {
		t.Fatal(err)
	}
	if page, err := db.SecurityEvents(ctx, "", "", 10); err != nil || len(page) != 2 {
		t.Fatalf("the operators' log after an account's deletion = %v, %v", ids(page), err)
	}
}
