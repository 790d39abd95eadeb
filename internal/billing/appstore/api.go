package appstore

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

const (
	// maxAPIBody bounds an answer of the App Store Server API.
	maxAPIBody = 8 << 20
	// MaxHistoryPages bounds the pages of one history read (Apple pages
	// by 20 transactions); a read that stops there has More, and the next
	// goes on from its Revision.
	MaxHistoryPages = 25
	// tokenLifetime is the bearer token's (Apple accepts up to an hour).
	tokenLifetime = 5 * 60
)

// Statuses calls Get All Subscription Statuses
// (GET /inApps/v1/subscriptions/{transactionId}), verifies every signed
// item and returns the observation of the subscription whose original
// transaction id is originalTransactionID, observed at c.Now().
func (c *Client) Statuses(ctx context.Context, originalTransactionID string) (subscriptions.Observation, error) {
	var resp statusResponse
	if err := c.get(ctx, "/inApps/v1/subscriptions/"+url.PathEscape(originalTransactionID), &resp); err != nil {
		return subscriptions.Observation{}, err
	}
	if err := c.checkAddress("statuses", resp.BundleID, resp.Environment); err != nil {
		return subscriptions.Observation{}, err
	}
	var found *subscriptions.Observation
	for _, g := range resp.Data {
		for _, item := range g.LastTransactions {
			tx, err := c.transaction(item.SignedTransactionInfo)
			if err != nil {
				return subscriptions.Observation{}, err
			}
			if tx.OriginalTransactionID != item.OriginalTransactionID {
				return subscriptions.Observation{}, fmt.Errorf("%w: status of %q with a transaction of %q", billing.ErrMalformed, item.OriginalTransactionID, tx.OriginalTransactionID)
			}
			var ri *jwsRenewal
			if item.SignedRenewalInfo != "" {
				if ri, err = c.renewal(item.SignedRenewalInfo, tx.OriginalTransactionID); err != nil {
					return subscriptions.Observation{}, err
				}
			}
			if item.Status < 1 || item.Status > 5 {
				return subscriptions.Observation{}, fmt.Errorf("%w: status %d", billing.ErrMalformed, item.Status)
			}
			if tx.OriginalTransactionID == originalTransactionID {
				obs := fromTransaction(tx, ri, item.Status, c.now())
				found = &obs
			}
		}
	}
	if found == nil {
		return subscriptions.Observation{}, fmt.Errorf("%w: no subscription %q in the statuses", ErrNotFound, originalTransactionID)
	}
	return *found, nil
}

// History is what one read of Get Transaction History gave.
type History struct {
	// Transactions are verified and decoded, oldest change first.
	Transactions []Transaction
	// Revision is where the next read goes on from: it gives only the
	// transactions the App Store changed after these.
	Revision string
	// More: the read stopped at MaxHistoryPages with pages left.
	More bool
}

// RevokedHistory calls Get Transaction History
// (GET /inApps/v2/history/{transactionId}?revoked=true&sort=ASCENDING) of
// the customer transactionID belongs to, from revision ("" from the
// start), following its pages up to MaxHistoryPages: the refunded and
// revoked transactions, in the order the App Store last changed them (a
// refund changes a transaction, so a revision read later gives the
// refunds since). Every signed transaction is verified like the others;
// one that fails fails the read.
func (c *Client) RevokedHistory(ctx context.Context, transactionID, revision string) (History, error) {
	out := History{Revision: revision}
	for page := 0; page < MaxHistoryPages; page++ {
		q := url.Values{"revoked": {"true"}, "sort": {"ASCENDING"}}
		if out.Revision != "" {
			q.Set("revision", out.Revision)
		}
		var resp historyResponse
		if err := c.get(ctx, "/inApps/v2/history/"+url.PathEscape(transactionID)+"?"+q.Encode(), &resp); err != nil {
			return History{}, err
		}
		if err := c.checkAddress("history", resp.BundleID, resp.Environment); err != nil {
			return History{}, err
		}
		for _, s := range resp.SignedTransactions {
			tx, err := c.transaction(s)
			if err != nil {
				return History{}, err
			}
			out.Transactions = append(out.Transactions, tx)
		}
		if resp.Revision == "" {
			return History{}, fmt.Errorf("%w: a history page without its revision", billing.ErrMalformed)
		}
		if !resp.HasMore {
			out.Revision = resp.Revision
			return out, nil
		}
		if resp.Revision == out.Revision {
			return History{}, fmt.Errorf("%w: hasMore without a new revision", billing.ErrMalformed)
		}
		out.Revision = resp.Revision
	}
	out.More = true
	return out, nil
}

// get calls the App Store Server API and decodes its JSON answer into v.
func (c *Client) get(ctx context.Context, path string, v any) error {
	if c.cfg.PrivateKey == nil {
		return ErrNotConfigured
	}
	token, err := c.token()
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return fmt.Errorf("appstore: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %v", billing.ErrUpstream, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody))
	if err != nil {
		return fmt.Errorf("%w: %v", billing.ErrUpstream, err)
	}
	switch {
	case resp.StatusCode == http.StatusOK:
	case resp.StatusCode == http.StatusUnauthorized:
		return ErrUnauthorized
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return fmt.Errorf("%w: %s%s", billing.ErrUpstream, resp.Status, describe(body))
	case resp.StatusCode == http.StatusNotFound:
		return fmt.Errorf("%w: %s%s", ErrNotFound, resp.Status, describe(body))
	default:
		return fmt.Errorf("appstore: %s %s%s", path, resp.Status, describe(body))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%w: %v", billing.ErrMalformed, err)
	}
	return nil
}

func describe(body []byte) string {
	var e apiError
	if json.Unmarshal(body, &e) != nil || e.ErrorCode == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d: %s)", e.ErrorCode, e.ErrorMessage)
}

// token is the App Store Server API's bearer token: an ES256 JWT of the
// in-app purchase key.
func (c *Client) token() (string, error) {
	iat := c.now().Unix()
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": c.cfg.KeyID, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": c.cfg.IssuerID,
		"iat": iat,
		"exp": iat + tokenLifetime,
		"aud": "appstoreconnect-v1",
		"bid": c.cfg.BundleID,
	})
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(claims)
	sig, err := signES256(c.cfg.PrivateKey, input)
	if err != nil {
		return "", err
	}
	return input + "." + sig, nil
}

// signES256 signs input and encodes the signature as JWS does (r || s).
func signES256(key *ecdsa.PrivateKey, input string) (string, error) {
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		return "", errors.New("appstore: signing the token: " + err.Error())
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return base64.RawURLEncoding.EncodeToString(sig), nil
}
