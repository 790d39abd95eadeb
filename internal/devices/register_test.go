package devices

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Registration's rule, without a database: which device a token's holder
// makes registering refresh, take over or create.
func TestPlanRegistration(t *testing.T) {
	cases := []struct {
		name   string
		holder *Device
		want   Registration
	}{
		{"nobody holds the token: create", nil, Registration{}},
		{"the same app again: refresh, no quota", &Device{ID: "d1", AccountID: "a1", Active: true}, Registration{Refresh: true}},
		{"the account's removed device: take over", &Device{ID: "d1", AccountID: "a1", Active: false}, Registration{TakeFrom: "d1"}},
		{"another account's device: take over", &Device{ID: "d2", AccountID: "a2", Active: true}, Registration{TakeFrom: "d2"}},
		{"another account's removed device: take over", &Device{ID: "d3", AccountID: "a2"}, Registration{TakeFrom: "d3"}},
	}
	for _, c := range cases {
		if got := PlanRegistration("a1", c.holder); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestRegistrationNames(t *testing.T) {
	for _, c := range []struct{ current, given, want string }{
		{"Phone", "", "Phone"},
		{"Phone", "Tablet", "Tablet"},
		{"", "", ""},
	} {
		if got := RefreshedName(c.current, c.given); got != c.want {
			t.Errorf("RefreshedName(%q, %q) = %q, want %q", c.current, c.given, got, c.want)
		}
	}
	for _, c := range []struct {
		d    NewDevice
		want string
	}{
		{NewDevice{Name: "Phone", NewName: "Phone"}, "Phone"},
		{NewDevice{Name: "", NewName: "iOS device"}, "iOS device"},
		{NewDevice{Name: "Phone"}, "Phone"}, // NewName unset: Name
	} {
		if got := c.d.createdName(); got != c.want {
			t.Errorf("%+v creates %q, want %q", c.d, got, c.want)
		}
	}
}

// fakeStore is the unit of work of Register in memory: its devices by
// token, the subscription, and what Register wrote.
type fakeStore struct {
	Store     // the methods Register does not call
	held      map[string]Device
	active    int
	refreshed []string
	dropped   []string
	inserted  []Device
	events    []webhooks.Payload
}

func (f *fakeStore) InTx(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }
func (f *fakeStore) TxTime(context.Context) time.Time                               { return time.Unix(100, 0).UTC() }
func (f *fakeStore) LockSubscription(context.Context, string) (subscriptions.Subscription, error) {
	return subscriptions.Subscription{Plan: "basic"}, nil
}
func (f *fakeStore) DeviceWithToken(_ context.Context, token string) (Device, error) {
	if d, ok := f.held[token]; ok {
		return d, nil
	}
	return Device{}, storage.ErrNotFound
}
func (f *fakeStore) RefreshDevice(_ context.Context, id, platform, name string) (Device, error) {
	f.refreshed = append(f.refreshed, id+" "+platform+" "+name)
	return Device{ID: id, Platform: platform, Name: name}, nil
}
func (f *fakeStore) CountActiveDevices(context.Context, string) (int, error) { return f.active, nil }
func (f *fakeStore) DropPushToken(_ context.Context, id string) error {
	f.dropped = append(f.dropped, id)
	return nil
}
func (f *fakeStore) InsertDevice(_ context.Context, d Device) error {
	f.inserted = append(f.inserted, d)
	return nil
}
func (f *fakeStore) Emit(_ context.Context, p webhooks.Payload) error {
	f.events = append(f.events, p)
	return nil
}

// Register's steps, without a database: the quota is asked only when a
// device is created, a token's other holder loses it, and only a created
// device has an event.
func TestRegisterSteps(t *testing.T) {
	full := errors.New("full")
	atMostTwo := func(q Quota) error {
		if q.ActiveDevices >= 2 {
			return full
		}
		return nil
	}
	mine := Device{ID: "d1", AccountID: "a1", Name: "Phone", Active: true}
	theirs := Device{ID: "d9", AccountID: "a2", Active: true}
	cases := []struct {
		name               string
		held               map[string]Device
		active             int
		err                error
		refreshed, dropped []string
		inserted, events   int
	}{
		{"new token", nil, 0, nil, nil, nil, 1, 1},
		{"new token past the quota", nil, 2, full, nil, nil, 0, 0},
		{"same app again, even when full", map[string]Device{"tok": mine}, 2, nil, []string{"d1 ios Phone"}, nil, 0, 0},
		{"another account's token", map[string]Device{"tok": theirs}, 0, nil, nil, []string{"d9"}, 1, 1},
		{"another account's token past the quota", map[string]Device{"tok": theirs}, 2, full, nil, nil, 0, 0},
	}
	for _, c := range cases {
		f := &fakeStore{held: c.held, active: c.active}
		d, err := Register(context.Background(), f, NewDevice{ID: "new", AccountID: "a1", Platform: "ios", NewName: "iOS device", PushToken: "tok"}, atMostTwo)
		if !errors.Is(err, c.err) || !slices.Equal(f.refreshed, c.refreshed) || !slices.Equal(f.dropped, c.dropped) || len(f.inserted) != c.inserted || len(f.events) != c.events {
			t.Errorf("%s: err %v, refreshed %v, dropped %v, inserted %v, events %v", c.name, err, f.refreshed, f.dropped, f.inserted, f.events)
			continue
		}
		if c.inserted == 1 {
			want := Device{ID: "new", AccountID: "a1", Platform: "ios", Name: "iOS device", PushToken: "tok", Active: true, PushTokenStatus: TokenValid,
				CreatedAt: time.Unix(100, 0).UTC(), LastSeenAt: time.Unix(100, 0).UTC()}
			if d != want || f.inserted[0] != want || f.events[0] != RegisteredEvent(want) {
				t.Errorf("%s: registered %+v, inserted %+v, event %+v", c.name, d, f.inserted[0], f.events[0])
			}
		}
	}
}
