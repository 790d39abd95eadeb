// Package stripebill is Herald's Stripe adapter: it verifies and decodes
// webhook events, reads subscriptions, and creates Checkout and customer
// portal sessions, through stripe-go pointed at a configurable API base.
package stripebill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v82"
	"github.com/stripe/stripe-go/v82/webhook"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// DefaultAPIBase is Stripe's API.
const DefaultAPIBase = "https://api.stripe.com"

// MetadataUserID is the metadata key that carries the Herald user id on
// Checkout Sessions and the subscriptions they create.
const MetadataUserID = "herald_user_id"

// ErrNoSubscription: Stripe answered 404 for the subscription (wrong id,
// or another account's or mode's). Not an upstream failure: a retry does
// not help.
var ErrNoSubscription = errors.New("stripebill: no such subscription")

// ErrIncomplete: the subscription is "incomplete" (its first payment has
// not succeeded yet). It grants nothing and Herald records nothing; Stripe
// sends customer.subscription.updated when it becomes active, or
// incomplete_expired after 23 hours.
var ErrIncomplete = errors.New("stripebill: subscription incomplete, nothing to grant yet")

// Config configures a Client.
type Config struct {
	// SecretKey is the API key (sk_live_..., sk_test_..., or a restricted
	// rk_... key). A live key accepts only live events, a test key only
	// test events.
	SecretKey string
	// WebhookSecret is the webhook endpoint's signing secret (whsec_...).
	WebhookSecret string
	// Tolerance is how far a signature's timestamp may be from Now;
	// 0 means the library's webhook.DefaultTolerance (300s).
	Tolerance time.Duration
	// APIBase is the API's base URL; "" means DefaultAPIBase.
	APIBase string
	// HTTPClient makes the API calls; nil means the library's default.
	HTTPClient *http.Client
	// MaxNetworkRetries is how often the library retries a failed call
	// (with an idempotency key); nil means its default (2).
	MaxNetworkRetries *int64
	// Now is the clock for the tolerance and for API reads' ObservedAt;
	// nil means time.Now.
	Now func() time.Time
}

// Client talks to Stripe for one account. It holds its own backend: no
// stripe-go global (stripe.Key, stripe.SetBackend) is touched.
type Client struct {
	api       *stripe.Client
	secret    string
	tolerance time.Duration
	now       func() time.Time
	// live is whether events must be live-mode; nil when the key's
	// prefix does not say.
	live *bool
}

// New checks cfg and makes a Client.
func New(cfg Config) (*Client, error) {
	if cfg.SecretKey == "" {
		return nil, errors.New("stripebill: SecretKey is required")
	}
	if cfg.WebhookSecret == "" {
		return nil, errors.New("stripebill: WebhookSecret is required")
	}
	if cfg.Tolerance < 0 {
		return nil, errors.New("stripebill: Tolerance must not be negative")
	}
	if cfg.Tolerance == 0 {
		cfg.Tolerance = webhook.DefaultTolerance
	}
	if cfg.APIBase == "" {
		cfg.APIBase = DefaultAPIBase
	}
	u, err := url.Parse(cfg.APIBase)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("stripebill: APIBase %q is not an http(s) URL", cfg.APIBase)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	backends := stripe.NewBackendsWithConfig(&stripe.BackendConfig{
		URL:               stripe.String(cfg.APIBase),
		HTTPClient:        cfg.HTTPClient,
		MaxNetworkRetries: cfg.MaxNetworkRetries,
		// The caller logs the errors it gets; the library would write to stderr.
		LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
	})
	c := &Client{
		api:       stripe.NewClient(cfg.SecretKey, stripe.WithBackends(backends)),
		secret:    cfg.WebhookSecret,
		tolerance: cfg.Tolerance,
		now:       cfg.Now,
	}
	switch key := cfg.SecretKey; {
	case strings.HasPrefix(key, "sk_live_"), strings.HasPrefix(key, "rk_live_"):
		c.live = stripe.Bool(true)
	case strings.HasPrefix(key, "sk_test_"), strings.HasPrefix(key, "rk_test_"):
		c.live = stripe.Bool(false)
	}
	return c, nil
}

// Subscription reads GET /v1/subscriptions/{id} and maps it, observed now.
// A 404 is ErrNoSubscription; an incomplete subscription is ErrIncomplete.
func (c *Client) Subscription(ctx context.Context, id string) (subscriptions.Observation, error) {
	if id == "" {
		return subscriptions.Observation{}, errors.New("stripebill: subscription id is required")
	}
	sub, err := c.api.V1Subscriptions.Retrieve(ctx, id, nil)
	if err != nil {
		var se *stripe.Error
		if errors.As(err, &se) && se.HTTPStatusCode == http.StatusNotFound {
			return subscriptions.Observation{}, fmt.Errorf("%w: %s", ErrNoSubscription, id)
		}
		return subscriptions.Observation{}, apiError("read subscription", err)
	}
	if sub.LastResponse == nil {
		return subscriptions.Observation{}, fmt.Errorf("stripebill: read subscription: %w: no response", billing.ErrUpstream)
	}
	// Map the answer's own JSON, not stripe-go's struct: the same mapping
	// then serves events of any API version (current_period_end moved).
	ws, err := decodeSubscription(sub.LastResponse.RawJSON)
	if err != nil {
		return subscriptions.Observation{}, fmt.Errorf("stripebill: read subscription: %w", err)
	}
	return observe(ws, c.now())
}

// CheckoutInput is what a Checkout Session is made of.
type CheckoutInput struct {
	// UserID is the Herald user id: client_reference_id and metadata.
	UserID string
	// PriceID is the Stripe price (price_...) of the plan.
	PriceID string
	// CustomerID is the user's Stripe customer when known; otherwise
	// CustomerEmail (may be "") prefills Checkout.
	CustomerID    string
	CustomerEmail string
	SuccessURL    string
	CancelURL     string
	// IdempotencyKey, when set, makes a repeated request answer the same
	// session.
	IdempotencyKey string
}

// Checkout creates a Checkout Session in subscription mode and returns its
// URL.
func (c *Client) Checkout(ctx context.Context, in CheckoutInput) (string, error) {
	if in.UserID == "" || in.PriceID == "" || in.SuccessURL == "" || in.CancelURL == "" {
		return "", errors.New("stripebill: checkout needs a user, a price, a success and a cancel URL")
	}
	p := &stripe.CheckoutSessionCreateParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModeSubscription)),
		LineItems:         []*stripe.CheckoutSessionCreateLineItemParams{{Price: stripe.String(in.PriceID), Quantity: stripe.Int64(1)}},
		ClientReferenceID: stripe.String(in.UserID),
		SuccessURL:        stripe.String(in.SuccessURL),
		CancelURL:         stripe.String(in.CancelURL),
		Metadata:          map[string]string{MetadataUserID: in.UserID},
		// The subscription carries the user too, so that its own events
		// name the account (AccountHint) without the session.
		SubscriptionData: &stripe.CheckoutSessionCreateSubscriptionDataParams{
			Metadata: map[string]string{MetadataUserID: in.UserID},
		},
	}
	switch {
	case in.CustomerID != "":
		p.Customer = stripe.String(in.CustomerID)
	case in.CustomerEmail != "":
		p.CustomerEmail = stripe.String(in.CustomerEmail)
	}
	if in.IdempotencyKey != "" {
		p.SetIdempotencyKey(in.IdempotencyKey)
	}
	s, err := c.api.V1CheckoutSessions.Create(ctx, p)
	if err != nil {
		return "", apiError("create checkout session", err)
	}
	if s.URL == "" {
		return "", fmt.Errorf("stripebill: create checkout session: %w: answer has no url", billing.ErrUpstream)
	}
	return s.URL, nil
}

// Portal creates a customer portal session and returns its URL.
func (c *Client) Portal(ctx context.Context, customerID, returnURL string) (string, error) {
	if customerID == "" || returnURL == "" {
		return "", errors.New("stripebill: portal needs a customer and a return URL")
	}
	s, err := c.api.V1BillingPortalSessions.Create(ctx, &stripe.BillingPortalSessionCreateParams{
		Customer:  stripe.String(customerID),
		ReturnURL: stripe.String(returnURL),
	})
	if err != nil {
		return "", apiError("create portal session", err)
	}
	if s.URL == "" {
		return "", fmt.Errorf("stripebill: create portal session: %w: answer has no url", billing.ErrUpstream)
	}
	return s.URL, nil
}

// apiError sorts a failed call: a network failure, an undecodable answer,
// a 5xx or a 429 is billing.ErrUpstream (the caller retries); any other
// answer of Stripe's (400, 401, 403, 404) is returned as is, wrapped.
func apiError(op string, err error) error {
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode != http.StatusTooManyRequests && se.HTTPStatusCode < 500 {
		return fmt.Errorf("stripebill: %s: %w", op, err)
	}
	return fmt.Errorf("stripebill: %s: %w: %w", op, billing.ErrUpstream, err)
}
