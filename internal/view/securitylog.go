package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/securitylog"
)

// SecurityEvent is one entry of an account's security log (GraphQL
// SecurityEvent).
type SecurityEvent struct {
	// Actor is who did it: user (the account's owner), system,
	// admin:<id> (an operator's account id or API key id), or cli (the
	// herald command line, in the operators' log).
	Actor  string            `json:"actor"`
	At     time.Time         `json:"at"`
	Detail map[string]string `json:"detail"`
	ID     string            `json:"id"`
	IP     string            `json:"ip"`
	// Kind is one of the log's kinds (login_ok, mfa_enrolled…); each is
	// the webhook event security.<kind>.
	Kind      string `json:"kind"`
	Outcome   string `json:"outcome"`
	UserAgent string `json:"userAgent"`
}

// NewSecurityEvent renders an entry.
func NewSecurityEvent(e securitylog.Event) SecurityEvent {
	d := e.Detail
	if d == nil {
		d = map[string]string{}
	}
	return SecurityEvent{Actor: e.Actor, At: e.At.UTC(), Detail: d, ID: e.ID, IP: e.IP, Kind: string(e.Kind), Outcome: string(e.Outcome), UserAgent: e.UserAgent}
}
