package devices

import "github.com/herald-vpn/herald/internal/webhooks"

// The webhook events of devices: one type per event, its JSON the
// event's data (fields in the order of their JSON names).

// Registered is device.registered: a device was created (a refresh of
// the same app's device is not one).
type Registered struct {
	DeviceID string `json:"deviceId"`
	Name     string `json:"name"`
	Platform string `json:"platform"`
	UserID   string `json:"userId"`
}

// Removed is device.removed: the account's owner removed the device.
type Removed struct {
	DeviceID string `json:"deviceId"`
	UserID   string `json:"userId"`
}

// TokenInvalidated is device.token_invalidated: a push provider called
// the device's token dead.
type TokenInvalidated struct {
	DeviceID        string `json:"deviceId"`
	Platform        string `json:"platform"`
	PushTokenStatus string `json:"pushTokenStatus"` // always TokenInvalid
	UserID          string `json:"userId"`
}

func (Registered) EventType() string       { return webhooks.DeviceRegistered }
func (Removed) EventType() string          { return webhooks.DeviceRemoved }
func (TokenInvalidated) EventType() string { return webhooks.DeviceTokenInvalidated }

// RegisteredEvent is the event of d's creation.
func RegisteredEvent(d Device) Registered {
	return Registered{DeviceID: d.ID, UserID: d.AccountID, Platform: d.Platform, Name: d.Name}
}

// InvalidatedEvent is the event of d's token becoming invalid.
func InvalidatedEvent(d Device) TokenInvalidated {
	return TokenInvalidated{DeviceID: d.ID, UserID: d.AccountID, Platform: d.Platform, PushTokenStatus: TokenInvalid}
}
