package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/subscriptions"
	"github.com/riverqueue/river"
)

// Inbound is a store's notification, verified by its adapter, as the job
// that works it needs it.
type Inbound struct {
	Source subscriptions.Source `json:"source"`
	// ID is the store's id of the notification (App Store
	// notificationUUID, Pub/Sub messageId, Stripe event id): a repeat
	// with the same ID changes nothing.
	ID string `json:"id"`
	// Kind is what the store calls it ("DID_RENEW/BILLING_RECOVERY",
	// "subscription:4", "invoice.paid"); the history's cause.
	Kind string `json:"kind"`
	// Observation is the state the notification carries itself; nil when
	// the store's API must be read (Refresh) or when it changes nothing.
	Observation *subscriptions.Observation `json:"observation,omitempty"`
	// Refresh is the purchase whose state the store's API must give (Play
	// always; Stripe for invoices and completed checkouts).
	Refresh string `json:"refresh,omitempty"`
	// AccountHint names the account when the state read will not (a
	// Stripe checkout's client_reference_id).
	AccountHint string `json:"accountHint,omitempty"`
	// Extra is the adapter's own detail for the refresh (Play's
	// notification type and voided purchase, for revocations).
	Extra json.RawMessage `json:"extra,omitempty"`
	// Revocation is the refund or revocation of one transaction the
	// notification tells of (the App Store's REFUND and REVOKE). When its
	// period ended before the purchase's current one it is recorded as a
	// refund of an earlier period (RecordPastRevocation, as the
	// reconciliation does: once by its transaction id, the access
	// unchanged) and its own word is not the purchase's state.
	Revocation *subscriptions.PastRevocation `json:"revocation,omitempty"`
}

// GooglePlayProof is what an app posts after a Google Play purchase or
// restore, as the doors pass it to Prove and the Google Play channel reads
// it.
type GooglePlayProof struct {
	PurchaseToken string `json:"purchaseToken"`
	ProductID     string `json:"productId"`
}

// Channel is one store, built from its adapter by the application: what
// Herald asks of it. A nil func is something the store does not do.
type Channel struct {
	// Verify checks a notification's signature or token and decodes it.
	// ErrMalformed, ErrForged, ErrMisaddressed refuse it.
	Verify func(ctx context.Context, header func(string) string, body []byte) (Inbound, error)
	// Read asks the store's API for a purchase's state now; extra is the
	// Inbound's Extra ("" outside a notification).
	Read func(ctx context.Context, externalID string, extra json.RawMessage) (subscriptions.Observation, error)
	// Prove verifies what an app posts after a purchase or a restore: the
	// App Store's StoreKit 2 signed transaction as a JSON string, Google
	// Play's a GooglePlayProof.
	Prove func(ctx context.Context, proof json.RawMessage) (subscriptions.Observation, error)
	// Settled runs after a purchase's state was recorded (Play's
	// acknowledgement); an error retries the job. obs is the store's
	// word read just before (Read or Prove), so Settled need not read the
	// purchase again.
	Settled func(ctx context.Context, obs subscriptions.Observation, extra json.RawMessage) error
	// Revocations reads the refunds and revocations of the purchase's
	// transactions the store changed after cursor ("" from the start): the
	// App Store's Get Transaction History, where a refund of an earlier
	// period shows that the state (Read) does not. It returns them and the
	// cursor the next read goes on from.
	Revocations func(ctx context.Context, externalID, cursor string) ([]subscriptions.PastRevocation, string, error)
	// Checkout starts a purchase on the web for the account (Stripe
	// Checkout) and returns the URL to send the user to; customer is the
	// account's customer in the store ("" when none yet).
	Checkout func(ctx context.Context, in CheckoutRequest) (string, error)
	// Portal returns the URL of the store's page where the customer
	// manages their subscription.
	Portal func(ctx context.Context, customer string) (string, error)
}

// CheckoutRequest is what a web purchase starts from.
type CheckoutRequest struct {
	AccountID string
	Email     string
	Customer  string
	ProductID string
}

// Notification is one row of the inbox.
type Notification struct {
	Source      subscriptions.Source
	ID          string
	Kind        string
	Payload     []byte
	Inbound     []byte
	ReceivedAt  time.Time
	ProcessedAt *time.Time
	Outcome     string
}

// Store is the persistence billing needs; sqlstore implements it.
type Store interface {
	subscriptions.Ledger
	// SaveNotification keeps a notification (inside InTx); false when one
	// with its source and id is kept already.
	SaveNotification(ctx context.Context, n Notification) (bool, error)
	// BillingNotification reads one; ErrNotFound when unknown.
	BillingNotification(ctx context.Context, source subscriptions.Source, id string) (Notification, error)
	// FinishNotification records what working it did.
	FinishNotification(ctx context.Context, source subscriptions.Source, id, outcome string) error
	// LapsedEntitlements, TrialsEnding, MarkReminded: the sweep's reads.
	LapsedEntitlements(ctx context.Context, now time.Time, limit int) ([]subscriptions.Entitlement, error)
	TrialsEnding(ctx context.Context, now, before time.Time, limit int) ([]subscriptions.Entitlement, error)
	MarkReminded(ctx context.Context, id string) error
	// LiveStoreEntitlements are up to limit entitlements of the stores in
	// a state a store can still change, after the id afterID.
	LiveStoreEntitlements(ctx context.Context, afterID string, limit int) ([]subscriptions.Entitlement, error)
	// EntitlementByCustomer is the account's newest entitlement of source
	// with a store customer; ErrNotFound when none.
	EntitlementByCustomer(ctx context.Context, source subscriptions.Source, accountID string) (subscriptions.Entitlement, error)
	// HistoryRevision is where the read of the entitlement's history in
	// its store got to ("" when never read); SaveHistoryRevision keeps it.
	HistoryRevision(ctx context.Context, entitlementID string) (string, error)
	SaveHistoryRevision(ctx context.Context, entitlementID, revision string) error
}

// Config is the billing service's settings.
type Config struct {
	// Products maps each store's product ids to plans.
	Products Products
	// Channels are the connected stores.
	Channels map[subscriptions.Source]Channel
	Logger   *slog.Logger
	// Now is the clock (default time.Now in UTC).
	Now func() time.Time
}

// Service takes in the stores' word.
type Service struct {
	store  Store
	plans  *subscriptions.Service
	cfg    Config
	logger *slog.Logger
}

// NewService returns the service.
func NewService(store Store, plans *subscriptions.Service, cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = func() time.Time { return time.Now().UTC() }
	}
	if cfg.Channels == nil {
		cfg.Channels = map[subscriptions.Source]Channel{}
	}
	return &Service{store: store, plans: plans, cfg: cfg, logger: cfg.Logger}
}

// Connected reports whether the store is connected.
func (s *Service) Connected(source subscriptions.Source) bool {
	_, ok := s.cfg.Channels[source]
	return ok
}

// Channel is a connected store's channel; BILLING_NOT_CONFIGURED when the
// store is not connected.
func (s *Service) channel(source subscriptions.Source) (Channel, error) {
	ch, ok := s.cfg.Channels[source]
	if !ok {
		return Channel{}, apperr.Newf(apperr.BillingNotConfigured, "%s is not connected to this server.", source)
	}
	return ch, nil
}

// Refusal is the catalogue error of an adapter's refusal; other errors
// pass unchanged.
func Refusal(err error) error {
	switch {
	case errors.Is(err, ErrMalformed):
		// VALIDATION_ERROR's details, as every door gives them: the body
		// as a whole is at fault.
		what := strings.TrimPrefix(err.Error(), ErrMalformed.Error()+": ")
		return apperr.Newf(apperr.ValidationError, "The body is not the store's format: %s", what).
			With("field", "body").With("constraint", "the store's format").With("received", what)
	case errors.Is(err, ErrForged):
		return apperr.New(apperr.BillingSignatureInvalid)
	case errors.Is(err, ErrMisaddressed):
		return apperr.New(apperr.BillingWrongApp)
	case errors.Is(err, ErrUnknownPurchase):
		return apperr.New(apperr.PurchaseNotFound)
	case errors.Is(err, ErrUpstream):
		return apperr.Newf(apperr.UpstreamError, "The store's API could not be reached; try again later.").WithRetryAfter(30)
	}
	return err
}

// ErrUnknownPurchase: the store's API knows no such purchase (a client's
// bad token); the door answers PURCHASE_NOT_FOUND.
var ErrUnknownPurchase = errors.New("billing: the store knows no such purchase")

// IngestArgs is the job that works one kept notification.
type IngestArgs struct {
	Source subscriptions.Source `json:"source"`
	ID     string               `json:"id"`
}

func (IngestArgs) Kind() string { return "billing_ingest" }

// InsertOpts gives ingestion its own queue-independent retry budget.
func (IngestArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{MaxAttempts: 25} }

// Receive verifies a store's notification and keeps it, with the job that
// works it, before the store is answered: a repeat changes nothing, a
// refusal keeps nothing (the door answers 4xx, so the store stops), and a
// failure to keep it is the store's to retry (5xx).
func (s *Service) Receive(ctx context.Context, source subscriptions.Source, header func(string) string, body []byte) error {
	ch, err := s.channel(source)
	if err != nil {
		return err
	}
	in, err := ch.Verify(ctx, header, body)
	if err != nil {
		s.logger.Warn("store notification refused", "source", source, "err", err)
		return Refusal(err)
	}
	in.Source = source
	inbound, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return s.store.InTx(ctx, func(ctx context.Context) error {
		fresh, err := s.store.SaveNotification(ctx, Notification{Source: source, ID: in.ID, Kind: in.Kind, Payload: body, Inbound: inbound})
		if err != nil || !fresh {
			return err
		}
		return s.store.EnqueueJob(ctx, IngestArgs{Source: source, ID: in.ID})
	})
}

// Ingest works a kept notification: the state it carries, or the
// store's API read for it, recorded against the purchase's entitlement.
// A product no plan is mapped to is kept as the outcome, not retried.
func (s *Service) Ingest(ctx context.Context, source subscriptions.Source, id string) error {
	n, err := s.store.BillingNotification(ctx, source, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if n.ProcessedAt != nil {
		return nil
	}
	var in Inbound
	if err := json.Unmarshal(n.Inbound, &in); err != nil {
		return s.store.FinishNotification(ctx, source, id, "unreadable: "+err.Error())
	}
	outcome, err := s.work(ctx, in)
	if err != nil {
		return err
	}
	return s.store.FinishNotification(ctx, source, id, outcome)
}

func (s *Service) work(ctx context.Context, in Inbound) (string, error) {
	ch, err := s.channel(in.Source)
	if err != nil {
		return "", err // a store disconnected since: retried until it is back
	}
	obs := in.Observation
	read := false
	if in.Refresh != "" {
		if ch.Read == nil {
			return "ignored: no store API", nil
		}
		word, err := ch.Read(ctx, in.Refresh, in.Extra)
		switch {
		case err == nil:
			obs, read = &word, true
		case errors.Is(err, ErrUnknownPurchase) && obs != nil:
			// The API does not know it yet: the notification's own word.
		case errors.Is(err, ErrUnknownPurchase) || errors.Is(err, ErrIgnore):
			return "ignored: " + err.Error(), nil
		default:
			return "", err
		}
	}
	if obs == nil {
		return "ignored", nil
	}
	if obs.AccountHint == "" {
		obs.AccountHint = in.AccountHint
	}
	if in.Revocation != nil && !read {
		// The notification's own word would be the state: a refund of an
		// earlier period is recorded as one, and the purchase's current
		// period stays as it is.
		earlier, recorded, err := subscriptions.RecordPastRevocation(ctx, s.store, in.Source, obs.ExternalID, *in.Revocation)
		if err != nil {
			return "", err
		}
		if earlier {
			return pastOutcome(in.Revocation.TransactionID, recorded), nil
		}
	}
	e, err := s.recordOnce(ctx, *obs, string(in.Source)+":"+in.Kind)
	if err != nil {
		if apperr.Is(err, apperr.ProductUnknown) {
			return "refused: " + err.Error(), nil
		}
		return "", err
	}
	outcome := fmt.Sprintf("recorded: %s %s", e.ID, e.State)
	if in.Revocation != nil && read {
		// The store's state now is recorded; the refund the notification
		// tells of, when of an earlier period, is recorded as one.
		earlier, recorded, err := subscriptions.RecordPastRevocation(ctx, s.store, in.Source, obs.ExternalID, *in.Revocation)
		if err != nil {
			return "", err
		}
		if earlier {
			outcome = pastOutcome(in.Revocation.TransactionID, recorded)
		}
	}
	if ch.Settled != nil {
		if err := ch.Settled(ctx, *obs, in.Extra); err != nil {
			return "", err
		}
	}
	return outcome, nil
}

// pastOutcome is the outcome of a notification of a refund of an earlier
// period.
func pastOutcome(transactionID string, recorded bool) string {
	if recorded {
		return "recorded: past refund of " + transactionID
	}
	return "ignored: past refund of " + transactionID + " recorded already"
}

// ErrIgnore: a read found nothing to record (a pending purchase).
var ErrIgnore = errors.New("nothing to record")

// recordOnce is record in a unit of work of its own, done again once when
// another replica created the purchase's entitlement between this one's
// read and its insert (two notifications of a new purchase worked at
// once): the second time it reads that row and goes on from it.
func (s *Service) recordOnce(ctx context.Context, obs subscriptions.Observation, cause string) (subscriptions.Entitlement, error) {
	e, err := s.record(ctx, obs, cause)
	if errors.Is(err, storage.ErrConflict) {
		s.logger.Info("a purchase's entitlement was created at the same time elsewhere; recording again over it", "source", obs.Source)
		e, err = s.record(ctx, obs, cause)
	}
	return e, err
}

// record plans obs by its product and records it.
func (s *Service) record(ctx context.Context, obs subscriptions.Observation, cause string) (subscriptions.Entitlement, error) {
	plan, ok := s.cfg.Products.Plan(obs.Source, obs.ProductID)
	if !ok {
		return subscriptions.Entitlement{}, apperr.Newf(apperr.ProductUnknown, "The product %q of %s is not mapped to a plan (HERALD_BILLING_PRODUCTS).", obs.ProductID, obs.Source).
			With("productId", obs.ProductID).With("source", string(obs.Source))
	}
	return subscriptions.Record(ctx, s.store, obs, plan, cause, s.plans.DeviceLimit)
}

// Prove records what an app posts after a purchase or a restore for the
// signed-in account: the store's signed word (or its API's answer) on the
// purchase. A purchase that names another account is
// PURCHASE_OWNED_ELSEWHERE; one that names none, or was kept unlinked,
// becomes the caller's (a restore).
func (s *Service) Prove(ctx context.Context, source subscriptions.Source, accountID string, proof json.RawMessage) (subscriptions.Entitlement, error) {
	ch, err := s.channel(source)
	if err != nil {
		return subscriptions.Entitlement{}, err
	}
	if ch.Prove == nil {
		return subscriptions.Entitlement{}, apperr.Newf(apperr.BillingNotConfigured, "%s takes no purchases from apps.", source)
	}
	obs, err := ch.Prove(ctx, proof)
	if errors.Is(err, ErrIgnore) {
		return subscriptions.Entitlement{}, apperr.Newf(apperr.PaymentFailed, "The purchase is pending; it is recorded when the store completes it.")
	}
	if err != nil {
		return subscriptions.Entitlement{}, Refusal(err)
	}
	if obs.AccountHint != "" && obs.AccountHint != accountID {
		return subscriptions.Entitlement{}, apperr.New(apperr.PurchaseOwnedElsewhere)
	}
	obs.AccountHint = accountID
	var e subscriptions.Entitlement
	keep := func(ctx context.Context) error {
		var err error
		if e, err = s.record(ctx, obs, "purchase"); err != nil || ch.Settled == nil {
			return err
		}
		// Settling (Play's acknowledgement, without which Play refunds the
		// purchase after three days) is tried below at once; the job, kept
		// with the purchase, retries it until the store takes it.
		return s.store.EnqueueJob(ctx, SettleArgs{Source: source, ExternalID: obs.ExternalID})
	}
	err = s.store.InTx(ctx, keep)
	if errors.Is(err, storage.ErrConflict) {
		// The store's notification created the purchase's entitlement on
		// another replica at the same moment: once more, over its row.
		err = s.store.InTx(ctx, keep)
	}
	if err != nil {
		return subscriptions.Entitlement{}, err
	}
	if e.AccountID == "" || e.AccountID != accountID {
		e, err = subscriptions.Link(ctx, s.store, source, obs.ExternalID, accountID, s.plans.DeviceLimit)
		if errors.Is(err, storage.ErrConflict) {
			return subscriptions.Entitlement{}, apperr.New(apperr.PurchaseOwnedElsewhere)
		}
		if err != nil {
			return subscriptions.Entitlement{}, err
		}
	}
	if ch.Settled != nil {
		if err := ch.Settled(ctx, obs, nil); err != nil {
			s.logger.Warn("purchase recorded, settling it failed; its job retries", "source", source, "err", err)
		}
	}
	return e, nil
}

// Reconcile reads each of the account's store purchases from its store
// and records what the store says, correcting a missed notification. It
// returns how many it read.
func (s *Service) Reconcile(ctx context.Context, accountID string) (int, error) {
	ents, err := s.store.AccountEntitlements(ctx, accountID)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if !e.Source.Store() {
			continue
		}
		if err := s.reconcileOne(ctx, e, true); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// reconcileOne reads one purchase from its store, and with history the
// refunds of its earlier periods; a store not connected or without an API
// is skipped.
func (s *Service) reconcileOne(ctx context.Context, e subscriptions.Entitlement, history bool) error {
	ch, ok := s.cfg.Channels[e.Source]
	if !ok || ch.Read == nil {
		return nil
	}
	obs, err := ch.Read(ctx, e.ExternalID, nil)
	if errors.Is(err, ErrUnknownPurchase) || errors.Is(err, ErrIgnore) {
		return nil
	}
	if err != nil {
		return Refusal(err)
	}
	if obs.AccountHint == "" {
		obs.AccountHint = e.AccountID
	}
	_, err = s.record(ctx, obs, "reconcile")
	if apperr.Is(err, apperr.ProductUnknown) {
		s.logger.Warn("reconcile: product not mapped", "source", e.Source, "product", obs.ProductID)
		return nil
	}
	if err != nil {
		return err
	}
	// A purchase the store still wants settled (a Play purchase not
	// acknowledged: its settle job gave up, or was never kept) is settled
	// now; a failure waits for the next run.
	if ch.Settled != nil {
		if err := ch.Settled(ctx, obs, nil); err != nil {
			s.logger.Warn("reconcile: settling the purchase failed", "entitlement", e.ID, "source", e.Source, "err", err)
		}
	}
	if history && ch.Revocations != nil {
		return s.pastRevocations(ctx, ch, e)
	}
	return nil
}

// pastRevocations reads the refunds and revocations of the purchase's
// transactions its store changed since the last read, records those of
// earlier periods Herald has not recorded (RecordPastRevocation: once by
// the transaction id, the access unchanged), and keeps where the read got
// to. A read that fails records nothing and keeps the cursor where it
// was.
func (s *Service) pastRevocations(ctx context.Context, ch Channel, e subscriptions.Entitlement) error {
	cursor, err := s.store.HistoryRevision(ctx, e.ID)
	if err != nil {
		return err
	}
	revs, next, err := ch.Revocations(ctx, e.ExternalID, cursor)
	if errors.Is(err, ErrUnknownPurchase) {
		return nil
	}
	if errors.Is(err, ErrForged) || errors.Is(err, ErrMalformed) || errors.Is(err, ErrMisaddressed) {
		// The store's answer is at fault, not whoever asked for the read.
		s.logger.Warn("reconcile: the store's history refused", "entitlement", e.ID, "source", e.Source, "err", err)
		return apperr.Newf(apperr.UpstreamError, "The store's transaction history did not verify; nothing was recorded from it.")
	}
	if err != nil {
		return Refusal(err)
	}
	for _, r := range revs {
		_, recorded, err := subscriptions.RecordPastRevocation(ctx, s.store, e.Source, e.ExternalID, r)
		if err != nil {
			return err
		}
		if recorded {
			s.logger.Info("reconcile: a refund of an earlier period recorded", "entitlement", e.ID, "source", e.Source, "transaction", r.TransactionID)
		}
	}
	if next == "" || next == cursor {
		return nil
	}
	return s.store.SaveHistoryRevision(ctx, e.ID, next)
}

// SettleArgs is the job that settles a purchase an app posted (Play's
// acknowledgement) until the store takes it.
type SettleArgs struct {
	Source     subscriptions.Source `json:"source"`
	ExternalID string               `json:"externalId"`
}

func (SettleArgs) Kind() string { return "billing_settle" }

// InsertOpts: Play refunds a purchase not acknowledged within three days;
// with the default retry policy (doubling up to 10 minutes) 450 attempts
// last that long. The reconciliation settles what is left after. An app
// that posts its purchase again (a restore at each start) adds no job
// within the hour.
func (SettleArgs) InsertOpts() river.InsertOpts {
	return river.InsertOpts{MaxAttempts: 450, UniqueOpts: river.UniqueOpts{ByArgs: true, ByPeriod: time.Hour}}
}

// Settle reads the purchase's state now from its store and settles it
// (the channel's Settled, which does nothing for a purchase settled
// already or in a state that needs none). A purchase the store does not
// know, or a store no longer connected, is done with; an error retries.
func (s *Service) Settle(ctx context.Context, source subscriptions.Source, externalID string) error {
	ch, ok := s.cfg.Channels[source]
	if !ok || ch.Settled == nil || ch.Read == nil {
		s.logger.Warn("settle: the store is not connected or settles nothing", "source", source)
		return nil
	}
	obs, err := ch.Read(ctx, externalID, nil)
	if errors.Is(err, ErrUnknownPurchase) || errors.Is(err, ErrIgnore) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := ch.Settled(ctx, obs, nil); err != nil && !errors.Is(err, ErrUnknownPurchase) {
		return err
	}
	return nil
}

// ReconcileAll reads every live store purchase from its store (the daily
// job), a page at a time; a purchase whose read fails is logged and left
// for the next run.
func (s *Service) ReconcileAll(ctx context.Context) (int, error) {
	after, n := "", 0
	for {
		page, err := s.store.LiveStoreEntitlements(ctx, after, 200)
		if err != nil {
			return n, err
		}
		for _, e := range page {
			if err := s.reconcileOne(ctx, e, true); err != nil {
				s.logger.Warn("reconcile failed", "entitlement", e.ID, "source", e.Source, "err", err)
				continue
			}
			n++
		}
		if len(page) < 200 {
			return n, nil
		}
		after = page[len(page)-1].ID
	}
}

// Sweep ends the entitlements whose time ran out and tells the owners of
// trials ending within three days: an entitlement of Herald's own, or a
// store purchase that will not renew, expires; a store purchase that
// should have renewed is read from its store first, and expires when the
// store does not say otherwise (a later word from the store still wins).
func (s *Service) Sweep(ctx context.Context) error {
	now := s.cfg.Now()
	lapsed, err := s.store.LapsedEntitlements(ctx, now, 500)
	if err != nil {
		return err
	}
	for _, e := range lapsed {
		if e.Source.Store() && e.State != subscriptions.StateCancelled {
			// A renewal's notification may trail the period's end by a
			// little: a purchase that renews is left alone that long.
			if e.AutoRenew && now.Sub(e.AccessEnds()) < StoreLeeway {
				continue
			}
			if err := s.reconcileOne(ctx, e, false); err != nil {
				// The store could not say: try again at the next sweep
				// rather than end what may well be paid.
				s.logger.Warn("sweep: store read failed", "entitlement", e.ID, "err", err)
				continue
			}
			cur, err := s.store.LockEntitlement(ctx, e.Source, e.ExternalID)
			if err != nil {
				return err
			}
			if cur.Grants(now) || !cur.ObservedAt.Equal(e.ObservedAt) {
				continue // the store moved it on
			}
			e = cur
		}
		obs := subscriptions.Observation{
			Source: e.Source, ExternalID: e.ExternalID, ProductID: e.ProductID, State: subscriptions.StateExpired,
			StartedAt: e.StartedAt, ExpiresAt: e.AccessEnds(), Environment: e.Environment, Customer: e.Customer,
			// The entitlement's own word time: a store's later word still
			// overrides this expiry.
			ObservedAt: e.ObservedAt,
		}
		if _, err := subscriptions.Record(ctx, s.store, obs, e.Plan, "expiry", s.plans.DeviceLimit); err != nil {
			return err
		}
	}
	ending, err := s.store.TrialsEnding(ctx, now, now.Add(TrialReminder), 500)
	if err != nil {
		return err
	}
	for _, e := range ending {
		err := s.store.InTx(ctx, func(ctx context.Context) error {
			if err := s.store.MarkReminded(ctx, e.ID); err != nil {
				return err
			}
			return s.store.EnqueueJob(ctx, subscriptions.NoticeArgs{AccountID: e.AccountID, EntitlementID: e.ID, Event: subscriptions.NoticeTrialEnding, Plan: e.Plan, At: now})
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// StoreLeeway is how long past its period's end a store purchase that
// renews waits for the store's word before the sweep asks the store (or,
// without its API, ends it).
const StoreLeeway = time.Hour

// TrialReminder is how long before a trial ends its owner is told.
const TrialReminder = 72 * time.Hour

// Checkout starts a web purchase of product for the account and returns
// the URL to send the user to. PRODUCT_UNKNOWN for a product no plan is
// mapped to.
func (s *Service) Checkout(ctx context.Context, source subscriptions.Source, accountID, email, product string) (string, error) {
	ch, err := s.channel(source)
	if err != nil {
		return "", err
	}
	if ch.Checkout == nil {
		return "", apperr.Newf(apperr.BillingNotConfigured, "%s sells nothing on the web.", source)
	}
	if _, ok := s.cfg.Products.Plan(source, product); !ok {
		return "", apperr.Newf(apperr.ProductUnknown, "The product %q is not sold here.", product).With("productId", product)
	}
	customer, err := s.CustomerOf(ctx, source, accountID)
	if err != nil && !apperr.Is(err, apperr.SubscriptionNotFound) {
		return "", err
	}
	url, err := ch.Checkout(ctx, CheckoutRequest{AccountID: accountID, Email: email, Customer: customer, ProductID: product})
	return url, Refusal(err)
}

// Portal returns the URL of the store's page where the account's owner
// manages their subscription; SUBSCRIPTION_NOT_FOUND when they bought
// nothing there.
func (s *Service) Portal(ctx context.Context, source subscriptions.Source, accountID string) (string, error) {
	ch, err := s.channel(source)
	if err != nil {
		return "", err
	}
	if ch.Portal == nil {
		return "", apperr.Newf(apperr.BillingNotConfigured, "%s has no customer portal.", source)
	}
	customer, err := s.CustomerOf(ctx, source, accountID)
	if err != nil {
		return "", err
	}
	url, err := ch.Portal(ctx, customer)
	return url, Refusal(err)
}

// CustomerOf is the store customer of the account's newest purchase in
// source (Stripe's portal); SUBSCRIPTION_NOT_FOUND when none.
func (s *Service) CustomerOf(ctx context.Context, source subscriptions.Source, accountID string) (string, error) {
	e, err := s.store.EntitlementByCustomer(ctx, source, accountID)
	if errors.Is(err, storage.ErrNotFound) {
		return "", apperr.Newf(apperr.SubscriptionNotFound, "No %s purchase belongs to this account.", source)
	}
	return e.Customer, err
}

// Products is the operator's map of each store's product ids to plans.
type Products map[subscriptions.Source]map[string]string

// Plan is the plan of a store's product; Herald's own sources carry no
// product and are not mapped.
func (p Products) Plan(source subscriptions.Source, product string) (string, bool) {
	plan, ok := p[source][product]
	return plan, ok
}
