package mfa

import (
	"crypto/rand"
	"encoding/base32"
	"time"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// Reset is security.mfa_reset: an admin removed every second factor and
// recovery code of an account (its JSON is the event's data, fields in
// the order of their JSON names).
type Reset struct {
	ActorID        string `json:"actorId"`   // the admin's account id, or the API key's id
	ActorKind      string `json:"actorKind"` // user or apiKey
	FactorsRemoved int    `json:"factorsRemoved"`
	UserID         string `json:"userId"`
}

func (Reset) EventType() string { return webhooks.SecurityMFAReset }

// RecoveryCodeUsedArgs is the job that tells an account's owner, by
// email, that one of their recovery codes was used.
type RecoveryCodeUsedArgs struct {
	AccountID string    `json:"account_id"`
	Left      int       `json:"left"`
	UsedAt    time.Time `json:"used_at"`
}

func (RecoveryCodeUsedArgs) Kind() string { return "mfa_recovery_code_used" }

var base32NoPad = base32.StdEncoding.WithPadding(base32.NoPadding)

var randRead = rand.Read
