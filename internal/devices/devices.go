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
	Platform        string // PlatformAndroid or PlatformIOS
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

// ImportRow is one accepted line of an import file, its email already
// normalized and its device ID already chosen.
type ImportRow struct {
	Line      int
	ID        string // used when the row creates a device
	Email     string
	Platform  string
	PushToken string
	Name      string // "" keeps an existing device's name
	NewName   string // the name of a device this row creates
}

// ImportBatch is what the store did with one batch of rows.
type ImportBatch struct {
	Imported int // devices created
	Updated  int // existing devices of the same account refreshed
	// Rejected lists rows the store refused (unknown email).
	Rejected []LineError
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

	// ImportDevices applies one batch in one transaction: emails are
	// resolved in one query (unknown: rejected); a token already held by
	// a device of the same account updates that device, a token held by
	// another account's device moves to a new device; later rows win over
	// earlier ones in the batch. Plan limits do not apply.
	ImportDevices(ctx context.Context, rows []ImportRow) (ImportBatch, error)
}
