package accounts

import (
	"context"
)

// AttemptCode checks a typed code (matches) against the account's codes
// of purpose p, in one unit of work of st holding the account's row lock
// (so that it serializes with RecordCodeSent): CheckCode decides; a wrong
// code spends one attempt of the live code; a right one consumes the live
// and pending codes and applies effect, with its events.
func AttemptCode(ctx context.Context, st Store, accountID string, p Purpose, matches func(hash []byte) bool, effect CodeEffect) (CodeCheck, error) {
	var res CodeCheck
	err := st.InTx(ctx, func(ctx context.Context) error {
		if err := st.LockAccount(ctx, accountID); err != nil {
			return err
		}
		live, pending, err := st.StoredCodes(ctx, accountID, p)
		if err != nil {
			return err
		}
		res = CheckCode(CodeState{Now: st.TxTime(ctx), Live: live, Pending: pending}, matches)
		switch res.Outcome {
		case CodeWrong:
			return st.SetCodeAttempts(ctx, accountID, p, res.AttemptsLeft)
		case CodeMatched:
			if err := st.DeleteCodes(ctx, accountID, p); err != nil {
				return err
			}
			return applyCodeEffect(ctx, st, accountID, effect)
		}
		return nil
	})
	return res, err
}

// applyCodeEffect is what a right code does, inside its transaction.
func applyCodeEffect(ctx context.Context, st Store, accountID string, e CodeEffect) error {
	if e.Record != nil {
		if err := e.Record(ctx); err != nil {
			return err
		}
	}
	if e.NewEmail != "" {
		if err := applyEmailChange(ctx, st, accountID, e); err != nil {
			return err
		}
	}
	if e.MarkVerified {
		changed, err := st.MarkVerified(ctx, accountID)
		if err != nil {
			return err
		}
		if changed {
			if err := st.Emit(ctx, UserVerified{UserID: accountID, EmailVerified: true}); err != nil {
				return err
			}
		}
	}
	if e.NewPasswordHash != "" {
		if err := st.UpdatePasswordHash(ctx, accountID, e.NewPasswordHash); err != nil {
			return err
		}
		if err := st.Emit(ctx, UserPasswordReset{UserID: accountID, SessionsRevoked: e.RevokeSessions}); err != nil {
			return err
		}
	}
	if e.RevokeSessions {
		return st.RevokeAllSessions(ctx, accountID)
	}
	return nil
}
