package play

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/billing"
)

// Push is a decoded Pub/Sub push of a real-time developer notification.
type Push struct {
	// MessageID is Pub/Sub's id of the message: the key that makes a
	// redelivery change nothing.
	MessageID    string
	PublishTime  time.Time
	Subscription string
	PackageName  string
	// EventTime is Play's eventTimeMillis.
	EventTime time.Time
	// Kind is "subscription", "test", "voided" or "other" (a one-time
	// product).
	Kind string
	// NotificationType is the subscription (or one-time product)
	// notification type; 0 for test and voided.
	NotificationType int
	PurchaseToken    string
	// SubscriptionID is the product id of a subscription notification (the
	// sku of a one-time product one).
	SubscriptionID string
	// Voided is set for Kind "voided".
	Voided *VoidedPurchaseNotification
}

// Push kinds.
const (
	KindSubscription = "subscription"
	KindTest         = "test"
	KindVoided       = "voided"
	KindOther        = "other"
)

// envelope is the body Pub/Sub pushes. It writes both the camelCase and
// the snake_case names of the message's fields.
type envelope struct {
	Message *struct {
		Attributes   map[string]string `json:"attributes"`
		Data         string            `json:"data"`
		MessageID    string            `json:"messageId"`
		MessageID2   string            `json:"message_id"`
		PublishTime  string            `json:"publishTime"`
		PublishTime2 string            `json:"publish_time"`
	} `json:"message"`
	Subscription string `json:"subscription"`
}

// DecodePush decodes a Pub/Sub push body and the developer notification
// in its data. It checks the shape only; the sender is VerifyPush's and
// the package CheckPackage's. Every failure wraps billing.ErrMalformed.
func DecodePush(body []byte) (Push, error) {
	var env envelope
	if err := json.Unmarshal(body, &env); err != nil {
		return Push{}, malformed("push body: %v", err)
	}
	m := env.Message
	if m == nil {
		return Push{}, malformed("push without message")
	}
	p := Push{MessageID: first(m.MessageID, m.MessageID2), Subscription: env.Subscription}
	if p.MessageID == "" {
		return Push{}, malformed("push without messageId")
	}
	if pt := first(m.PublishTime, m.PublishTime2); pt != "" {
		t, err := time.Parse(time.RFC3339Nano, pt)
		if err != nil {
			return Push{}, malformed("publishTime: %v", err)
		}
		p.PublishTime = t.UTC()
	}
	data, err := decodeBase64(m.Data)
	if err != nil {
		return Push{}, malformed("message data: %v", err)
	}
	var n DeveloperNotification
	if err := json.Unmarshal(data, &n); err != nil {
		return Push{}, malformed("developer notification: %v", err)
	}
	if n.PackageName == "" {
		return Push{}, malformed("notification without packageName")
	}
	p.PackageName = n.PackageName
	p.EventTime = time.UnixMilli(int64(n.EventTimeMillis)).UTC()
	if n.EventTimeMillis < 0 || p.EventTime.Year() > 9999 {
		// Outside what RFC 3339 (and the database) can hold.
		return Push{}, malformed("eventTimeMillis %d", n.EventTimeMillis)
	}
	switch {
	case n.SubscriptionNotification != nil:
		s := n.SubscriptionNotification
		p.Kind, p.NotificationType, p.PurchaseToken, p.SubscriptionID = KindSubscription, s.NotificationType, s.PurchaseToken, s.SubscriptionID
		if s.PurchaseToken == "" || s.NotificationType <= 0 {
			return Push{}, malformed("subscriptionNotification without purchaseToken or notificationType")
		}
	case n.VoidedPurchaseNotification != nil:
		v := *n.VoidedPurchaseNotification
		p.Kind, p.PurchaseToken, p.Voided = KindVoided, v.PurchaseToken, &v
		if v.PurchaseToken == "" {
			return Push{}, malformed("voidedPurchaseNotification without purchaseToken")
		}
	case n.TestNotification != nil:
		p.Kind = KindTest
	case n.OneTimeProductNotification != nil:
		o := n.OneTimeProductNotification
		p.Kind, p.NotificationType, p.PurchaseToken, p.SubscriptionID = KindOther, o.NotificationType, o.PurchaseToken, o.SKU
	default:
		// A notification kind Play added later: kept, not understood.
		p.Kind = KindOther
	}
	return p, nil
}

// decodeBase64 reads Pub/Sub's standard base64, tolerating the URL
// alphabet and missing padding.
func decodeBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, fmt.Errorf("empty")
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	s = strings.TrimRight(s, "=")
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawURLEncoding.DecodeString(s)
}

func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("play: "+format+": %w", append(args, billing.ErrMalformed)...)
}
