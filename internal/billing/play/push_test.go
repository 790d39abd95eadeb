package play_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
	"github.com/herald-vpn/herald/internal/billing/play"
	"github.com/herald-vpn/herald/internal/billing/play/playfake"
)

const pkg = "com.herald.vpn"

func envelope(data string) []byte {
	return playfake.Envelope("m-1", t0, []byte(data))
}

func TestDecodePush(t *testing.T) {
	const event = `"eventTimeMillis":"1793534400000"`
	eventTime := time.UnixMilli(1793534400000).UTC()
	tests := []struct {
		name    string
		body    []byte
		want    play.Push
		wantErr bool
	}{
		{name: "subscription", body: envelope(`{"version":"1.0","packageName":"com.herald.vpn",` + event +
			`,"subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"tok-1","subscriptionId":"vpn.monthly"}}`),
			want: play.Push{Kind: play.KindSubscription, NotificationType: 4, PurchaseToken: "tok-1", SubscriptionID: "vpn.monthly"}},
		{name: "event time as a number", body: envelope(`{"packageName":"com.herald.vpn","eventTimeMillis":1793534400000,` +
			`"subscriptionNotification":{"notificationType":12,"purchaseToken":"tok-1","subscriptionId":"vpn.monthly"}}`),
			want: play.Push{Kind: play.KindSubscription, NotificationType: 12, PurchaseToken: "tok-1", SubscriptionID: "vpn.monthly"}},
		{name: "test", body: envelope(`{"version":"1.0","packageName":"com.herald.vpn",` + event + `,"testNotification":{"version":"1.0"}}`),
			want: play.Push{Kind: play.KindTest}},
		{name: "voided", body: envelope(`{"version":"1.0","packageName":"com.herald.vpn",` + event +
			`,"voidedPurchaseNotification":{"purchaseToken":"tok-1","orderId":"GPA.1","productType":1,"refundType":1}}`),
			want: play.Push{Kind: play.KindVoided, PurchaseToken: "tok-1",
				Voided: &play.VoidedPurchaseNotification{PurchaseToken: "tok-1", OrderID: "GPA.1", ProductType: 1, RefundType: 1}}},
		{name: "one-time product", body: envelope(`{"version":"1.0","packageName":"com.herald.vpn",` + event +
			`,"oneTimeProductNotification":{"version":"1.0","notificationType":1,"purchaseToken":"tok-1","sku":"coins"}}`),
			want: play.Push{Kind: play.KindOther, NotificationType: 1, PurchaseToken: "tok-1", SubscriptionID: "coins"}},
		{name: "a kind from the future", body: envelope(`{"version":"1.0","packageName":"com.herald.vpn",` + event + `,"newNotification":{}}`),
			want: play.Push{Kind: play.KindOther}},
		{name: "snake case only", body: []byte(`{"message":{"data":"` + base64.StdEncoding.EncodeToString([]byte(
			`{"packageName":"com.herald.vpn",`+event+`,"testNotification":{}}`)) + `","message_id":"m-1","publish_time":"2026-11-01T12:00:00Z"},"subscription":"` + playfake.Subscription + `"}`),
			want: play.Push{Kind: play.KindTest}},
		{name: "not JSON", body: []byte("nope"), wantErr: true},
		{name: "no message", body: []byte(`{"subscription":"s"}`), wantErr: true},
		{name: "no message id", body: []byte(`{"message":{"data":"e30="}}`), wantErr: true},
		{name: "bad publish time", body: []byte(`{"message":{"data":"e30=","messageId":"m","publishTime":"noon"}}`), wantErr: true},
		{name: "no data", body: []byte(`{"message":{"messageId":"m"}}`), wantErr: true},
		{name: "bad base64", body: []byte(`{"message":{"data":"!!!","messageId":"m"}}`), wantErr: true},
		{name: "data not JSON", body: envelope(`not json`), wantErr: true},
		{name: "no package", body: envelope(`{"testNotification":{}}`), wantErr: true},
		{name: "bad event time", body: envelope(`{"packageName":"p","eventTimeMillis":"yesterday","testNotification":{}}`), wantErr: true},
		{name: "event time past year 9999", body: envelope(`{"packageName":"p","eventTimeMillis":"9223372036854775807","testNotification":{}}`), wantErr: true},
		{name: "negative event time", body: envelope(`{"packageName":"p","eventTimeMillis":"-1","testNotification":{}}`), wantErr: true},
		{name: "subscription without token", body: envelope(`{"packageName":"p","subscriptionNotification":{"notificationType":4}}`), wantErr: true},
		{name: "subscription without type", body: envelope(`{"packageName":"p","subscriptionNotification":{"purchaseToken":"t"}}`), wantErr: true},
		{name: "voided without token", body: envelope(`{"packageName":"p","voidedPurchaseNotification":{}}`), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := play.DecodePush(tt.body)
			if tt.wantErr {
				if !errors.Is(err, billing.ErrMalformed) {
					t.Fatalf("err = %v, want ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			want.MessageID, want.PublishTime, want.Subscription, want.PackageName = "m-1", t0, playfake.Subscription, pkg
			want.EventTime = eventTime
			gv, wv := got.Voided, want.Voided
			got.Voided, want.Voided = nil, nil
			if got != want {
				t.Errorf("push\n got %+v\nwant %+v", got, want)
			}
			if (gv == nil) != (wv == nil) || (gv != nil && *gv != *wv) {
				t.Errorf("voided = %+v, want %+v", gv, wv)
			}
		})
	}
}

func FuzzDecodePush(f *testing.F) {
	f.Add(envelope(`{"version":"1.0","packageName":"com.herald.vpn","eventTimeMillis":"1793534400000","subscriptionNotification":{"version":"1.0","notificationType":4,"purchaseToken":"tok-1","subscriptionId":"vpn.monthly"}}`))
	f.Add(envelope(`{"packageName":"p","voidedPurchaseNotification":{"purchaseToken":"t","productType":1,"refundType":1}}`))
	f.Add(envelope(`{"packageName":"p","testNotification":{"version":"1.0"}}`))
	f.Add(envelope(`{"packageName":"p","eventTimeMillis":9223372036854775807,"oneTimeProductNotification":{}}`))
	f.Add([]byte(`{"message":{"data":"e30","message_id":"m"}}`))
	f.Add([]byte(`{"message":null}`))
	f.Add([]byte(``))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := play.DecodePush(body)
		if err != nil {
			if !errors.Is(err, billing.ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		if p.MessageID == "" || p.PackageName == "" || p.Kind == "" {
			t.Fatalf("decoded push without id, package or kind: %+v", p)
		}
		if p.Kind == play.KindSubscription && (p.PurchaseToken == "" || p.NotificationType <= 0) {
			t.Fatalf("subscription push without token or type: %+v", p)
		}
		if _, err := json.Marshal(p); err != nil {
			t.Fatal(err)
		}
	})
}
