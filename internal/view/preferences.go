package view

import (
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/preferences"
)

// NotificationPreferences are a user's notification preferences: every
// category of the deployment, each with every channel on or off.
type NotificationPreferences struct {
	Categories []CategoryPreferences `json:"categories"`
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
	return NotificationPreferences{Categories: All(p.Categories, func(c preferences.CategoryPreferences) CategoryPreferences {
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

// Settings is the domain's list of changes; VALIDATION_ERROR (field
// enabled) for one without enabled.
func Settings(in []NotificationSetting) ([]preferences.Setting, error) {
	out := make([]preferences.Setting, len(in))
	for i, s := range in {
		if s.Enabled == nil {
			return nil, apperr.Invalid("enabled", "true or false", "nothing")
		}
		out[i] = preferences.Setting{Category: s.Category, Channel: s.Channel, Enabled: *s.Enabled}
	}
	return out, nil
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
