package devices

import (
	"context"
	"errors"

	"github.com/herald-vpn/herald/internal/storage"
)

// Registration is what registering a push token does, decided from the
// device that holds the token already.
type Registration struct {
	// Refresh: an active device of the same account holds the token (the
	// same app registering again), so that device is refreshed instead of
	// a new one being created, and the plan's quota is not asked.
	Refresh bool
	// TakeFrom is the device that loses the token to the new device (of
	// another account, or one removed); "" when none holds it.
	TakeFrom string
}

// PlanRegistration is registration's rule for accountID's token, which
// holder holds (nil: no device holds it).
func PlanRegistration(accountID string, holder *Device) Registration {
	switch {
	case holder == nil:
		return Registration{}
	case holder.AccountID == accountID && holder.Active:
		return Registration{Refresh: true}
	default:
		return Registration{TakeFrom: holder.ID}
	}
}

// RefreshedName is a refreshed device's name: the one given, or its own
// when none is.
func RefreshedName(current, given string) string {
	if given == "" {
		return current
	}
	return given
}

// createdName is the name of the device d creates.
func (d NewDevice) createdName() string {
	if d.NewName == "" {
		return d.Name
	}
	return d.NewName
}

// Register runs the registration rules in one unit of work of st, holding
// the account's subscription row (so that two registrations of one
// account count one after the other): PlanRegistration, then, unless the
// same app refreshes its device, the quota (allow, whose error aborts),
// the token taken from its holder, the new device and its
// device.registered event. ErrNotFound when the account does not exist;
// ErrConflict when a concurrent registration took the token first
// (retry).
func Register(ctx context.Context, st Store, d NewDevice, allow func(Quota) error) (Device, error) {
	var out Device
	err := st.InTx(ctx, func(ctx context.Context) error {
		sub, err := st.LockSubscription(ctx, d.AccountID)
		if err != nil {
			return err
		}
		var holder *Device
		if h, err := st.DeviceWithToken(ctx, d.PushToken); err == nil {
			holder = &h
		} else if !errors.Is(err, storage.ErrNotFound) {
			return err
		}
		plan := PlanRegistration(d.AccountID, holder)
		if plan.Refresh {
			out, err = st.RefreshDevice(ctx, holder.ID, d.Platform, RefreshedName(holder.Name, d.Name))
			return err
		}
		active, err := st.CountActiveDevices(ctx, d.AccountID)
		if err != nil {
			return err
		}
		if err := allow(Quota{Subscription: sub, ActiveDevices: active}); err != nil {
			return err
		}
		if plan.TakeFrom != "" {
			if err := st.DropPushToken(ctx, plan.TakeFrom); err != nil {
				return err
			}
		}
		now := st.TxTime(ctx)
		out = Device{ID: d.ID, AccountID: d.AccountID, Platform: d.Platform, Name: d.createdName(), PushToken: d.PushToken,
			Active: true, PushTokenStatus: TokenValid, CreatedAt: now, LastSeenAt: now}
		if err := st.InsertDevice(ctx, out); err != nil {
			return err
		}
		return st.Emit(ctx, RegisteredEvent(out))
	})
	return out, err
}
