package rest

import (
	"net/http"

	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/view"
)

// ListDevices is GET /api/v1/devices.
func (h *Handlers) ListDevices() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, _ noBody) (any, error) {
		list, err := h.Devices.List(r.Context(), auth.Caller(r.Context()).AccountID)
		if err != nil {
			return nil, err
		}
		return view.All(list, view.NewDevice), nil
	})
}

// registerDeviceBody is the body of RegisterDevice.
type registerDeviceBody struct {
	Platform  string `json:"platform"`
	PushToken string `json:"pushToken"`
	Name      string `json:"name"`
}

// RegisterDevice is POST /api/v1/devices.
func (h *Handlers) RegisterDevice() http.HandlerFunc {
	return handle(http.StatusCreated, func(r *http.Request, in registerDeviceBody) (any, error) {
		d, err := h.Devices.Register(r.Context(), auth.Caller(r.Context()).AccountID, in.Platform, in.PushToken, in.Name)
		if err != nil {
			return nil, err
		}
		return view.NewDevice(d), nil
	})
}

// updatePushTokenBody is the body of UpdatePushToken.
type updatePushTokenBody struct {
	PushToken string `json:"pushToken"`
}

// UpdatePushToken is PUT /api/v1/devices/{id}/push-token.
func (h *Handlers) UpdatePushToken() http.HandlerFunc {
	return handle(http.StatusOK, func(r *http.Request, in updatePushTokenBody) (any, error) {
		d, err := h.Devices.UpdatePushToken(r.Context(), auth.Caller(r.Context()).AccountID, r.PathValue("id"), in.PushToken)
		if err != nil {
			return nil, err
		}
		return view.NewDevice(d), nil
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
		return view.DeviceRemoved{DeviceID: deviceID, Removed: true, Message: "Device removed."}, nil
	})
}
