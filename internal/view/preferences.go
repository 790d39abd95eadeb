package view

import (
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/preferences"
)

// NotificationPreferences are a user's notification preferences: every
// category of the deployment, each with every channel on or off.
type NotificationPreferences struct {
	Categories []CategoryPreferences `json:"categories"`
	// TimeZone is the user's IANA time zone; nil for none (UTC).
	TimeZone *string `json:"timeZone"`
	// QuietHours are the user's quiet hours; nil for none.
	QuietHours *QuietHours `json:"quietHours"`
}

// QuietHours are a daily window in the user's time zone, HH:MM to HH:MM.
type QuietHours struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// CategoryPreferences is one category's channels.
type CategoryPreferences struct {
	Category string `json:"category"`
	// Critical categories (security, billing) are always on.
	Critical bool            `json:"critical"`
	Channels ChannelSwitches `json:"channels"`
}

// ChannelSwitches say which channels a category reaches the user on.
type ChannelSwitches struct {
	Push     bool `json:"push"`
	Telegram bool `json:"telegram"`
	Email    bool `json:"email"`
	WebPush  bool `json:"webPush"`
	Inbox    bool `json:"inbox"`
}

// NewNotificationPreferences renders p.
func NewNotificationPreferences(p preferences.Preferences) NotificationPreferences {
	var quiet *QuietHours
	if q := p.Schedule.Quiet; q != nil {
		quiet = &QuietHours{Start: preferences.Clock(q.Start), End: preferences.Clock(q.End)}
	}
	return NotificationPreferences{TimeZone: nonEmpty(p.Schedule.TimeZone), QuietHours: quiet, Categories: All(p.Categories, func(c preferences.CategoryPreferences) CategoryPreferences {
		return CategoryPreferences{Category: c.Category, Critical: c.Critical, Channels: ChannelSwitches{
			Push:     c.Channels[preferences.ChannelPush],
			Telegram: c.Channels[preferences.ChannelTelegram],
			Email:    c.Channels[preferences.ChannelEmail],
			WebPush:  c.Channels[preferences.ChannelWebPush],
			Inbox:    c.Channels[preferences.ChannelInbox],
		}}
	})}
}

// NotificationSetting is one change of a preference, as both doors take
// it: a category's channel on or off.
type NotificationSetting struct {
	Category string `json:"category"`
	Channel  string `json:"channel"`
	// Enabled is required: a change that leaves it out is refused, not
	// taken as off.
	Enabled *bool `json:"enabled"`
}

// QuietHoursInput sets or clears quiet hours: enabled false clears them,
// true sets them to start–end (HH:MM each).
type QuietHoursInput struct {
	Enabled *bool   `json:"enabled"`
	Start   *string `json:"start"`
	End     *string `json:"end"`
}

// PreferencesChange is the domain's change from what both doors take:
// VALIDATION_ERROR naming the field for a setting without enabled, quiet
// hours without enabled, or enabled ones without a valid start and end.
func PreferencesChange(settings []NotificationSetting, timeZone *string, quiet *QuietHoursInput) (preferences.Change, error) {
	ch := preferences.Change{Settings: make([]preferences.Setting, len(settings)), TimeZone: timeZone}
	for i, s := range settings {
		if s.Enabled == nil {
			return preferences.Change{}, apperr.Invalid("enabled", "true or false", "nothing")
		}
		ch.Settings[i] = preferences.Setting{Category: s.Category, Channel: s.Channel, Enabled: *s.Enabled}
	}
	if quiet != nil {
		if quiet.Enabled == nil {
			return preferences.Change{}, apperr.Invalid("quietHours.enabled", "true or false", "nothing")
		}
		var q *preferences.QuietHours
		if *quiet.Enabled {
			v, err := preferences.NewQuietHours(deref(quiet.Start), deref(quiet.End))
			if err != nil {
				return preferences.Change{}, err
			}
			q = &v
		}
		ch.Quiet = &q
	}
	return ch, nil
}

// NotificationCategory is one category of the deployment's catalogue, as
// an operator picks it for a send.
type NotificationCategory struct {
	Name string `json:"name"`
	// Critical categories (security, billing) cannot be turned off, and
	// pass through quiet hours.
	Critical bool `json:"critical"`
	// CapPerDay is the most sends of the category a user gets a day
	// (HERALD_NOTIFICATION_CATEGORIES); nil when uncapped.
	CapPerDay *int `json:"capPerDay"`
}

// NewNotificationCategories renders the catalogue, in its order.
func NewNotificationCategories(c preferences.Catalogue) []NotificationCategory {
	return All(c.Categories(), func(k preferences.Category) NotificationCategory {
		c := NotificationCategory{Name: k.Name, Critical: k.Critical}
		if k.Cap > 0 {
			c.CapPerDay = &k.Cap
		}
		return c
	})
}

// Unsubscribed answers an unsubscribe link's one-click POST: the
// category whose channel (email) is now off for the link's account.
type Unsubscribed struct {
	Category string `json:"category"`
	Channel  string `json:"channel"`
	// Enabled is false: the channel of the category is off.
	Enabled bool `json:"enabled"`
}

// NewUnsubscribed renders what an unsubscribe link turned off.
func NewUnsubscribed(u preferences.Unsubscribe) Unsubscribed {
	return Unsubscribed{Category: u.Category, Channel: u.Channel}
}
