package accounts

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/auth"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/securitylog"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/riverqueue/river"
)

// An email change: the signed-in owner names a new address; a code goes
// to it and a notice, with a link that cancels, to the old one. The change
// happens when the new address's code is typed: the account's email is
// then the new one, verified, every other session ends and the old
// address is told. A password change needs the current password and ends
// every other session too.

// PurposeEmailChange is the code that confirms a new address. Its hash is
// bound to that address (emailChangePurpose), so a code mailed for one
// address never confirms another.
const PurposeEmailChange Purpose = "email_change"

// CancelLinkTTL is how long the old address's cancel link works.
const CancelLinkTTL = 24 * time.Hour

// emailChangePurpose is the purpose a code for address email is hashed
// under.
func emailChangePurpose(email string) Purpose { return PurposeEmailChange + ":" + Purpose(email) }

// RequestEmailChange makes raw the account's pending new address, mails
// its code and queues the notice to the current address. A new request
// replaces a pending one (whose code then no longer works). An account with
// a second factor needs a session at aal2 (MFA_STEP_UP_REQUIRED).
func (s *Service) RequestEmailChange(ctx context.Context, by auth.Principal, raw string) (string, error) {
	email, err := NormalizeEmail(raw)
	if err != nil {
		return "", err
	}
	if err := s.requireStepUp(ctx, by); err != nil {
		return "", err
	}
	acct, err := s.ByID(ctx, by.AccountID)
	if err != nil {
		return "", err
	}
	if acct.Guest {
		return "", apperr.New(apperr.GuestNotAllowed)
	}
	if email == acct.Email {
		return "", apperr.Invalid("email", "differs", "the account's current address")
	}
	if _, err := s.store.AccountByEmail(ctx, email); err == nil {
		return "", apperr.New(apperr.EmailExists)
	} else if !errors.Is(err, storage.ErrNotFound) {
		return "", err
	}
	if err := s.checkSendLimits(ctx, acct.ID, PurposeEmailChange); err != nil {
		return "", err
	}
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.LockAccount(ctx, acct.ID); err != nil {
			return err
		}
		if err := s.store.SetPendingEmail(ctx, acct.ID, email); err != nil {
			return err
		}
		if err := s.store.DeleteCodes(ctx, acct.ID, PurposeEmailChange); err != nil {
			return err
		}
		if err := s.seclog.Record(ctx, securitylog.Event{AccountID: acct.ID, Kind: securitylog.EmailChangeRequested, Outcome: securitylog.OK}); err != nil {
			return err
		}
		return s.store.EnqueueJob(ctx, AccountNoticeArgs{AccountID: acct.ID, Email: mail.EmailChangeRequested, To: acct.Email, NewEmail: email})
	})
	if err != nil {
		return "", err
	}
	return email, s.SendRequestedCode(ctx, acct, PurposeEmailChange)
}

// ConfirmEmailChange checks the new address's code and, when right, makes
// it the account's email: verified, every session but keepSession ended,
// the old address told. It returns the account as its owner sees it.
func (s *Service) ConfirmEmailChange(ctx context.Context, by auth.Principal, code string) (Account, error) {
	if err := s.requireStepUp(ctx, by); err != nil {
		return Account{}, err
	}
	accountID, keepSession := by.AccountID, by.SessionID
	acct, err := s.ByID(ctx, accountID)
	if err != nil {
		return Account{}, err
	}
	pending, err := s.store.PendingEmail(ctx, accountID)
	if err != nil {
		return Account{}, err
	}
	if pending == "" {
		return Account{}, apperr.Newf(apperr.InvalidVerificationCode, "No change of email address is waiting for a code; ask for one.").With("attemptsRemaining", 0)
	}
	want := hashCode(s.codeKey, acct.ID, emailChangePurpose(pending), code)
	matches := func(stored []byte) bool { return hmac.Equal(stored, want) }
	res, err := AttemptCode(ctx, s.store, acct.ID, PurposeEmailChange, matches, CodeEffect{
		NewEmail: pending, OldEmail: acct.Email, KeepSession: keepSession,
		Record: s.recorder(securitylog.Event{AccountID: acct.ID, Kind: securitylog.EmailChangeConfirmed, Outcome: securitylog.OK}),
	})
	if errors.Is(err, storage.ErrConflict) {
		return Account{}, apperr.New(apperr.EmailExists) // taken since it was asked for
	}
	if err != nil {
		return Account{}, err
	}
	if err := res.Err(); err != nil {
		return Account{}, err
	}
	return s.Profile(ctx, accountID)
}

// CancelEmailChange is the old address's link: it drops the pending change
// the token names. It reports false when there was none left to cancel
// (confirmed, replaced or cancelled already); a token that is not the
// server's, or has expired, is VALIDATION_ERROR.
func (s *Service) CancelEmailChange(ctx context.Context, token string) (bool, error) {
	accountID, email, err := ParseCancelToken(s.cancelKey(), token, s.now())
	if err != nil {
		return false, err
	}
	cancelled := false
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.LockAccount(ctx, accountID); err != nil {
			return err
		}
		pending, err := s.store.PendingEmail(ctx, accountID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil // the account is gone: nothing is waiting
		}
		if err != nil || pending != email {
			return err
		}
		if err := s.store.SetPendingEmail(ctx, accountID, ""); err != nil {
			return err
		}
		cancelled = true
		if err := s.store.DeleteCodes(ctx, accountID, PurposeEmailChange); err != nil {
			return err
		}
		// The old address's link: no session, so no client but the link's.
		return s.seclog.Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.EmailChangeCancelled, Outcome: securitylog.OK})
	})
	return cancelled, err
}

// ChangePassword sets a new password for the signed-in owner who knows the
// current one, ends every other session (keepSession stays) and tells the
// account's address. It returns how many sessions ended. An account with
// a second factor needs a session at aal2 too (MFA_STEP_UP_REQUIRED).
func (s *Service) ChangePassword(ctx context.Context, by auth.Principal, current, next string) (int, error) {
	accountID, keepSession := by.AccountID, by.SessionID
	if err := s.validateNewPassword(ctx, next); err != nil {
		return 0, err
	}
	if err := s.requireStepUp(ctx, by); err != nil {
		return 0, err
	}
	if current == next {
		return 0, apperr.Invalid("newPassword", "differs", "the current password")
	}
	acct, err := s.ByID(ctx, accountID)
	if err != nil {
		return 0, err
	}
	if acct.Guest {
		return 0, apperr.New(apperr.GuestNotAllowed)
	}
	if err := s.confirmPassword(ctx, accountID, current); err != nil {
		return 0, err
	}
	hash, err := s.hasher.Hash(ctx, next)
	if err != nil {
		return 0, err
	}
	var ended int
	err = s.store.InTx(ctx, func(ctx context.Context) error {
		if err := s.store.UpdatePasswordHash(ctx, accountID, hash); err != nil {
			return err
		}
		if ended, err = s.store.RevokeOtherSessions(ctx, accountID, keepSession); err != nil {
			return err
		}
		if err := s.store.Emit(ctx, UserPasswordChanged{UserID: accountID, SessionsEnded: ended}); err != nil {
			return err
		}
		if err := s.seclog.Record(ctx, securitylog.Event{AccountID: accountID, Kind: securitylog.PasswordChanged, Outcome: securitylog.OK,
			Detail: map[string]string{"sessionsEnded": strconv.Itoa(ended)}}); err != nil {
			return err
		}
		return s.store.EnqueueJob(ctx, AccountNoticeArgs{AccountID: accountID, Email: mail.EmailPasswordChanged, To: acct.Email})
	})
	return ended, err
}

// applyEmailChange is a right email-change code's effect, inside its
// transaction.
func applyEmailChange(ctx context.Context, st Store, accountID string, e CodeEffect) error {
	if err := st.ChangeEmail(ctx, accountID, e.NewEmail); err != nil {
		return err
	}
	ended, err := st.RevokeOtherSessions(ctx, accountID, e.KeepSession)
	if err != nil {
		return err
	}
	if err := st.Emit(ctx, UserEmailChanged{UserID: accountID, Email: e.NewEmail, PreviousEmail: wireAddress(e.OldEmail), SessionsEnded: ended}); err != nil {
		return err
	}
	return st.EnqueueJob(ctx, AccountNoticeArgs{AccountID: accountID, Email: mail.EmailChanged, To: e.OldEmail, NewEmail: e.NewEmail})
}

// The cancel link's token: the account, the pending address and the
// expiry, with a keyed MAC. It needs no row: cancelling clears the pending
// address, after which the token names nothing. It is a link token
// (SignLinkToken) of two fields.

// LinkKey is the MAC key of the link tokens of purpose (each purpose has
// its own, so that one link's token never passes for another's), derived
// from the code key so that a token can never pass for a code's hash.
func (s *Service) LinkKey(purpose string) []byte {
	m := hmac.New(sha256.New, s.codeKey)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// cancelKey is the MAC key of cancel tokens.
func (s *Service) cancelKey() []byte { return s.LinkKey("email-change-cancel") }

// SignCancelToken returns the token that cancels the change of accountID's
// email to email until expires.
func SignCancelToken(key []byte, accountID, email string, expires time.Time) string {
	return SignLinkToken(key, expires, accountID, email)
}

// ParseCancelToken checks a cancel token's MAC and expiry and returns what
// it names; VALIDATION_ERROR (field token) for anything else.
func ParseCancelToken(key []byte, token string, now time.Time) (accountID, email string, err error) {
	f, err := ParseLinkToken(key, token, now, 2)
	if err != nil {
		return "", "", err
	}
	return f[0], f[1], nil
}

// SignLinkToken returns a link's token: the fields (none empty, none with
// a line break) and the expiry, with a keyed MAC. It needs no row; what it
// names says whether it still does anything.
func SignLinkToken(key []byte, expires time.Time, fields ...string) string {
	payload := strings.Join(fields, "\n") + "\n" + strconv.FormatInt(expires.Unix(), 10)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(payload))
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(payload)) + "." + enc.EncodeToString(m.Sum(nil))
}

// ParseLinkToken checks a link token's MAC and expiry and returns its n
// fields; VALIDATION_ERROR (field token) for anything else.
func ParseLinkToken(key []byte, token string, now time.Time, n int) ([]string, error) {
	bad := func(constraint string) ([]string, error) {
		return nil, apperr.Invalid("token", constraint, "")
	}
	p64, m64, ok := strings.Cut(token, ".")
	if !ok || len(token) > 1024 {
		return bad("format")
	}
	enc := base64.RawURLEncoding
	payload, err1 := enc.DecodeString(p64)
	mac, err2 := enc.DecodeString(m64)
	if err1 != nil || err2 != nil {
		return bad("format")
	}
	m := hmac.New(sha256.New, key)
	m.Write(payload)
	if !hmac.Equal(mac, m.Sum(nil)) {
		return bad("signature")
	}
	parts := strings.Split(string(payload), "\n")
	if len(parts) != n+1 || slices.Contains(parts[:n], "") {
		return bad("format")
	}
	exp, err := strconv.ParseInt(parts[n], 10, 64)
	if err != nil {
		return bad("format")
	}
	if !now.Before(time.Unix(exp, 0)) {
		return bad("expired")
	}
	return parts[:n], nil
}

// AccountNoticeArgs is the durable job that emails an account's security
// notice (mail.AccountNotices) to an address: the old one of an email
// change, or the account's own.
type AccountNoticeArgs struct {
	AccountID string `json:"account_id"`
	Email     string `json:"email"` // the template: mail.EmailChangeRequested, ...
	To        string `json:"to"`
	NewEmail  string `json:"new_email,omitempty"`
}

func (AccountNoticeArgs) Kind() string { return "account_notice" }

// InsertOpts puts notices on the code emails' queue.
func (AccountNoticeArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueEmail} }

// AccountNoticeWorker works AccountNoticeArgs jobs: a failed send is
// retried by River with backoff.
type AccountNoticeWorker struct {
	river.WorkerDefaults[AccountNoticeArgs]
	Service *Service
}

// Timeout bounds one attempt.
func (w *AccountNoticeWorker) Timeout(*river.Job[AccountNoticeArgs]) time.Duration {
	return w.Service.cfg.SendTimeout + 10*time.Second
}

func (w *AccountNoticeWorker) Work(ctx context.Context, job *river.Job[AccountNoticeArgs]) error {
	return w.Service.sendNotice(ctx, job.Args)
}

func (s *Service) sendNotice(ctx context.Context, args AccountNoticeArgs) error {
	acct, err := s.store.AccountByID(ctx, args.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return river.JobCancel(fmt.Errorf("account %s no longer exists", args.AccountID))
	}
	if err != nil {
		return err
	}
	if IsGuestPlaceholder(args.To) {
		return nil // a former guest's placeholder: no one reads it
	}
	v := mail.Vars{NewEmail: args.NewEmail}
	if args.Email == mail.EmailChangeRequested && s.cfg.CancelEmailChangeURL != "" {
		tok := SignCancelToken(s.cancelKey(), acct.ID, args.NewEmail, s.now().Add(CancelLinkTTL))
		v.CancelURL = s.cfg.CancelEmailChangeURL + "?token=" + url.QueryEscape(tok)
	}
	msg, err := s.emails.Render(args.Email, acct.Locale, args.To, v)
	if err != nil {
		return river.JobCancel(err) // a template error does not heal by retrying
	}
	sendCtx, cancel := context.WithTimeout(ctx, s.cfg.SendTimeout)
	defer cancel()
	if err := s.mailer.Send(sendCtx, msg); err != nil {
		s.logger.WarnContext(ctx, "account notice not sent", "account_id", acct.ID, "email", args.Email, "err", err)
		return fmt.Errorf("send %s: %w", args.Email, err)
	}
	return nil
}
