package rest

import (
	"net/http"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/devices"
	"github.com/herald-vpn/herald/internal/sessions"
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
func (h *Handlers) ListDevices(w http.ResponseWriter, r *http.Request, id sessions.Identity) {
	list, err := h.Devices.List(r.Context(), id.AccountID)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	out := make([]Device, 0, len(list))
	for _, d := range list {
		out = append(out, NewDevice(d))
	}
	api.WriteData(w, http.StatusOK, out)
}

// RegisterDevice is POST /api/v1/devices.
func (h *Handlers) RegisterDevice(w http.ResponseWriter, r *http.Request, id sessions.Identity) {
	var in struct {
		Platform  string `json:"platform"`
		PushToken string `json:"pushToken"`
		Name      string `json:"name"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	d, err := h.Devices.Register(r.Context(), id.AccountID, in.Platform, in.PushToken, in.Name)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusCreated, NewDevice(d))
}

// UpdatePushToken is PUT /api/v1/devices/{id}/push-token.
func (h *Handlers) UpdatePushToken(w http.ResponseWriter, r *http.Request, id sessions.Identity) {
	var in struct {
		PushToken string `json:"pushToken"`
	}
	if err := api.DecodeJSON(w, r, &in); err != nil {
		api.WriteError(w, r, err)
		return
	}
	d, err := h.Devices.UpdatePushToken(r.Context(), id.AccountID, r.PathValue("id"), in.PushToken)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, NewDevice(d))
}

// RemoveDevice is DELETE /api/v1/devices/{id}: the device becomes inactive.
// It answers 200 with the envelope (a 204 could carry none).
func (h *Handlers) RemoveDevice(w http.ResponseWriter, r *http.Request, id sessions.Identity) {
	deviceID := r.PathValue("id")
	if err := h.Devices.Remove(r.Context(), id.AccountID, deviceID); err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteData(w, http.StatusOK, map[string]any{"deviceId": deviceID, "removed": true, "message": "Device removed."})
}
