package rest

import (
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/devices"
)

// Device is the REST device record.
type Device struct {
	DeviceID        string    `json:"deviceId"`
	Platform        string    `json:"platform"`
	Name            string    `json:"name"`
	PushToken       *string   `json:"pushToken"`
	Active          bool      `json:"active"`
	PushTokenStatus string    `json:"pushTokenStatus"`
	CreatedAt       time.Time `json:"createdAt"`
	LastSeenAt      time.Time `json:"lastSeenAt"`
}

// NewDevice renders a device; a removed device or a moved token shows
// pushToken null.
func NewDevice(d devices.Device) Device {
	out := Device{
		DeviceID:        d.ID,
		Platform:        d.Platform,
		Name:            d.Name,
		Active:          d.Active,
		PushTokenStatus: d.PushTokenStatus,
		CreatedAt:       d.CreatedAt.UTC().Truncate(time.Second),
		LastSeenAt:      d.LastSeenAt.UTC().Truncate(time.Second),
	}
	if d.PushToken != "" {
		tok := d.PushToken
		out.PushToken = &tok
	}
	return out
}

// ListDevices is GET /api/v1/devices.
func (h *Handlers) ListDevices() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Devices.List(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		out := make([]Device, 0, len(list))
		for _, d := range list {
			out = append(out, NewDevice(d))
		}
		return out, nil
	})
}

// RegisterDevice is POST /api/v1/devices.
func (h *Handlers) RegisterDevice() http.HandlerFunc {
	type input struct {
		Platform  string `json:"platform"`
		PushToken string `json:"pushToken"`
		Name      string `json:"name"`
	}
	return handle(http.StatusCreated, func(r *http.Request, in input) (any, error) {
		d, err := h.Devices.Register(r.Context(), auth.Caller(r.Context()).AccountID, in.Platform, in.PushToken, in.Name)
		if err != nil {
			return nil, err
		}
		return NewDevice(d), nil
	})
}

// UpdatePushToken is PUT /api/v1/devices/{id}/push-token.
func (h *Handlers) UpdatePushToken() http.HandlerFunc {
	type input struct {
		PushToken string `json:"pushToken"`
	}
	return handle(http.StatusOK, func(r *http.Request, in input) (any, error) {
		d, err := h.Devices.UpdatePushToken(r.Context(), auth.Caller(r.Context()).AccountID, r.PathValue("id"), in.PushToken)
		if err != nil {
			return nil, err
		}
		return NewDevice(d), nil
	})
}

// RemoveDevice is DELETE /api/v1/devices/{id}: the device becomes inactive.
// It answers 200 with the envelope (a 204 could carry none).
func (h *Handlers) RemoveDevice() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		deviceID := r.PathValue("id")
		if err := h.Devices.Remove(r.Context(), auth.Caller(r.Context()).AccountID, deviceID); err != nil {
			return nil, err
		}
		return map[string]any{"deviceId": deviceID, "removed": true, "message": "Device removed."}, nil
	})
}
