package sessions

import "github.com/herald-vpn/herald/internal/webhooks"

// ReuseDetected is session.reuse_detected: a rotated refresh token came
// back after the grace window, so its session ended (its JSON is the
// event's data, fields in the order of their JSON names).
type ReuseDetected struct {
	SessionID      string `json:"sessionId"`
	SessionRevoked bool   `json:"sessionRevoked"` // always true
	UserID         string `json:"userId"`
}

func (ReuseDetected) EventType() string { return webhooks.SessionReuseDetected }
