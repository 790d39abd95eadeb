package appstorefake

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Subscription statuses of Get All Subscription Statuses.
const (
	StatusActive       = 1
	StatusExpired      = 2
	StatusBillingRetry = 3
	StatusGrace        = 4
	StatusRevoked      = 5
)

// SetSubscription sets the subscription tx.OriginalTransactionID's status
// (StatusActive, ...), latest transaction and renewal info, as the API
// answers them. tx joins the history, replacing a transaction with the
// same id (so a refund shows in the history).
func (f *Fake) SetSubscription(status int, tx TransactionFields, renewal RenewalFields) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sub := f.subs[tx.OriginalTransactionID]
	if sub == nil {
		sub = &subscription{}
		f.subs[tx.OriginalTransactionID] = sub
		f.order = append(f.order, tx.OriginalTransactionID)
	}
	sub.status, sub.renewal = status, renewal
	sub.record(tx)
}

// AddTransaction adds tx (a renewal, an upgrade) to the history of its
// subscription, leaving its status as it is.
func (f *Fake) AddTransaction(tx TransactionFields) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sub := f.subs[tx.OriginalTransactionID]
	if sub == nil {
		sub = &subscription{status: StatusActive}
		f.subs[tx.OriginalTransactionID] = sub
		f.order = append(f.order, tx.OriginalTransactionID)
	}
	sub.record(tx)
}

func id(tx TransactionFields) string {
	if tx.TransactionID != "" {
		return tx.TransactionID
	}
	return tx.OriginalTransactionID
}

func (s *subscription) record(tx TransactionFields) {
	for i := range s.history {
		if id(s.history[i]) == id(tx) {
			s.history[i] = tx
			return
		}
	}
	s.history = append(s.history, tx)
}

// latest is the subscription's newest transaction (by purchase date).
func (s *subscription) latest() TransactionFields {
	best := s.history[0]
	for _, tx := range s.history[1:] {
		if !tx.PurchaseDate.Before(best.PurchaseDate) {
			best = tx
		}
	}
	return best
}

// find is the original transaction id of the subscription txID belongs
// to; f.mu is held.
func (f *Fake) find(txID string) (string, bool) {
	if _, ok := f.subs[txID]; ok {
		return txID, true
	}
	for orig, sub := range f.subs {
		for _, tx := range sub.history {
			if id(tx) == txID {
				return orig, true
			}
		}
	}
	return "", false
}

func (s *state) handler() http.Handler {
	f := &Fake{state: s, signer: Apple, bundleID: s.bundleID}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /inApps/v1/subscriptions/{transactionId}", f.authorized(f.statuses))
	return mux
}

// authorized checks the bearer JWT as the App Store Server API does:
// ES256 by the in-app purchase key, its kid, iss, aud appstoreconnect-v1,
// bid, and a lifetime of at most an hour. A refusal is 401 without a body.
func (f *Fake) authorized(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f.checkToken(r.Header.Get("Authorization")); err != nil {
			w.Header().Set("X-Fake-Refusal", err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		next(w, r)
	}
}

func (f *Fake) checkToken(auth string) error {
	raw, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		return errors.New("no bearer token")
	}
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(tok *jwt.Token) (any, error) {
		if tok.Header["kid"] != f.keyID {
			return nil, errors.New("unknown kid")
		}
		return &f.key.PublicKey, nil
	},
		jwt.WithValidMethods([]string{"ES256"}),
		jwt.WithAudience("appstoreconnect-v1"),
		jwt.WithIssuer(f.issuerID),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithTimeFunc(f.clock),
	)
	if err != nil || !tok.Valid {
		return err
	}
	if claims["bid"] != f.bundleID {
		return errors.New("wrong bid")
	}
	iat, err1 := claims.GetIssuedAt()
	exp, err2 := claims.GetExpirationTime()
	if err1 != nil || err2 != nil || iat == nil || exp.Sub(iat.Time) > time.Hour {
		return errors.New("a token living over an hour")
	}
	return nil
}

func (f *Fake) writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		f.t.Logf("appstorefake: %v", err)
	}
}

func (f *Fake) notFound(w http.ResponseWriter) {
	f.writeJSON(w, http.StatusNotFound, map[string]any{"errorCode": 4040010, "errorMessage": "Transaction id not found."})
}

// view is f addressed as the API answers (its bundle, its environment).
func (f *Fake) view() *Fake {
	v := *f
	v.environment = f.env
	return &v
}

func (f *Fake) statuses(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	orig, ok := f.find(r.PathValue("transactionId"))
	if !ok {
		f.notFound(w)
		return
	}
	v := f.view()
	// The customer's subscriptions: those of the same account token.
	token := f.subs[orig].latest().AppAccountToken
	type item struct {
		Status                int    `json:"status"`
		OriginalTransactionID string `json:"originalTransactionId"`
		SignedTransactionInfo string `json:"signedTransactionInfo"`
		SignedRenewalInfo     string `json:"signedRenewalInfo"`
	}
	type group struct {
		SubscriptionGroupIdentifier string `json:"subscriptionGroupIdentifier"`
		LastTransactions            []item `json:"lastTransactions"`
	}
	var groups []group
	now := f.now()
	for _, o := range f.order {
		sub := f.subs[o]
		tx := sub.latest()
		if o != orig && (token == "" || tx.AppAccountToken != token) {
			continue
		}
		gid := tx.SubscriptionGroupID
		if gid == "" {
			gid = "21000000"
		}
		it := item{
			Status:                sub.status,
			OriginalTransactionID: o,
			SignedTransactionInfo: v.sign(v.txPayload(tx, now)),
			SignedRenewalInfo:     v.sign(v.renewalPayload(tx, sub.renewal, now)),
		}
		placed := false
		for i := range groups {
			if groups[i].SubscriptionGroupIdentifier == gid {
				groups[i].LastTransactions = append(groups[i].LastTransactions, it)
				placed = true
			}
		}
		if !placed {
			groups = append(groups, group{SubscriptionGroupIdentifier: gid, LastTransactions: []item{it}})
		}
	}
	f.requests++
	f.writeJSON(w, http.StatusOK, map[string]any{
		"environment": f.env,
		"bundleId":    f.bundleID,
		"appAppleId":  f.appAppleID,
		"data":        groups,
	})
}
