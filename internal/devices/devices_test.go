package devices_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/jobs"
	"github.com/herald-vpn/herald/internal/jobs/jobstest"
	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

const (
	upgradeURL = "https://herald.example/upgrade"
	renewURL   = "https://herald.example/renew"
)

// env is a service over a fresh, real database.
type env struct {
	db    *sqlstore.DB
	plans *subscriptions.Service
	svc   *devices.Service
}

func open(t testing.TB, url string) env {
	t.Helper()
	db, _ := jobstest.Open(t, url, jobs.Config{})
	plans := subscriptions.NewService(db, subscriptions.Config{UpgradeURL: upgradeURL, RenewURL: renewURL})
	return env{db: db, plans: plans, svc: devices.NewService(db, plans, devices.Config{})}
}

// setPlan changes the plan of the account with this email, as the
// operator's command does.
func (e env) setPlan(t testing.TB, email, plan string, expires time.Time) {
	t.Helper()
	norm, err := accounts.NormalizeEmail(email)
	if err != nil {
		t.Fatal(err)
	}
	a, err := e.db.AccountByEmail(context.Background(), norm)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.plans.SetPlan(context.Background(), a.ID, plan, expires); err != nil {
		t.Fatal(err)
	}
}

// each runs fn on every covered database.
func each(t *testing.T, fn func(t *testing.T, e env)) {
	sqlstoretest.Each(t, func(t *testing.T, url string) { fn(t, open(t, url)) })
}

var accountSeq struct {
	sync.Mutex
	n int
}

// account creates an account with a trial and returns its ID.
func (e env) account(t testing.TB, email string) string {
	t.Helper()
	accountSeq.Lock()
	accountSeq.n++
	n := accountSeq.n
	accountSeq.Unlock()
	id := fmt.Sprintf("acct-%06d", n)
	_, _, err := accounts.Create(context.Background(), e.db, accounts.NewAccount{
		ID: id, Email: email, PasswordHash: "$argon2id$x", ReferralCode: fmt.Sprintf("REF%06d", n), Trial: 7 * 24 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func wantCode(t *testing.T, err error, code apperr.Code) *apperr.Error {
	t.Helper()
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	return ae
}

func TestRegisterListUpdateRemove(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		d, err := e.svc.Register(ctx, a, "android", " tok-1 ", "Pixel")
		if err != nil {
			t.Fatal(err)
		}
		if d.ID == "" || d.AccountID != a || d.Platform != "android" || d.Name != "Pixel" || d.PushToken != "tok-1" || !d.Active || d.PushTokenStatus != "valid" {
			t.Fatalf("registered %+v", d)
		}
		unnamed, err := e.svc.Register(ctx, a, "ios", "tok-2", "")
		if err != nil || unnamed.Name != "iOS device" {
			t.Fatalf("unnamed %+v, %v", unnamed, err)
		}
		list, err := e.svc.List(ctx, a)
		if err != nil || len(list) != 2 || list[0].ID != d.ID || list[1].ID != unnamed.ID {
			t.Fatalf("list %+v, %v", list, err)
		}
		if err := e.db.InvalidatePushToken(ctx, d.ID, "tok-1"); err != nil {
			t.Fatal(err)
		}
		up, err := e.svc.UpdatePushToken(ctx, a, d.ID, "tok-3")
		if err != nil || up.PushToken != "tok-3" || up.PushTokenStatus != "valid" {
			t.Fatalf("update %+v, %v", up, err)
		}
		if err := e.svc.Remove(ctx, a, d.ID); err != nil {
			t.Fatal(err)
		}
		wantCode(t, e.svc.Remove(ctx, a, d.ID), apperr.DeviceNotFound)
		list, _ = e.svc.List(ctx, a)
		if len(list) != 1 || list[0].ID != unnamed.ID {
			t.Fatalf("after remove %+v", list)
		}
		// The same app registering again gets its device back, its name
		// kept unless a new one is given.
		renamed, err := e.svc.Register(ctx, a, "ios", "tok-2", "iPad")
		if err != nil || renamed.ID != unnamed.ID || renamed.Name != "iPad" {
			t.Fatalf("re-register %+v, %v", renamed, err)
		}
		again, err := e.svc.Register(ctx, a, "ios", "tok-2", "")
		if err != nil || again.ID != unnamed.ID || again.Name != "iPad" {
			t.Fatalf("re-register %+v, %v", again, err)
		}
	})
}

func TestRegisterValidation(t *testing.T) {
	e := open(t, sqlstoretest.NewURL(t, "sqlite"))
	a := e.account(t, "a@example.com")
	tests := []struct {
		name                     string
		platform, token, devName string
		field, received          string
	}{
		{"unknown platform", "windows", "t", "", "platform", "windows"},
		{"platform case matters", "Android", "t", "", "platform", "Android"},
		{"empty platform", "", "t", "", "platform", ""},
		{"empty token", "android", "", "", "pushToken", "empty"},
		{"blank token", "android", "   ", "", "pushToken", "empty"},
		{"token with spaces", "android", "a b", "", "pushToken", "invalid characters"},
		{"token too long", "android", strings.Repeat("x", devices.MaxPushTokenLen+1), "", "pushToken", "4097 bytes"},
		{"name too long", "android", "t", strings.Repeat("é", devices.MaxNameLen+1), "name", "101 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.Register(context.Background(), a, tt.platform, tt.token, tt.devName)
			ae := wantCode(t, err, apperr.ValidationError)
			if ae.Details["field"] != tt.field || ae.Details["received"] != tt.received || ae.Details["constraint"] == "" {
				t.Fatalf("details %v", ae.Details)
			}
		})
	}
	t.Run("unknown token update", func(t *testing.T) {
		_, err := e.svc.UpdatePushToken(context.Background(), a, "some-device", "")
		wantCode(t, err, apperr.ValidationError)
	})
}

func TestDeviceLimits(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		tests := []struct {
			plan string
			max  int
		}{
			{"trial", 3},
			{"basic", 5},
			{"premium", 10},
		}
		for _, tt := range tests {
			t.Run(tt.plan, func(t *testing.T) {
				ctx := context.Background()
				email := tt.plan + "@example.com"
				a := e.account(t, email)
				e.setPlan(t, email, tt.plan, time.Now().Add(30*24*time.Hour))
				var first devices.Device
				for i := range tt.max {
					d, err := e.svc.Register(ctx, a, "android", fmt.Sprintf("%s-%d", tt.plan, i), "")
					if err != nil {
						t.Fatalf("device %d: %v", i+1, err)
					}
					if i == 0 {
						first = d
					}
				}
				_, err := e.svc.Register(ctx, a, "android", tt.plan+"-over", "")
				ae := wantCode(t, err, apperr.DeviceLimitReached)
				if ae.Status() != 409 {
					t.Fatalf("status %d", ae.Status())
				}
				want := map[string]any{"currentDevices": tt.max, "maxDevices": tt.max, "plan": tt.plan, "upgradeUrl": upgradeURL}
				if fmt.Sprint(ae.Details) != fmt.Sprint(want) {
					t.Fatalf("details %v, want %v", ae.Details, want)
				}
				// Removing one makes room.
				if err := e.svc.Remove(ctx, a, first.ID); err != nil {
					t.Fatal(err)
				}
				if _, err := e.svc.Register(ctx, a, "android", tt.plan+"-over", ""); err != nil {
					t.Fatalf("after remove: %v", err)
				}
			})
		}
	})
}

func TestLimitsAreConfigurable(t *testing.T) {
	e := open(t, sqlstoretest.NewURL(t, "sqlite"))
	svc := devices.NewService(e.db, subscriptions.NewService(e.db, subscriptions.Config{DeviceLimits: map[string]int{"trial": 1}}), devices.Config{})
	a := e.account(t, "a@example.com")
	if _, err := svc.Register(context.Background(), a, "android", "t1", ""); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Register(context.Background(), a, "android", "t2", "")
	if ae := wantCode(t, err, apperr.DeviceLimitReached); ae.Details["maxDevices"] != 1 {
		t.Fatalf("details %v", ae.Details)
	}
}

func TestSubscriptionExpired(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		expired := time.Date(2025, 3, 1, 12, 30, 0, 0, time.FixedZone("X", 3600))
		e.setPlan(t, "A@Example.com", "basic", expired)
		_, err := e.svc.Register(ctx, a, "android", "tok", "")
		ae := wantCode(t, err, apperr.SubscriptionExpired)
		want := map[string]any{"expiredAt": "2025-03-01T11:30:00Z", "plan": "basic", "renewUrl": renewURL}
		if fmt.Sprint(ae.Details) != fmt.Sprint(want) || ae.Status() != 403 {
			t.Fatalf("details %v, want %v", ae.Details, want)
		}
	})
}

func TestConcurrentRegistrationsHoldTheLimit(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		var wg sync.WaitGroup
		errs := make([]error, 10)
		for i := range errs {
			wg.Go(func() { _, errs[i] = e.svc.Register(ctx, a, "android", fmt.Sprint("tok-", i), "") })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				wantCode(t, err, apperr.DeviceLimitReached)
			}
		}
		if list, _ := e.svc.List(ctx, a); ok != 3 || len(list) != 3 {
			t.Fatalf("%d succeeded, %d devices; want 3", ok, len(list))
		}
	})
}

func TestTokenMovesBetweenAccounts(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		b := e.account(t, "b@example.com")
		old, _ := e.svc.Register(ctx, a, "android", "shared", "")
		if _, err := e.svc.Register(ctx, b, "android", "shared", ""); err != nil {
			t.Fatal(err)
		}
		got, _ := e.db.DeviceByID(ctx, old.ID)
		if got.PushToken != "" || got.PushTokenStatus != "invalid" {
			t.Fatalf("old device %+v", got)
		}
		// Two accounts racing for one token: both succeed, one ends up holding it.
		var wg sync.WaitGroup
		var ids [2]string
		for i, acct := range []string{a, b} {
			wg.Go(func() {
				d, err := e.svc.Register(ctx, acct, "ios", "raced", "")
				if err != nil {
					t.Error(err)
				}
				ids[i] = d.ID
			})
		}
		wg.Wait()
		holders := 0
		for _, id := range ids {
			if d, _ := e.db.DeviceByID(ctx, id); d.PushToken == "raced" {
				holders++
			}
		}
		if holders != 1 {
			t.Fatalf("%d devices hold the token", holders)
		}
	})
}

func TestOtherAccountsDevice(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		b := e.account(t, "b@example.com")
		d, _ := e.svc.Register(ctx, a, "android", "tok", "")
		for _, id := range []string{d.ID, "no-such-device"} {
			_, err := e.svc.UpdatePushToken(ctx, b, id, "new")
			wantCode(t, err, apperr.DeviceNotFound)
			wantCode(t, e.svc.Remove(ctx, b, id), apperr.DeviceNotFound)
		}
	})
}

func TestAdminList(t *testing.T) {
	each(t, func(t *testing.T, e env) {
		ctx := context.Background()
		a := e.account(t, "a@example.com")
		b := e.account(t, "b@example.com")
		e.setPlan(t, "a@example.com", "premium", time.Now().Add(time.Hour))
		want := map[string]bool{}
		wantA := 0
		for i := range 7 {
			acct := a
			if i%3 == 2 {
				acct = b
			} else {
				wantA++
			}
			d, err := e.svc.Register(ctx, acct, "android", fmt.Sprint("t", i), "")
			if err != nil {
				t.Fatal(err)
			}
			want[d.ID] = true
		}
		seen := map[string]bool{}
		after, pages := "", 0
		for {
			p, err := e.svc.AdminList(ctx, nil, 3, after)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, d := range p.Devices {
				if seen[d.ID] {
					t.Fatalf("device %s listed twice", d.ID)
				}
				seen[d.ID] = true
			}
			if !p.HasNextPage {
				break
			}
			after = p.EndCursor
		}
		if len(seen) != len(want) || pages != 3 {
			t.Fatalf("listed %d devices in %d pages, want %d in 3", len(seen), pages, len(want))
		}
		p, err := e.svc.AdminList(ctx, &a, 0, "")
		if err != nil || len(p.Devices) != wantA || p.HasNextPage {
			t.Fatalf("account a: %d devices, next %v, %v", len(p.Devices), p.HasNextPage, err)
		}
		for _, d := range p.Devices {
			if d.AccountID != a {
				t.Fatalf("device of another account: %+v", d)
			}
		}
		unknown := "nobody"
		_, err = e.svc.AdminList(ctx, &unknown, 10, "")
		wantCode(t, err, apperr.UserNotFound)
		for _, tc := range []struct {
			first int
			after string
		}{{-1, ""}, {devices.MaxPageSize + 1, ""}, {10, "!!!"}, {10, "Zm9v"}} {
			_, err := e.svc.AdminList(ctx, nil, tc.first, tc.after)
			wantCode(t, err, apperr.ValidationError)
		}
	})
}
