// Package devices owns the devices of Herald's accounts: registration with
// the plan's device limit, push-token updates (one token, one device),
// removal, the administrators' listing and the bulk import of devices from
// an older system. The plan rules (how many devices a subscription allows)
// are the subscriptions package's.
//
// The rules live here, as pure functions where they can be (register.go);
// the service runs them in the Store's unit of work (InTx, on SQLite and
// PostgreSQL by sqlstore) so that they hold under concurrency.
package devices

import (
	"context"
	"time"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/herald-vpn/herald/internal/webhooks"
)

// Platforms a device can have: push's target platforms.
const (
	PlatformAndroid = push.PlatformAndroid
	PlatformIOS     = push.PlatformIOS
	// PlatformWeb is a browser (Web Push): its push token is the
	// PushSubscription JSON, stored in its canonical form.
	PlatformWeb = push.PlatformWeb
	// PlatformHuawei is a phone without Google's services (Huawei Push
	// Kit): its push token is an opaque string, checked as FCM's.
	PlatformHuawei = push.PlatformHuawei
)

// Push-token states. A token is invalid once a provider called it dead, or
// when the device lost it to another device; a new token makes it valid.
const (
	TokenValid   = "valid"
	TokenInvalid = "invalid"
)

// Device is one registered app installation of an account.
type Device struct {
	ID              string // deviceId, assigned at registration
	AccountID       string
	Platform        string // PlatformAndroid, PlatformIOS, PlatformWeb or PlatformHuawei
	Name            string
	PushToken       string // "" once the token moved to another device or the device was removed
	Active          bool   // false once removed
	PushTokenStatus string // TokenValid or TokenInvalid
	CreatedAt       time.Time
	LastSeenAt      time.Time
}

// NewDevice is what the store needs to register a device.
type NewDevice struct {
	ID        string
	AccountID string
	Platform  string
	Name      string // as given; "" keeps the name of a refreshed device
	NewName   string // the name of a created device ("": Name)
	PushToken string
}

// Quota is what the device-limit rule sees inside the registering
// transaction, with the account's subscription row locked.
type Quota struct {
	Subscription  subscriptions.Subscription
	ActiveDevices int
}

// TokenHolder is the device that holds a push token.
type TokenHolder struct {
	DeviceID  string
	AccountID string
}

// ImportedDevice is one device an import batch writes: created, or updated
// when a device with its ID exists (its name kept when Name is empty).
type ImportedDevice struct {
	ID        string
	AccountID string
	Platform  string
	Name      string
	PushToken string // "": the device has lost its token to a later line (invalid)
}

// ImportTx is what one batch of an import reads and writes, inside one
// transaction. The rules (which line wins a token, what is counted) are
// the service's; these only read and write rows.
type ImportTx interface {
	// AccountIDsByEmail maps each of the emails an account has to its ID.
	AccountIDsByEmail(ctx context.Context, emails []string) (map[string]string, error)
	// TokenHolders maps each of the tokens a device holds to that device.
	TokenHolders(ctx context.Context, tokens []string) (map[string]TokenHolder, error)
	// DropTokens takes the push token from these devices (status invalid).
	DropTokens(ctx context.Context, deviceIDs []string) error
	// PutDevices writes the devices, active and seen now.
	PutDevices(ctx context.Context, ds []ImportedDevice) error
}

// Store is the persistence the devices service needs; sqlstore implements
// it. Errors are the storage package's.
type Store interface {
	// AccountByID is accounts.Store's lookup.
	AccountByID(ctx context.Context, id string) (accounts.Account, error)

	// ListDevices returns the account's active devices, oldest first.
	ListDevices(ctx context.Context, accountID string) ([]Device, error)

	// The unit of work registration runs in (Register): the methods
	// below that say so must be called inside InTx.
	storage.Transactor
	// Emit writes a webhook event in the transaction ctx carries.
	Emit(ctx context.Context, p webhooks.Payload) error
	// LockSubscription reads a live account's subscription and holds its
	// row until the transaction ends, so that two registrations of one
	// account count one after the other (inside InTx). ErrNotFound for an
	// unknown or deleted account.
	LockSubscription(ctx context.Context, accountID string) (subscriptions.Subscription, error)
	// DeviceWithToken is the device, active or not, holding the push
	// token, locked until the transaction ends (inside InTx). ErrNotFound
	// when none holds it.
	DeviceWithToken(ctx context.Context, token string) (Device, error)
	// RefreshDevice sets the device's platform and name, marks its token
	// valid and its last sight now, and returns it.
	RefreshDevice(ctx context.Context, id, platform, name string) (Device, error)
	// CountActiveDevices is how many active devices the account has.
	CountActiveDevices(ctx context.Context, accountID string) (int, error)
	// DropPushToken takes the device's token away (it moved to another
	// device) and marks it invalid.
	DropPushToken(ctx context.Context, deviceID string) error
	// InsertDevice writes a new device as d says. ErrConflict when another
	// device holds its token (a concurrent registration took it first).
	InsertDevice(ctx context.Context, d Device) error

	// UpdatePushToken gives the account's active device the token (taking
	// it from any other device) and marks it valid. ErrNotFound when the
	// device is unknown, inactive or another account's.
	UpdatePushToken(ctx context.Context, accountID, deviceID, token string) (Device, error)

	// DeactivateDevice makes the device inactive and drops its token.
	// Remove emits its event in the same transaction (InTx).
	// ErrNotFound when unknown, already inactive or another account's.
	DeactivateDevice(ctx context.Context, accountID, deviceID string) error

	// AdminDevices returns up to limit devices, active or not, with an ID
	// greater than after, in ID order; accountID "" means every account.
	AdminDevices(ctx context.Context, accountID, after string, limit int) ([]Device, error)

	// InImportTx runs fn, one batch of an import, in one transaction:
	// committed when fn returns nil, rolled back otherwise.
	InImportTx(ctx context.Context, fn func(ImportTx) error) error
}
