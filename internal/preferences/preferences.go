// Package preferences owns how a person wants to be reached: the
// categories every send names, the channels, and a user's on/off choice
// per category and channel. It holds the rules (which categories exist,
// which cannot be turned off, what a change may say) as pure functions,
// and a small service over a store; it speaks no HTTP.
//
// A user who never chose anything gets everything: a stored setting is
// an exception to "on". The critical categories (security, billing) are
// always on, whatever is stored.
package preferences

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
)

// The built-in categories.
const (
	CategorySecurity = "security" // sign-ins, factors, account changes: critical
	CategoryBilling  = "billing"  // payments, renewals, expiry: critical
	CategoryService  = "service"  // maintenance, outages
	CategoryProduct  = "product"  // news, offers
	CategoryMessages = "messages" // messages to the user
)

// DefaultCategory is the category of a send that names none: sends
// written before categories existed keep going out, and a user can still
// turn them off.
const DefaultCategory = CategoryService

// The channels a preference names. Push is a phone's FCM, APNs or HMS
// token; ChannelWebPush a browser's push subscription.
const (
	ChannelPush     = "push"
	ChannelTelegram = "telegram"
	ChannelEmail    = "email"
	ChannelWebPush  = "webPush"
	ChannelInbox    = "inbox"
)

// Channels are every channel, in the order answers list them.
var Channels = []string{ChannelPush, ChannelTelegram, ChannelEmail, ChannelWebPush, ChannelInbox}

// Category is one category of sends.
type Category struct {
	Name string
	// Critical categories cannot be turned off: a person must hear of a
	// sign-in on a new device or a failed payment.
	Critical bool
	// Cap is the most notifications of the category one user gets a day
	// (CapWindow); 0 is no cap. A critical category has none.
	Cap int
}

// Catalogue is the categories of this deployment: the built-in ones, then
// the operator's (HERALD_NOTIFICATION_CATEGORIES).
type Catalogue struct{ list []Category }

// MaxCategoryLen bounds a category's name.
const MaxCategoryLen = 32

// NewCatalogue is the built-in categories and extra, in that order. An
// extra entry is a name, 1 to 32 lowercase letters, digits, '-' or '_',
// naming no built-in or other extra category, optionally followed by a
// cap, ":N/day" (ParseCap): "offers:2/day". A built-in category may be
// named only with a cap, which caps it ("product:3/day"); a critical one
// cannot be capped.
func NewCatalogue(extra []string) (Catalogue, error) {
	c := Catalogue{list: []Category{
		{Name: CategorySecurity, Critical: true}, {Name: CategoryBilling, Critical: true},
		{Name: CategoryService}, {Name: CategoryProduct}, {Name: CategoryMessages},
	}}
	builtin := len(c.list)
	capped := make(map[string]bool)
	for _, entry := range extra {
		name, capSpec, hasCap := strings.Cut(entry, ":")
		if !validName(name) {
			return Catalogue{}, fmt.Errorf("notification category %q: 1 to %d lowercase letters, digits, '-' or '_', optionally followed by a cap such as :3/day", entry, MaxCategoryLen)
		}
		limit := 0
		if hasCap {
			var err error
			if limit, err = ParseCap(capSpec); err != nil {
				return Catalogue{}, fmt.Errorf("notification category %q: %w", entry, err)
			}
		}
		i := slices.IndexFunc(c.list, func(k Category) bool { return k.Name == name })
		switch {
		case i < 0:
			c.list = append(c.list, Category{Name: name, Cap: limit})
		case i >= builtin || !hasCap || capped[name]:
			return Catalogue{}, fmt.Errorf("notification category %q is named twice (a built-in category is named only to cap it, as in product:3/day)", name)
		case c.list[i].Critical:
			return Catalogue{}, fmt.Errorf("notification category %q cannot be capped: it is critical (security and billing notices always go out)", name)
		default:
			c.list[i].Cap = limit
			capped[name] = true
		}
	}
	return c, nil
}

func validName(name string) bool {
	if name == "" || len(name) > MaxCategoryLen {
		return false
	}
	for _, r := range name {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z') {
			return false
		}
	}
	return true
}

// Empty reports whether c is the zero Catalogue, which has no category.
func (c Catalogue) Empty() bool { return len(c.list) == 0 }

// Categories lists the catalogue in order.
func (c Catalogue) Categories() []Category { return slices.Clone(c.list) }

// Find looks a category up by name.
func (c Catalogue) Find(name string) (Category, bool) {
	i := slices.IndexFunc(c.list, func(k Category) bool { return k.Name == name })
	if i < 0 {
		return Category{}, false
	}
	return c.list[i], true
}

// Critical reports whether the category cannot be turned off nor held.
func (c Catalogue) Critical(name string) bool {
	k, ok := c.Find(name)
	return ok && k.Critical
}

// Names lists the categories' names, for a message.
func (c Catalogue) Names() string {
	names := make([]string, len(c.list))
	for i, k := range c.list {
		names[i] = k.Name
	}
	return strings.Join(names, ", ")
}

// Setting is one stored choice: the channel of the category on or off.
type Setting struct {
	Category string
	Channel  string
	Enabled  bool
}

// Preferences are a user's effective choices, every category of the
// catalogue with every channel.
type Preferences struct {
	Categories []CategoryPreferences
	// Schedule is the user's time zone and quiet hours.
	Schedule Schedule
}

// CategoryPreferences is one category's channels, on or off.
type CategoryPreferences struct {
	Category string
	Critical bool
	Channels map[string]bool // every channel of Channels
}

// Effective is the user's preferences from the stored settings: on
// unless a setting turns it off, and always on for a critical category.
// A setting of a category the catalogue no longer has is ignored.
func (c Catalogue) Effective(stored []Setting) Preferences {
	p := Preferences{Categories: make([]CategoryPreferences, len(c.list))}
	for i, k := range c.list {
		ch := make(map[string]bool, len(Channels))
		for _, name := range Channels {
			ch[name] = true
		}
		p.Categories[i] = CategoryPreferences{Category: k.Name, Critical: k.Critical, Channels: ch}
	}
	for _, s := range stored {
		i := slices.IndexFunc(c.list, func(k Category) bool { return k.Name == s.Category })
		if i < 0 || c.list[i].Critical {
			continue
		}
		if _, ok := p.Categories[i].Channels[s.Channel]; ok {
			p.Categories[i].Channels[s.Channel] = s.Enabled
		}
	}
	return p
}

// Allows reports whether the settings let a send of category reach the
// user on channel.
func (c Catalogue) Allows(stored []Setting, category, channel string) bool {
	if k, ok := c.Find(category); ok && k.Critical {
		return true
	}
	for _, s := range stored {
		if s.Category == category && s.Channel == channel {
			return s.Enabled
		}
	}
	return true
}

// Change is one change of a user's preferences: settings to store, and
// the time zone and quiet hours when set.
type Change struct {
	Settings []Setting
	// TimeZone, when set, replaces the time zone ("" is UTC).
	TimeZone *string
	// Quiet, when set, replaces the quiet hours; a nil *QuietHours in it
	// turns them off.
	Quiet **QuietHours
}

// Check validates a change: something to change; every setting names a
// category of the catalogue and a channel, and none turns a critical
// category off (VALIDATION_ERROR naming the category; a critical category
// may be set on, which changes nothing); at most one setting per category
// and channel; an IANA time zone.
func (c Catalogue) Check(ch Change) error {
	if len(ch.Settings) == 0 && ch.TimeZone == nil && ch.Quiet == nil {
		return apperr.Invalid("settings", "a setting, a time zone or quiet hours to change", "nothing")
	}
	if ch.TimeZone != nil {
		if err := CheckTimeZone(*ch.TimeZone); err != nil {
			return err
		}
	}
	changes := ch.Settings
	seen := make(map[[2]string]bool, len(changes))
	for _, s := range changes {
		k, ok := c.Find(s.Category)
		if !ok {
			return apperr.Invalid("category", "one of "+c.Names(), fmt.Sprintf("%.40q", s.Category))
		}
		if !slices.Contains(Channels, s.Channel) {
			return apperr.Invalid("channel", "one of "+strings.Join(Channels, ", "), fmt.Sprintf("%.40q", s.Channel))
		}
		if k.Critical && !s.Enabled {
			return apperr.Newf(apperr.ValidationError, "The category %q cannot be turned off: it carries security and billing notices.", k.Name).
				With("field", "category").With("constraint", "a category that can be turned off").With("received", k.Name+" off")
		}
		key := [2]string{s.Category, s.Channel}
		if seen[key] {
			return apperr.Invalid("channel", "each category's channel set once", s.Category+" "+s.Channel+" twice")
		}
		seen[key] = true
	}
	return nil
}

// Store keeps the settings.
type Store interface {
	storage.Transactor
	// NotificationSettings are the account's stored settings.
	NotificationSettings(ctx context.Context, accountID string) ([]Setting, error)
	// SetNotificationSettings stores each setting (an upsert), in the
	// caller's unit of work.
	SetNotificationSettings(ctx context.Context, accountID string, settings []Setting) error
	// NotificationSchedule is the account's schedule (the zero one when
	// never set).
	NotificationSchedule(ctx context.Context, accountID string) (Schedule, error)
	// SetNotificationSchedule stores the account's schedule, in the
	// caller's unit of work.
	SetNotificationSchedule(ctx context.Context, accountID string, s Schedule) error
	// AccountExists reports whether a live (not deleted) account has the id.
	AccountExists(ctx context.Context, accountID string) (bool, error)
	// UseUnsubscribeLink records the first use of the unsubscribe token
	// tokenID (true), or answers false, changing nothing, when it was
	// used already; in the caller's unit of work.
	UseUnsubscribeLink(ctx context.Context, tokenID, accountID string) (first bool, err error)
}

// Service reads and changes a user's preferences.
type Service struct {
	store     Store
	catalogue Catalogue
	links     UnsubscribeLinks
}

// NewService is a Service over store.
func NewService(store Store, catalogue Catalogue) *Service {
	return &Service{store: store, catalogue: catalogue}
}

// Catalogue is the deployment's categories.
func (s *Service) Catalogue() Catalogue { return s.catalogue }

// Get is the account's effective preferences; USER_NOT_FOUND for an
// unknown account.
func (s *Service) Get(ctx context.Context, accountID string) (Preferences, error) {
	if err := s.exists(ctx, accountID); err != nil {
		return Preferences{}, err
	}
	return s.read(ctx, accountID)
}

func (s *Service) read(ctx context.Context, accountID string) (Preferences, error) {
	stored, err := s.store.NotificationSettings(ctx, accountID)
	if err != nil {
		return Preferences{}, err
	}
	sched, err := s.store.NotificationSchedule(ctx, accountID)
	if err != nil {
		return Preferences{}, err
	}
	p := s.catalogue.Effective(stored)
	p.Schedule = sched
	return p, nil
}

// Update applies a change (Check's rules) and answers the preferences
// after it.
func (s *Service) Update(ctx context.Context, accountID string, ch Change) (Preferences, error) {
	if err := s.catalogue.Check(ch); err != nil {
		return Preferences{}, err
	}
	var out Preferences
	err := s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.exists(ctx, accountID); err != nil {
			return err
		}
		if len(ch.Settings) > 0 {
			if err := s.store.SetNotificationSettings(ctx, accountID, ch.Settings); err != nil {
				return err
			}
		}
		if ch.TimeZone != nil || ch.Quiet != nil {
			sched, err := s.store.NotificationSchedule(ctx, accountID)
			if err != nil {
				return err
			}
			if ch.TimeZone != nil {
				sched.TimeZone = *ch.TimeZone
			}
			if ch.Quiet != nil {
				sched.Quiet = *ch.Quiet
			}
			if err := s.store.SetNotificationSchedule(ctx, accountID, sched); err != nil {
				return err
			}
		}
		var err error
		out, err = s.read(ctx, accountID)
		return err
	})
	return out, err
}

func (s *Service) exists(ctx context.Context, accountID string) error {
	ok, err := s.store.AccountExists(ctx, accountID)
	if err != nil {
		return err
	}
	if !ok {
		return apperr.Newf(apperr.UserNotFound, "No user with the id %q.", accountID)
	}
	return nil
}

// Resolve is the category a send names: DefaultCategory for none;
// false for one the catalogue does not have.
func (c Catalogue) Resolve(name string) (string, bool) {
	if name == "" {
		return DefaultCategory, true
	}
	_, ok := c.Find(name)
	return name, ok
}
