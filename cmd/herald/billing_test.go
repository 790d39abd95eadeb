package main

import (
	"context"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
	"github.com/herald-vpn/herald/internal/config"
	"github.com/herald-vpn/herald/internal/subscriptions"
)

// TestStripeChannelReadsEverySubscription: every event about a
// subscription has it read from the API, whose answer (observed on
// Herald's clock, now) is what is recorded; an event's own state, on
// Stripe's clock to the second, would be taken for older than a read made
// earlier in the same second and dropped.
func TestStripeChannelReadsEverySubscription(t *testing.T) {
	fake := stripefake.New(t)
	ch, err := stripeChannel(context.Background(), config.Config{
		StripeSecretKey: fake.SecretKey(), StripeWebhookSecret: fake.WebhookSecret(), StripeAPIURL: fake.URL(),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	told := stripefake.Subscription{
		ID: "sub_1", Customer: "cus_1", Status: "active", PriceID: "price_1",
		StartDate: now, CurrentPeriodStart: now, CurrentPeriodEnd: now.Add(30 * 24 * time.Hour),
	}
	// The API has moved on since: cancelled at the period's end.
	truth := told
	truth.CancelAtPeriodEnd = true
	fake.SetSubscription(truth)
	for _, typ := range []string{
		stripebill.EventSubscriptionCreated, stripebill.EventSubscriptionUpdated, stripebill.EventSubscriptionDeleted,
		stripebill.EventInvoicePaid, stripebill.EventInvoicePaymentFailed, stripebill.EventCheckoutCompleted,
	} {
		t.Run(typ, func(t *testing.T) {
			var object any = told
			switch typ {
			case stripebill.EventInvoicePaid, stripebill.EventInvoicePaymentFailed:
				object = stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1"}
			case stripebill.EventCheckoutCompleted:
				object = stripefake.CheckoutSession{ID: "cs_1", ClientReferenceID: "user-1", Customer: "cus_1", Subscription: "sub_1"}
			}
			payload, sig := fake.Event(typ, object)
			in, err := ch.Verify(context.Background(), func(k string) string {
				if k == "Stripe-Signature" {
					return sig
				}
				return ""
			}, payload)
			if err != nil {
				t.Fatal(err)
			}
			if in.Refresh != "sub_1" {
				t.Fatalf("Refresh %q, want the subscription read again (sub_1)", in.Refresh)
			}
			before := time.Now()
			obs, err := ch.Read(context.Background(), in.Refresh, in.Extra)
			if err != nil {
				t.Fatal(err)
			}
			if obs.State != subscriptions.StateCancelled || obs.AutoRenew || obs.ObservedAt.Before(before) {
				t.Fatalf("read %+v, want the API's cancelled subscription observed at the read (after %s)", obs, before)
			}
		})
	}
}
