package stripebill_test

import (
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/stripebill"
	"github.com/herald-vpn/herald/internal/billing/stripebill/stripefake"
)

// FuzzEvent: any payload, correctly signed, decodes or is ErrMalformed /
// ErrMisaddressed, and never panics; any header on a good payload
// verifies or is ErrForged.
func FuzzEvent(f *testing.F) {
	fake := stripefake.New(f)
	fake.SetNow(func() time.Time { return now })
	c, err := stripebill.New(stripebill.Config{
		SecretKey: fake.SecretKey(), WebhookSecret: fake.WebhookSecret(), APIBase: fake.URL(),
		Now: func() time.Time { return now },
	})
	if err != nil {
		f.Fatal(err)
	}
	seed := func(typ string, obj any) {
		p, h := fake.Event(typ, obj)
		f.Add(p, h)
	}
	seed(stripebill.EventSubscriptionUpdated, sub("active"))
	seed(stripebill.EventSubscriptionDeleted, sub("canceled"))
	seed(stripebill.EventCheckoutCompleted, stripefake.CheckoutSession{ID: "cs_1", ClientReferenceID: "u", Customer: "cus_1", Subscription: "sub_1"})
	seed(stripebill.EventInvoicePaymentFailed, stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1"})
	seed(stripebill.EventInvoicePaid, stripefake.Invoice{ID: "in_1", Customer: "cus_1", Subscription: "sub_1", Legacy: true})
	f.Add([]byte(`{"id":"evt_1","object":"event","type":"customer.subscription.updated","created":1,"data":{"object":{"object":"subscription","id":"s","items":{"data":[{"price":null}]}}}}`), "")
	f.Add([]byte(`{"data":{"object":[]}}`), "t=1,v1=00")
	f.Add([]byte(`null`), "t=,v1=")

	f.Fuzz(func(t *testing.T, payload []byte, header string) {
		// With the fuzzed header: forged unless it happens to verify.
		if _, err := c.Event(payload, header); err != nil &&
			!errors.Is(err, billing.ErrForged) && !errors.Is(err, billing.ErrMalformed) && !errors.Is(err, billing.ErrMisaddressed) {
			t.Fatalf("header %q: err = %v", header, err)
		}
		// Signed correctly: decoded or refused as malformed/misaddressed.
		ev, err := c.Event(payload, stripefake.Sign(payload, now, fake.WebhookSecret()))
		switch {
		case err == nil:
			if ev.ID == "" || ev.Type == "" {
				t.Fatalf("decoded without id or type: %+v", ev)
			}
			if o := ev.Observation; o != nil && (o.ExternalID == "" || !o.State.Valid() || o.ExpiresAt.IsZero()) {
				t.Fatalf("bad observation: %+v", o)
			}
		case errors.Is(err, billing.ErrMalformed), errors.Is(err, billing.ErrMisaddressed):
		default:
			t.Fatalf("signed: err = %v", err)
		}
	})
}
