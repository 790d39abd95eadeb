package accounts

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// deletionStore records the steps DeleteAccount takes, failing the lock
// or one step when told to.
type deletionStore struct {
	Store
	lockErr error
	failAt  Erasure
	steps   []string // "lock", each step, "emit <type>"; "commit" or "rollback"
}

var errStep = errors.New("step failed")

func (f *deletionStore) InTx(ctx context.Context, fn func(context.Context) error) error {
	err := fn(ctx)
	if err != nil {
		f.steps = append(f.steps, "rollback")
	} else {
		f.steps = append(f.steps, "commit")
	}
	return err
}
func (f *deletionStore) LockAccountForDeletion(_ context.Context, _ string, allow func(Standing) error) error {
	f.steps = append(f.steps, "lock")
	if f.lockErr != nil {
		return f.lockErr
	}
	if allow != nil {
		return allow(Standing{})
	}
	return nil
}
func (f *deletionStore) EraseAccount(_ context.Context, _ string, step Erasure) error {
	f.steps = append(f.steps, string(step))
	if step == f.failAt {
		return errStep
	}
	return nil
}
func (f *deletionStore) Emit(_ context.Context, p webhooks.Payload) error {
	f.steps = append(f.steps, "emit "+p.EventType())
	return nil
}

func TestDeleteAccountSteps(t *testing.T) {
	all := []string{"lock", "refresh_tokens", "sessions", "devices", "one_time_codes", "pending_codes", "code_sends", "code_send_leases",
		"telegram_link_tokens", "telegram_subscribers", "mfa_factors", "mfa_recovery_codes", "mfa_failures", "mfa_challenges", "passkey_credentials", "passkey_ceremonies", "security_events", "identities", "notification_preferences", "notification_schedules", "notification_digests", "inbox_items", "notification_cap_counts", "notification_cap_uses", "entitlements", "entitlement_changes", "entitlement_purchases", "accounts", "webhook_events", "session_revocations"}
	denied := errors.New("not allowed")
	cases := []struct {
		name    string
		store   deletionStore
		allow   func(Standing) error
		want    []string
		wantErr error
	}{
		{"every step, then the event", deletionStore{}, nil, append(slices.Clone(all), "emit user.deleted", "commit"), nil},
		{"allowed", deletionStore{}, func(Standing) error { return nil }, append(slices.Clone(all), "emit user.deleted", "commit"), nil},
		{"unknown or deleted", deletionStore{lockErr: storage.ErrNotFound}, nil, []string{"lock", "rollback"}, storage.ErrNotFound},
		{"not allowed", deletionStore{}, func(Standing) error { return denied }, []string{"lock", "rollback"}, denied},
		{"a step fails", deletionStore{failAt: EraseDevices}, nil, []string{"lock", "refresh_tokens", "sessions", "devices", "rollback"}, errStep},
		{"the tombstone before the scrub, the scrub before the event", deletionStore{failAt: ScrubEvents}, nil,
			append(slices.Clone(all[:len(all)-1]), "rollback"), errStep}, // all but the announcement
	}
	for _, c := range cases {
		st := c.store
		err := DeleteAccount(context.Background(), &st, "u1", c.allow)
		if !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
			t.Errorf("%s: error %v, want %v", c.name, err, c.wantErr)
		}
		if !slices.Equal(st.steps, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, st.steps, c.want)
		}
	}
}
