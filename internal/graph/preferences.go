package graph

import (
	"context"

	"github.com/herald-vpn/herald/internal/view"
)

// preferences answers an account's notification preferences.
func (r *Resolver) preferences(ctx context.Context, accountID string) (*view.NotificationPreferences, error) {
	p, err := r.Preferences.Get(ctx, accountID)
	if err != nil {
		return nil, err
	}
	return ptr(view.NewNotificationPreferences(p)), nil
}

// updatePreferences changes an account's notification preferences and
// answers them after the change.
func (r *Resolver) updatePreferences(ctx context.Context, accountID string, in []view.NotificationSetting, timeZone *string, quiet *view.QuietHoursInput) (*view.NotificationPreferences, error) {
	change, err := view.PreferencesChange(in, timeZone, quiet)
	if err != nil {
		return nil, err
	}
	p, err := r.Preferences.Update(ctx, accountID, change)
	if err != nil {
		return nil, err
	}
	return ptr(view.NewNotificationPreferences(p)), nil
}
