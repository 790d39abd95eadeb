package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/devices"
)

// Device is a registered device.
type Device struct {
	DeviceID string `json:"deviceId"`
	// UserID is the owner's account: GraphQL shows it, REST (where the
	// caller is the owner) does not.
	UserID   string `json:"-"`
	Platform string `json:"platform"`
	Name     string `json:"name"`
	// PushToken is nil once the device was removed or its token moved to
	// another device.
	PushToken       *string   `json:"pushToken"`
	Active          bool      `json:"active"`
	PushTokenStatus string    `json:"pushTokenStatus"`
	CreatedAt       time.Time `json:"createdAt"`
	LastSeenAt      time.Time `json:"lastSeenAt"`
}

// NewDevice renders a device.
func NewDevice(d devices.Device) Device {
	return Device{
		DeviceID:        d.ID,
		UserID:          d.AccountID,
		Platform:        d.Platform,
		Name:            d.Name,
		PushToken:       nonEmpty(d.PushToken),
		Active:          d.Active,
		PushTokenStatus: d.PushTokenStatus,
		CreatedAt:       seconds(d.CreatedAt),
		LastSeenAt:      seconds(d.LastSeenAt),
	}
}

// DeviceRemoved answers the removal of a device.
type DeviceRemoved struct {
	DeviceID string `json:"deviceId"`
	Message  string `json:"message"`
	Removed  bool   `json:"removed"`
}

// VAPIDPublicKey is the Web Push application server key browsers
// subscribe with (GET /api/v1/push/vapid-public-key).
type VAPIDPublicKey struct {
	PublicKey string `json:"publicKey"`
}
