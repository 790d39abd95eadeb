package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/appstore"
	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// billingSetup is what the configuration connects: the product map and a
// channel per connected store.
type billingSetup struct {
	products billing.Products
	channels map[subscriptions.Source]billing.Channel
}

// openBilling builds the connected stores' channels from the
// configuration; a store is connected when its first variable is set
// (HERALD_APPLE_BUNDLE_ID, HERALD_GOOGLE_PACKAGE_NAME,
// HERALD_STRIPE_SECRET_KEY), and then its other required variables and
// the product map must be right, or the server does not start.
func openBilling(ctx context.Context, cfg config.Config, plans []string, now func() time.Time) (billingSetup, error) {
	setup := billingSetup{products: billing.Products{}, channels: map[subscriptions.Source]billing.Channel{}}
	type opener struct {
		source subscriptions.Source
		on     bool
		open   func(context.Context, config.Config, func() time.Time) (billing.Channel, error)
	}
	for _, o := range []opener{
		{subscriptions.AppStore, cfg.AppleBundleID != "", appStoreChannel},
		{subscriptions.GooglePlay, cfg.GooglePackageName != "", googlePlayChannel},
		{subscriptions.Stripe, cfg.StripeSecretKey != "", stripeChannel},
	} {
		if !o.on {
			continue
		}
		ch, err := o.open(ctx, cfg, now)
		if err != nil {
			return billingSetup{}, fmt.Errorf("%s: %w", o.source, err)
		}
		setup.channels[o.source] = ch
	}
	if cfg.BillingProductsFile == "" {
		if len(setup.channels) > 0 {
			return billingSetup{}, errors.New("a store is connected but HERALD_BILLING_PRODUCTS is empty: map its product ids to plans")
		}
		return setup, nil
	}
	data, err := os.ReadFile(cfg.BillingProductsFile)
	if err != nil {
		return billingSetup{}, fmt.Errorf("HERALD_BILLING_PRODUCTS: %w", err)
	}
	if setup.products, err = billing.ParseProducts(data, plans); err != nil {
		return billingSetup{}, fmt.Errorf("HERALD_BILLING_PRODUCTS: %w", err)
	}
	return setup, nil
}

// renewURLs are the renewUrl of each source's plans.
func renewURLs(cfg config.Config) map[subscriptions.Source]string {
	stripe := cfg.RenewURLStripe
	if stripe == "" {
		stripe = cfg.RenewURL
	}
	return map[subscriptions.Source]string{
		subscriptions.AppStore:   cfg.RenewURLAppStore,
		subscriptions.GooglePlay: cfg.RenewURLGooglePlay,
		subscriptions.Stripe:     stripe,
	}
}

// googlePlayChannel: pushes verified by their OIDC token, the purchase
// read from subscriptionsv2 (the push only says that something changed),
// acknowledged once recorded.
func googlePlayChannel(ctx context.Context, cfg config.Config, now func() time.Time) (billing.Channel, error) {
	if cfg.GoogleServiceAccountFile == "" || cfg.GooglePushAudience == "" || cfg.GooglePushServiceAccount == "" {
		return billing.Channel{}, errors.New("HERALD_GOOGLE_SERVICE_ACCOUNT_FILE, HERALD_GOOGLE_PUSH_AUDIENCE and HERALD_GOOGLE_PUSH_SERVICE_ACCOUNT are required with HERALD_GOOGLE_PACKAGE_NAME")
	}
	key, err := os.ReadFile(cfg.GoogleServiceAccountFile)
	if err != nil {
		return billing.Channel{}, err
	}
	c, err := play.New(ctx, play.Config{
		PackageName: cfg.GooglePackageName, PushAudience: cfg.GooglePushAudience, PushServiceAccount: cfg.GooglePushServiceAccount,
		PushIssuer: cfg.GooglePushIssuer, JWKSURL: cfg.GoogleJWKSURL, ServiceAccountJSON: key, APIBase: cfg.GoogleAPIURL, Now: now,
	})
	if err != nil {
		return billing.Channel{}, err
	}
	read := func(ctx context.Context, token string, extra json.RawMessage) (play.Purchase, error) {
		pur, err := c.Purchase(ctx, token)
		switch {
		case errors.Is(err, play.ErrPurchaseNotFound):
			return pur, fmt.Errorf("%w: %v", billing.ErrUnknownPurchase, err)
		case errors.Is(err, play.ErrPending):
			return pur, fmt.Errorf("%w: %v", billing.ErrIgnore, err)
		case err != nil:
			return pur, err
		}
		if len(extra) > 0 {
			var push play.Push
			if json.Unmarshal(extra, &push) == nil {
				pur.Observation.State = play.StateFor(push, pur)
			}
		}
		return pur, nil
	}
	return billing.Channel{
		Verify: func(ctx context.Context, header func(string) string, body []byte) (billing.Inbound, error) {
			if err := c.VerifyPush(ctx, header("Authorization")); err != nil {
				return billing.Inbound{}, err
			}
			push, err := play.DecodePush(body)
			if err != nil {
				return billing.Inbound{}, err
			}
			if err := c.CheckPackage(push); err != nil {
				return billing.Inbound{}, err
			}
			in := billing.Inbound{ID: push.MessageID, Kind: fmt.Sprintf("%s:%d", push.Kind, push.NotificationType)}
			if push.Kind == play.KindSubscription || (push.Kind == play.KindVoided && push.Voided != nil && push.Voided.ProductType == 1) {
				in.Refresh = push.PurchaseToken
				if in.Extra, err = json.Marshal(push); err != nil {
					return billing.Inbound{}, err
				}
			}
			return in, nil
		},
		Read: func(ctx context.Context, token string, extra json.RawMessage) (subscriptions.Observation, error) {
			pur, err := read(ctx, token, extra)
			return pur.Observation, err
		},
		Prove: func(ctx context.Context, proof json.RawMessage) (subscriptions.Observation, error) {
			var p billing.GooglePlayProof
			if err := json.Unmarshal(proof, &p); err != nil || p.PurchaseToken == "" {
				return subscriptions.Observation{}, fmt.Errorf("%w: purchaseToken is required", billing.ErrMalformed)
			}
			pur, err := read(ctx, p.PurchaseToken, nil)
			if err != nil {
				return subscriptions.Observation{}, err
			}
			if p.ProductID != "" && p.ProductID != pur.Observation.ProductID {
				return subscriptions.Observation{}, fmt.Errorf("%w: the token is a purchase of %s, not %s", billing.ErrMisaddressed, pur.Observation.ProductID, p.ProductID)
			}
			return pur.Observation, nil
		},
		// Play refunds a purchase not acknowledged within three days. obs
		// was read from Play just before (every path to Settled reads the
		// purchase first), so it says whether it is acknowledged already.
		Settled: func(ctx context.Context, obs subscriptions.Observation, _ json.RawMessage) error {
			if obs.Acknowledged || obs.State != subscriptions.StateActive && obs.State != subscriptions.StateTrial && obs.State != subscriptions.StateGrace {
				return nil
			}
			err := c.Acknowledge(ctx, obs.ProductID, obs.ExternalID)
			if errors.Is(err, play.ErrPurchaseNotFound) {
				// Play will not take it, however often asked.
				return fmt.Errorf("%w: %v", billing.ErrUnknownPurchase, err)
			}
			return err
		},
	}, nil
}

// stripeChannel: webhooks verified with the endpoint secret; every event
// about a subscription has it read again from the API, the truth now. A
// subscription event's own state serves only when the API does not know
// the subscription: its time is Stripe's clock, to the second, and
// entitlements keep the newest word by time, so a change told in the same
// second as (or within the clocks' skew of) an earlier read would be taken
// for an older word and dropped.
func stripeChannel(_ context.Context, cfg config.Config, now func() time.Time) (billing.Channel, error) {
	if cfg.StripeWebhookSecret == "" {
		return billing.Channel{}, errors.New("HERALD_STRIPE_WEBHOOK_SECRET is required with HERALD_STRIPE_SECRET_KEY")
	}
	c, err := stripebill.New(stripebill.Config{
		SecretKey: cfg.StripeSecretKey, WebhookSecret: cfg.StripeWebhookSecret, Tolerance: cfg.StripeTolerance,
		APIBase: cfg.StripeAPIURL, Now: now,
	})
	if err != nil {
		return billing.Channel{}, err
	}
	return billing.Channel{
		Verify: func(_ context.Context, header func(string) string, body []byte) (billing.Inbound, error) {
			ev, err := c.Event(body, header("Stripe-Signature"))
			if err != nil {
				return billing.Inbound{}, err
			}
			// SubscriptionID is set on every handled type and on no other.
			return billing.Inbound{ID: ev.ID, Kind: ev.Type, Observation: ev.Observation, AccountHint: ev.ClientReferenceID, Refresh: ev.SubscriptionID}, nil
		},
		Read: func(ctx context.Context, id string, _ json.RawMessage) (subscriptions.Observation, error) {
			obs, err := c.Subscription(ctx, id)
			switch {
			case errors.Is(err, stripebill.ErrNoSubscription):
				return obs, fmt.Errorf("%w: %v", billing.ErrUnknownPurchase, err)
			case errors.Is(err, stripebill.ErrIncomplete):
				return obs, fmt.Errorf("%w: %v", billing.ErrIgnore, err)
			}
			return obs, err
		},
		Checkout: func(ctx context.Context, in billing.CheckoutRequest) (string, error) {
			return c.Checkout(ctx, stripebill.CheckoutInput{
				UserID: in.AccountID, PriceID: in.ProductID, CustomerID: in.Customer, CustomerEmail: in.Email,
				SuccessURL: cfg.StripeSuccessURL, CancelURL: cfg.StripeCancelURL,
			})
		},
		Portal: func(ctx context.Context, customer string) (string, error) {
			return c.Portal(ctx, customer, cfg.StripePortalReturnURL)
		},
	}, nil
}

// appStoreChannel: notifications and an app's signed transactions
// verified through their x5c chains; with an in-app purchase key, the
// App Store Server API is read for the purchase a notification names (the
// truth now, whatever order notifications arrive in) and for
// reconciliation.
func appStoreChannel(_ context.Context, cfg config.Config, now func() time.Time) (billing.Channel, error) {
	acfg := appstore.Config{BundleID: cfg.AppleBundleID, Environment: cfg.AppleEnvironment, APIBase: cfg.AppleAPIURL, Now: now}
	if cfg.AppleRootCertFile != "" {
		pem, err := os.ReadFile(cfg.AppleRootCertFile)
		if err != nil {
			return billing.Channel{}, err
		}
		acfg.Roots = x509.NewCertPool()
		if !acfg.Roots.AppendCertsFromPEM(pem) {
			return billing.Channel{}, fmt.Errorf("HERALD_APPLE_ROOT_CERT_FILE: no PEM certificate in %s", cfg.AppleRootCertFile)
		}
	}
	if cfg.ApplePrivateKeyFile != "" {
		if cfg.AppleIssuerID == "" || cfg.AppleKeyID == "" {
			return billing.Channel{}, errors.New("HERALD_APPLE_ISSUER_ID and HERALD_APPLE_KEY_ID are required with HERALD_APPLE_PRIVATE_KEY_FILE")
		}
		pem, err := os.ReadFile(cfg.ApplePrivateKeyFile)
		if err != nil {
			return billing.Channel{}, err
		}
		if acfg.PrivateKey, err = appstore.ParsePrivateKey(pem); err != nil {
			return billing.Channel{}, fmt.Errorf("HERALD_APPLE_PRIVATE_KEY_FILE: %w", err)
		}
		acfg.IssuerID, acfg.KeyID = cfg.AppleIssuerID, cfg.AppleKeyID
	}
	c, err := appstore.New(acfg)
	if err != nil {
		return billing.Channel{}, err
	}
	withAPI := acfg.PrivateKey != nil
	ch := billing.Channel{
		Verify: func(_ context.Context, _ func(string) string, body []byte) (billing.Inbound, error) {
			n, err := c.Notification(body)
			if err != nil {
				return billing.Inbound{}, err
			}
			kind := n.Type
			if n.Subtype != "" {
				kind += "/" + n.Subtype
			}
			in := billing.Inbound{ID: n.UUID, Kind: kind, Observation: n.Observation, Revocation: n.Revocation()}
			if withAPI && n.Observation != nil {
				in.Refresh = n.Observation.ExternalID
			}
			return in, nil
		},
		Prove: func(_ context.Context, proof json.RawMessage) (subscriptions.Observation, error) {
			var signed string
			if err := json.Unmarshal(proof, &signed); err != nil {
				return subscriptions.Observation{}, fmt.Errorf("%w: a signed transaction is a string", billing.ErrMalformed)
			}
			return c.Transaction(signed)
		},
	}
	if withAPI {
		ch.Read = func(ctx context.Context, originalTransactionID string, _ json.RawMessage) (subscriptions.Observation, error) {
			obs, err := c.Statuses(ctx, originalTransactionID)
			if errors.Is(err, appstore.ErrNotFound) {
				return obs, fmt.Errorf("%w: %v", billing.ErrUnknownPurchase, err)
			}
			return obs, err
		}
		ch.Revocations = func(ctx context.Context, originalTransactionID, revision string) ([]subscriptions.PastRevocation, string, error) {
			revs, next, err := c.Revocations(ctx, originalTransactionID, revision)
			if errors.Is(err, appstore.ErrNotFound) {
				return nil, "", fmt.Errorf("%w: %v", billing.ErrUnknownPurchase, err)
			}
			return revs, next, err
		}
	}
	return ch, nil
}
