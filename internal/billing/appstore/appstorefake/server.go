package appstorefake

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
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
// same id (so a refund shows in the history), signed there by f's signer
// (a view As(ForeignKey) puts a forged transaction in the history).
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
	f.record(sub, tx)
}

// AddTransaction adds tx (a renewal, an upgrade) to the history of its
// subscription, leaving its status as it is; a transaction with a
// RevocationDate is a refund or revocation of that period the statuses do
// not show once a later transaction exists. The history signs it with f's
// signer.
func (f *Fake) AddTransaction(tx TransactionFields) {
	f.mu.Lock()
	defer f.mu.Unlock()
	sub := f.subs[tx.OriginalTransactionID]
	if sub == nil {
		sub = &subscription{status: StatusActive}
		f.subs[tx.OriginalTransactionID] = sub
		f.order = append(f.order, tx.OriginalTransactionID)
	}
	f.record(sub, tx)
}

func id(tx TransactionFields) string {
	if tx.TransactionID != "" {
		return tx.TransactionID
	}
	return tx.OriginalTransactionID
}

// record puts tx in sub's history as changed now; f.mu is held.
func (f *Fake) record(sub *subscription, tx TransactionFields) {
	f.seq++
	m := txMeta{signer: f.signer, modified: f.seq}
	for i := range sub.history {
		if id(sub.history[i]) == id(tx) {
			sub.history[i], sub.meta[i] = tx, m
			return
		}
	}
	sub.history = append(sub.history, tx)
	sub.meta = append(sub.meta, m)
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
	mux.HandleFunc("GET /inApps/v2/history/{transactionId}", f.authorized(f.history))
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

// history serves Get Transaction History (v2): the customer's
// transactions (those of the subscriptions with the same account token)
// in the order they last changed, ASCENDING (the default; DESCENDING is
// refused by the fake), filtered by revoked=true|false, a page of
// pageSize after the revision given. The revision ("rev-N") names the
// last change a page holds, so a later read from it gives only what
// changed since, a refund included.
func (f *Fake) history(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	orig, ok := f.find(r.PathValue("transactionId"))
	if !ok {
		f.notFound(w)
		return
	}
	q := r.URL.Query()
	if sort := q.Get("sort"); sort != "" && sort != "ASCENDING" {
		f.writeJSON(w, http.StatusBadRequest, map[string]any{"errorCode": 4000000, "errorMessage": "appstorefake: only sort=ASCENDING"})
		return
	}
	after := 0
	if rev := q.Get("revision"); rev != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(rev, "rev-"))
		if err != nil || n < 0 || !strings.HasPrefix(rev, "rev-") {
			f.writeJSON(w, http.StatusBadRequest, map[string]any{"errorCode": 4000005, "errorMessage": "Invalid revision."})
			return
		}
		after = n
	}
	type entry struct {
		tx TransactionFields
		m  txMeta
	}
	token := f.subs[orig].latest().AppAccountToken
	var all []entry
	for _, o := range f.order {
		sub := f.subs[o]
		if o != orig && (token == "" || sub.latest().AppAccountToken != token) {
			continue
		}
		for i, tx := range sub.history {
			revoked := !tx.RevocationDate.IsZero()
			if (q.Get("revoked") == "true" && !revoked) || (q.Get("revoked") == "false" && revoked) || sub.meta[i].modified <= after {
				continue
			}
			all = append(all, entry{tx, sub.meta[i]})
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return a.m.modified - b.m.modified })
	page := all[:min(len(all), f.pageSize)]
	last := after
	signed := []string{}
	v := f.view()
	now := f.now()
	for _, e := range page {
		signed = append(signed, v.As(e.m.signer).sign(v.txPayload(e.tx, now)))
		last = e.m.modified
	}
	f.requests++
	f.pages++
	f.writeJSON(w, http.StatusOK, map[string]any{
		"revision":           "rev-" + strconv.Itoa(last),
		"hasMore":            len(all) > len(page),
		"bundleId":           f.bundleID,
		"appAppleId":         f.appAppleID,
		"environment":        f.env,
		"signedTransactions": signed,
	})
}
