package accounts

import "context"

// Erasure is one row-level step of deleting an account; the store knows
// which rows each one touches (Store.EraseAccount).
type Erasure string

// The steps of deleting an account.
const (
	EraseRefreshTokens     Erasure = "refresh_tokens"        // of its sessions
	EraseSessions          Erasure = "sessions"              // its sessions
	EraseDevices           Erasure = "devices"               // its devices
	EraseOneTimeCodes      Erasure = "one_time_codes"        // its verification and reset codes
	ErasePendingCodes      Erasure = "pending_codes"         // codes waiting to be sent
	EraseCodeSends         Erasure = "code_sends"            // its record of codes sent
	EraseCodeSendLeases    Erasure = "code_send_leases"      // a send in flight
	EraseMessengerLinks    Erasure = "telegram_link_tokens"  // its messenger link tokens
	UnlinkMessenger        Erasure = "telegram_subscribers"  // its chats stay, unlinked
	EraseGrants            Erasure = "entitlements"          // its trial, referral and administrator's grants (their history goes with them)
	UnlinkPurchaseHistory  Erasure = "entitlement_changes"   // its store purchases' history forgets it
	UnlinkPurchases        Erasure = "entitlement_purchases" // its store purchases stay, unlinked, for a restore
	EraseToTombstone       Erasure = "accounts"              // the row keeps its id and deleted_at only
	ScrubEvents            Erasure = "webhook_events"        // its earlier events forget it
	AnnounceRevokedAccount Erasure = "session_revocations"   // every replica forgets its sessions

	// Its second factors (issue 25).
	EraseMFAFactors       Erasure = "mfa_factors"        // its TOTP factors
	EraseMFARecoveryCodes Erasure = "mfa_recovery_codes" // its recovery codes
	EraseMFAFailures      Erasure = "mfa_failures"       // its wrong-code count
	EraseMFAChallenges    Erasure = "mfa_challenges"     // its login challenges

	// Its passkeys (issue 25).
	ErasePasskeys          Erasure = "passkey_credentials" // its WebAuthn credentials
	ErasePasskeyCeremonies Erasure = "passkey_ceremonies"  // its ceremonies begun

	// Its security log (issue 25).
	EraseSecurityLog Erasure = "security_events" // its security events

	// Its provider identities (issue 25): Apple's tokens are revoked
	// (a job each), as Apple requires of an account deleted.
	EraseIdentities Erasure = "identities"

	// Its notification preferences (issue 26).
	EraseNotificationPreferences Erasure = "notification_preferences"
	EraseNotificationSchedule    Erasure = "notification_schedules" // its time zone and quiet hours
	EraseNotificationDigests     Erasure = "notification_digests"   // its digests not yet sent

	// Its in-app inbox (issue 26).
	EraseInbox Erasure = "inbox_items"

	// Its counts against the notification categories' caps (issue 26).
	EraseNotificationCapCounts Erasure = "notification_cap_counts"
	EraseNotificationCapUses   Erasure = "notification_cap_uses" // each send's decision
)

// deletionSteps is what deleting an account does, in order: what hangs
// off the account first (refresh tokens before their sessions), then the
// account's row becomes a tombstone, then its events are scrubbed and the
// end of its sessions announced. Its store purchases stay, unlinked (the
// store still bills them; a new account restores them). Its subscription
// is in its row; the
// referral rewards keep their ids, so a referrer's bonus stays accounted
// for.
var deletionSteps = []Erasure{
	EraseRefreshTokens, EraseSessions, EraseDevices,
	EraseOneTimeCodes, ErasePendingCodes, EraseCodeSends, EraseCodeSendLeases,
	EraseMessengerLinks, UnlinkMessenger,
	EraseMFAFactors, EraseMFARecoveryCodes, EraseMFAFailures, EraseMFAChallenges,
	ErasePasskeys, ErasePasskeyCeremonies, EraseSecurityLog, EraseIdentities,
	EraseNotificationPreferences, EraseNotificationSchedule, EraseNotificationDigests, EraseInbox,
	EraseNotificationCapCounts, EraseNotificationCapUses,
	EraseGrants, UnlinkPurchaseHistory, UnlinkPurchases,
	EraseToTombstone, ScrubEvents, AnnounceRevokedAccount,
}

// DeleteAccount deletes the account in one unit of work of st: it locks
// the live account (Store.LockAccountForDeletion, which holds allow to
// its Standing), takes each step of deletionSteps, and writes its
// user.deleted event after the account's other events were scrubbed of
// it. ErrNotFound when the account is unknown or deleted already.
func DeleteAccount(ctx context.Context, st Store, id string, allow func(Standing) error) error {
	return st.InTx(ctx, func(ctx context.Context) error {
		if err := st.LockAccountForDeletion(ctx, id, allow); err != nil {
			return err
		}
		for _, step := range deletionSteps {
			if err := st.EraseAccount(ctx, id, step); err != nil {
				return err
			}
		}
		return st.Emit(ctx, UserDeleted{UserID: id})
	})
}
