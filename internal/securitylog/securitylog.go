// Package securitylog owns the security log's rules: the Event recorded
// for every security-relevant change to an account (who did it, from
// where, and how it ended), the catalogue of kinds, the webhook type of
// each kind, the actor notation, and the device key a new-device alert
// compares. It holds no storage and speaks no HTTP: the store records an
// Event in the transaction of the change it describes.
package securitylog

import (
	"errors"
	"net/netip"
	"strings"
	"time"
)

// Outcome is how the recorded attempt ended.
type Outcome string

const (
	OK      Outcome = "ok"
	Failed  Outcome = "failed"
	Refused Outcome = "refused"
)

// Kind names one sort of security event; its webhook is security.<kind>.
type Kind string

const (
	LoginOK              Kind = "login_ok"
	LoginFailed          Kind = "login_failed" // detail.reason: password, mfa_code, locked
	Logout               Kind = "logout"
	RefreshReuseDetected Kind = "refresh_reuse_detected"
	MFAEnrolled          Kind = "mfa_enrolled"
	MFARemoved           Kind = "mfa_removed"
	RecoveryCodesRegen   Kind = "recovery_codes_regenerated"
	RecoveryCodeUsed     Kind = "recovery_code_used"
	MFAReset             Kind = "mfa_reset"
	PasswordChanged      Kind = "password_changed"
	PasswordReset        Kind = "password_reset"
	EmailChangeRequested Kind = "email_change_requested"
	EmailChangeConfirmed Kind = "email_change_confirmed"
	EmailChangeCancelled Kind = "email_change_cancelled"
	SessionRevoked       Kind = "session_revoked"
	APIKeyCreated        Kind = "api_key_created"
	APIKeyRevoked        Kind = "api_key_revoked"
	AdminAction          Kind = "admin_action" // detail.action: ban, plan_set, delete, ...
	PasskeyAdded         Kind = "passkey_added"
	PasskeyRemoved       Kind = "passkey_removed"
	NewDeviceSignIn      Kind = "new_device_sign_in"
	IdentityLinked       Kind = "identity_linked"
	IdentityUnlinked     Kind = "identity_unlinked"
	GuestUpgraded        Kind = "guest_upgraded" // detail.method: password, passkey, apple, google
)

// Kinds is the catalogue, in a stable order.
var Kinds = []Kind{
	LoginOK, LoginFailed, Logout, RefreshReuseDetected,
	MFAEnrolled, MFARemoved, RecoveryCodesRegen, RecoveryCodeUsed, MFAReset,
	PasswordChanged, PasswordReset,
	EmailChangeRequested, EmailChangeConfirmed, EmailChangeCancelled,
	SessionRevoked, APIKeyCreated, APIKeyRevoked, AdminAction,
	PasskeyAdded, PasskeyRemoved,
	NewDeviceSignIn, IdentityLinked, IdentityUnlinked, GuestUpgraded,
}

// Known reports whether k is in the catalogue.
func Known(k Kind) bool {
	for _, c := range Kinds {
		if c == k {
			return true
		}
	}
	return false
}

// WebhookType is the webhook event type of k: security.<kind>. The
// existing security.mfa_reset is MFAReset's.
func WebhookType(k Kind) string { return "security." + string(k) }

// DefaultRetention is HERALD_SECURITY_LOG_RETENTION's default.
const DefaultRetention = 365 * 24 * time.Hour

// MaxDetail bounds an event's detail map: it is small by rule.
const (
	MaxDetailEntries = 8
	MaxDetailValue   = 200
	MaxUserAgent     = 512
)

// Event is one entry of an account's security log.
type Event struct {
	ID        string
	AccountID string
	Kind      Kind
	Outcome   Outcome
	Actor     string // "user", "system", "cli" or "admin:<id>"
	IP        string
	UserAgent string
	At        time.Time
	Detail    map[string]string
}

var (
	ErrBadKind    = errors.New("securitylog: unknown kind")
	ErrBadOutcome = errors.New("securitylog: unknown outcome")
	ErrBadActor   = errors.New("securitylog: malformed actor")
	ErrBigDetail  = errors.New("securitylog: detail too large")
)

// Actor names. AdminActor makes "admin:<id>". ActorCLI is the host's
// operator at the herald command line (no account, no key).
const (
	ActorUser   = "user"
	ActorSystem = "system"
	ActorCLI    = "cli"
)

// OperatorKinds are the kinds an entry of no account may have: the
// operators' log (an API key made or revoked at the command line).
var OperatorKinds = []Kind{APIKeyCreated, APIKeyRevoked}

func AdminActor(id string) string { return "admin:" + id }

// ParseActor splits an actor into its kind ("user", "system", "cli",
// "admin") and, for an admin, the operator's id.
func ParseActor(s string) (kind, id string, err error) {
	switch s {
	case ActorUser, ActorSystem, ActorCLI:
		return s, "", nil
	}
	rest, ok := strings.CutPrefix(s, "admin:")
	if !ok || rest == "" || len(rest) > 64 {
		return "", "", ErrBadActor
	}
	for _, r := range rest {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "", "", ErrBadActor
		}
	}
	return "admin", rest, nil
}

// Normalize checks e and trims what is bounded (the user agent, detail
// values); it never drops the event for an over-long user agent.
func (e *Event) Normalize() error {
	if !Known(e.Kind) {
		return ErrBadKind
	}
	switch e.Outcome {
	case OK, Failed, Refused:
	default:
		return ErrBadOutcome
	}
	if _, _, err := ParseActor(e.Actor); err != nil {
		return err
	}
	if len(e.Detail) > MaxDetailEntries {
		return ErrBigDetail
	}
	for k, v := range e.Detail {
		if len(v) > MaxDetailValue {
			e.Detail[k] = truncate(v, MaxDetailValue)
		}
	}
	e.UserAgent = truncate(e.UserAgent, MaxUserAgent)
	if a, err := netip.ParseAddr(e.IP); err == nil {
		e.IP = a.Unmap().String()
	} else {
		e.IP = ""
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n]
}

func utf8Start(b byte) bool { return b < 0x80 || b >= 0xC0 }

// Network is the network a sign-in came from for the new-device rule:
// an IPv4 /24 or an IPv6 /48, "" for an address that does not parse.
func Network(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ""
	}
	a = a.Unmap()
	bits := 48
	if a.Is4() {
		bits = 24
	}
	p, err := a.Prefix(bits)
	if err != nil {
		return ""
	}
	return p.String()
}

// UAFamily reduces a user agent to the family a new-device alert
// compares, so a browser's or app's version bump is not a new device:
// the product names without their versions, in order (e.g.
// "Mozilla AppleWebKit Chrome Safari" or "Herald-iOS CFNetwork Darwin").
func UAFamily(ua string) string {
	var out []string
	depth := 0
	for _, tok := range strings.Fields(ua) {
		opens, closes := strings.Count(tok, "("), strings.Count(tok, ")")
		inComment := depth > 0 || opens > 0
		depth += opens - closes
		if depth < 0 {
			depth = 0
		}
		if inComment {
			continue
		}
		name, _, _ := strings.Cut(tok, "/")
		if name == "" || len(out) == 8 {
			continue
		}
		out = append(out, name)
	}
	return strings.Join(out, " ")
}

// DeviceKey is the (user agent family, network) pair a sign-in is
// compared on: a pair not seen before for the account is a new device.
func DeviceKey(userAgent, ip string) string {
	return UAFamily(userAgent) + "|" + Network(ip)
}

// AlertsFor reports whether a successful sign-in should alert: only when
// the account has signed in before (the very first sign-in of a new
// account does not) and never from this device (its key).
func AlertsFor(signedInBefore, deviceSeen bool) bool {
	return signedInBefore && !deviceSeen
}
