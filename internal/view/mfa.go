package view

import (
	"time"

	"github.com/herald-vpn/herald/internal/mfa"
)

// MFAFactor is one second factor of an account (GraphQL MfaFactor). Its
// secret is never shown again after enrollment.
type MFAFactor struct {
	ConfirmedAt *time.Time `json:"confirmedAt"`
	CreatedAt   time.Time  `json:"createdAt"`
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	LastUsedAt  *time.Time `json:"lastUsedAt"`
	Name        string     `json:"name"`
	// Status is pending (enrolled, waiting for its first code) or active.
	Status string `json:"status"`
}

// NewMFAFactor renders a factor.
func NewMFAFactor(f mfa.Factor) MFAFactor {
	status := "pending"
	if f.Active() {
		status = "active"
	}
	return MFAFactor{ID: f.ID, Kind: f.Kind, Name: f.Name, Status: status, CreatedAt: f.CreatedAt, ConfirmedAt: f.ConfirmedAt, LastUsedAt: f.LastUsedAt}
}

// MFAStatus is an account's second factors (GraphQL MfaStatus): enabled
// when one is active or the account has a passkey (logins then need it);
// passkeys counts them (listed by myPasskeys).
type MFAStatus struct {
	Enabled           bool        `json:"enabled"`
	Factors           []MFAFactor `json:"factors"`
	Passkeys          int         `json:"passkeys"`
	RecoveryCodesLeft int         `json:"recoveryCodesLeft"`
}

// NewMFAStatus renders an account's second factors.
func NewMFAStatus(s mfa.Status) MFAStatus {
	out := MFAStatus{Factors: make([]MFAFactor, 0, len(s.Factors)), RecoveryCodesLeft: s.RecoveryCodesLeft, Passkeys: s.Passkeys, Enabled: s.Passkeys > 0}
	for _, f := range s.Factors {
		out.Factors = append(out.Factors, NewMFAFactor(f))
		out.Enabled = out.Enabled || f.Active()
	}
	return out
}

// TOTPEnrollment answers a TOTP enrollment (GraphQL TotpEnrollment): the
// secret (base32), the otpauth:// URI and its QR code as a PNG data URL,
// shown this once.
type TOTPEnrollment struct {
	Factor MFAFactor `json:"factor"`
	QRCode string    `json:"qrCode"`
	Secret string    `json:"secret"`
	URI    string    `json:"uri"`
}

// NewTOTPEnrollment renders an enrollment.
func NewTOTPEnrollment(e mfa.Enrollment) TOTPEnrollment {
	return TOTPEnrollment{Factor: NewMFAFactor(e.Factor), Secret: e.Secret, URI: e.URI, QRCode: e.QRCode}
}

// MFAConfirmed answers a factor's confirmation (GraphQL MfaConfirmed):
// the factor, now active, the recovery codes (shown this once; empty when
// the account kept its earlier ones) and the session's new tokens at
// aal2.
type MFAConfirmed struct {
	Factor        MFAFactor `json:"factor"`
	RecoveryCodes []string  `json:"recoveryCodes"`
	Session       Tokens    `json:"session"`
}

// NewMFAConfirmed renders a confirmation.
func NewMFAConfirmed(c mfa.Confirmed) MFAConfirmed {
	codes := c.RecoveryCodes
	if codes == nil {
		codes = []string{}
	}
	return MFAConfirmed{Factor: NewMFAFactor(c.Factor), RecoveryCodes: codes, Session: NewTokens(c.Tokens)}
}

// RecoveryCodes answers a regeneration (GraphQL RecoveryCodes): ten new
// codes, shown this once; the earlier ones no longer work.
type RecoveryCodes struct {
	RecoveryCodes []string `json:"recoveryCodes"`
}

// MFAFactorRemoved answers a factor's removal.
type MFAFactorRemoved struct {
	FactorID string `json:"factorId"`
	Removed  bool   `json:"removed"`
}

// MFAReset answers an admin's reset of a user's second factors.
type MFAReset struct {
	FactorsRemoved int    `json:"factorsRemoved"`
	UserID         string `json:"userId"`
}
