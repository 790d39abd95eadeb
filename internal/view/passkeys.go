package view

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/herald-vpn/herald/internal/passkeys"
)

// Passkey is one passkey of an account (GraphQL Passkey): what its
// owner sees of it; the public key stays on the server.
type Passkey struct {
	// AAGUID names the authenticator's model (all zeros when it does not
	// say).
	AAGUID            string `json:"aaguid"`
	AttestationFormat string `json:"attestationFormat"`
	// BackupEligible and BackedUp: a synced passkey (iCloud Keychain,
	// Google Password Manager) may be and is backed up.
	BackedUp       bool `json:"backedUp"`
	BackupEligible bool `json:"backupEligible"`
	// CounterRegressions counts the sign-ins refused because its
	// signature counter went backwards (a cloned authenticator?).
	CounterRegressions int        `json:"counterRegressions"`
	CreatedAt          time.Time  `json:"createdAt"`
	ID                 string     `json:"id"`
	LastUsedAt         *time.Time `json:"lastUsedAt"`
	Name               string     `json:"name"`
	Transports         []string   `json:"transports"`
}

// NewPasskey renders a passkey.
func NewPasskey(c passkeys.Credential) Passkey {
	aaguid := uuid.Nil.String()
	if u, err := uuid.FromBytes(c.Record.Authenticator.AAGUID); err == nil {
		aaguid = u.String()
	}
	transports := make([]string, 0, len(c.Record.Transport))
	for _, t := range c.Record.Transport {
		transports = append(transports, string(t))
	}
	return Passkey{
		AAGUID: aaguid, AttestationFormat: c.Record.AttestationFormat,
		BackedUp: c.Record.Flags.BackupState, BackupEligible: c.Record.Flags.BackupEligible,
		CounterRegressions: c.CounterRegressions, CreatedAt: c.CreatedAt, ID: c.ID, LastUsedAt: c.LastUsedAt,
		Name: c.Name, Transports: transports,
	}
}

// PasskeyOptions answers the beginning of a passkey ceremony (GraphQL
// PasskeyOptions): the ceremony's id (challengeId, which finishing it
// names), when it expires, and publicKey, the options to pass to
// navigator.credentials.create or navigator.credentials.get (as
// PublicKeyCredential.parseCreationOptionsFromJSON or
// parseRequestOptionsFromJSON read them).
type PasskeyOptions struct {
	ChallengeID string         `json:"challengeId"`
	ExpiresAt   time.Time      `json:"expiresAt"`
	PublicKey   map[string]any `json:"publicKey"`
}

// NewPasskeyOptions renders a ceremony begun.
func NewPasskeyOptions(b passkeys.Begun) (PasskeyOptions, error) {
	var pk map[string]any
	if err := json.Unmarshal(b.Options, &pk); err != nil {
		return PasskeyOptions{}, err
	}
	return PasskeyOptions{ChallengeID: b.ChallengeID, ExpiresAt: b.ExpiresAt, PublicKey: pk}, nil
}

// PasskeyRemoved answers a passkey's removal.
type PasskeyRemoved struct {
	PasskeyID string `json:"passkeyId"`
	Removed   bool   `json:"removed"`
}
