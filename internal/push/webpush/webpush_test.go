package webpush_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/webpush"
	"github.com/herald-vpn/herald/internal/push/webpush/webpushtest"
)

const subject = "mailto:ops@example.com"

func newKey(t testing.TB) []byte {
	t.Helper()
	k, err := webpush.GenerateVAPIDKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func newClient(t testing.TB, srv *webpushtest.Server, o webpush.Options) *webpush.Client {
	t.Helper()
	if o.HTTPClient == nil {
		o.HTTPClient = srv.Client()
	}
	c, err := webpush.New(newKey(t), subject, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func web(sub webpushtest.Subscription) push.Target {
	return push.Target{Platform: push.PlatformWeb, Token: sub.JSON}
}

// A push reaches its subscription, which alone can read it: the fake
// decrypts it with the subscription's own private key and checks the
// VAPID token against the client's key.
func TestSendDelivers(t *testing.T) {
	t.Parallel()
	srv := webpushtest.NewServer(t)
	c := newClient(t, srv, webpush.Options{})
	sub, other := srv.Subscribe(), srv.Subscribe()
	badge := 3
	n := push.Notification{Title: "Renewal", Body: "Your plan renews <tomorrow>", Data: map[string]any{"plan": "pro", "days": 1},
		CollapseKey: "0197a3c2-5e1f-7c3a-9b2d-4f6e8a1c0d2b", Options: push.Options{Badge: &badge, ImageURL: "https://cdn.example.com/a.png"}}
	if err := c.Send(t.Context(), web(sub), n); err != nil {
		t.Fatalf("Send: %v (the fake refused: %v)", err, srv.Rejected())
	}
	msgs := srv.MessagesFor(sub.ID)
	if len(msgs) != 1 || srv.Delivered(other.ID) != 0 {
		t.Fatalf("the subscription got %d pushes, the other %d; want 1 and 0", len(msgs), srv.Delivered(other.ID))
	}
	m := msgs[0]
	if m.Title != "Renewal" || m.Body != "Your plan renews <tomorrow>" || m.Data["plan"] != "pro" || m.Data["days"] != float64(1) {
		t.Fatalf("decrypted %s", m.Payload)
	}
	if m.Raw["badge"] != float64(3) || m.Raw["image"] != "https://cdn.example.com/a.png" || m.Raw["tag"] != n.CollapseKey {
		t.Fatalf("payload %s lacks its options", m.Payload)
	}
	if m.VAPIDKey != c.PublicKey() || m.Subject != subject {
		t.Fatalf("VAPID k=%s sub=%s, want %s %s", m.VAPIDKey, m.Subject, c.PublicKey(), subject)
	}
	// Defaults: four weeks, high for a notification, a 36-character
	// collapse key hashed into a topic of 32.
	if m.TTL != "2419200" || m.Urgency != "high" || m.Topic != webpush.Topic(n.CollapseKey) || len(m.Topic) != 32 || m.Topic == n.CollapseKey[:32] {
		t.Fatalf("headers TTL %q Urgency %q Topic %q", m.TTL, m.Urgency, m.Topic)
	}
	if m.Proto != "HTTP/2.0" {
		t.Errorf("sent over %s, want HTTP/2.0", m.Proto)
	}
	if r := srv.Rejected(); len(r) != 0 {
		t.Fatalf("the fake refused %v", r)
	}
}

// Options map to the headers: TTL 0 is now or never, the priority is the
// urgency, a short collapse key is the topic as it is.
func TestSendHeaders(t *testing.T) {
	t.Parallel()
	srv := webpushtest.NewServer(t)
	c := newClient(t, srv, webpush.Options{})
	sub := srv.Subscribe()
	zero := time.Duration(0)
	hour := time.Hour
	tests := []struct {
		n                   push.Notification
		ttl, urgency, topic string
	}{
		{push.Notification{Title: "a", CollapseKey: "news_1", Options: push.Options{TTL: &zero, Priority: push.PriorityNormal}}, "0", "normal", "news_1"},
		{push.Notification{Data: map[string]any{"k": "v"}, Options: push.Options{TTL: &hour}}, "3600", "normal", ""},
		{push.Notification{Data: map[string]any{"k": "v"}, Options: push.Options{Priority: push.PriorityHigh}}, "2419200", "high", ""},
	}
	for i, tt := range tests {
		if err := c.Send(t.Context(), web(sub), tt.n); err != nil {
			t.Fatal(err)
		}
		m := srv.MessagesFor(sub.ID)[i]
		if m.TTL != tt.ttl || m.Urgency != tt.urgency || m.Topic != tt.topic {
			t.Errorf("case %d: TTL %q Urgency %q Topic %q, want %q %q %q", i, m.TTL, m.Urgency, m.Topic, tt.ttl, tt.urgency, tt.topic)
		}
	}
}

// Each answer of the push service is its kind, as FCM's are.
func TestSendErrorClasses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		fault      *webpushtest.Fault
		unsub      bool
		want       push.Kind
		retryAfter time.Duration
	}{
		{"410 gone", new(webpushtest.Gone()), false, push.DeadToken, 0},
		{"404 not found", new(webpushtest.NotFound()), false, push.DeadToken, 0},
		{"unsubscribed", nil, true, push.DeadToken, 0},
		{"429 with Retry-After", new(webpushtest.TooManyRequests(7 * time.Second)), false, push.Retryable, 7 * time.Second},
		{"500", new(webpushtest.Internal()), false, push.Retryable, 0},
		{"503 with Retry-After", &webpushtest.Fault{Status: 503, RetryAfter: 2 * time.Second}, false, push.Retryable, 2 * time.Second},
		{"401", &webpushtest.Fault{Status: 401}, false, push.Fatal, 0},
		{"403", &webpushtest.Fault{Status: 403}, false, push.Fatal, 0},
		{"400", &webpushtest.Fault{Status: 400}, false, push.Other, 0},
		{"413", &webpushtest.Fault{Status: 413}, false, push.Other, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := webpushtest.NewServer(t)
			c := newClient(t, srv, webpush.Options{})
			sub := srv.Subscribe()
			if tt.fault != nil {
				srv.Fail(sub.ID, 1, *tt.fault)
			}
			if tt.unsub {
				srv.Unsubscribe(sub.ID)
			}
			err := c.Send(t.Context(), web(sub), push.Notification{Title: "t", Body: "b"})
			kind, after := push.Classify(err)
			if kind != tt.want || after != tt.retryAfter {
				t.Fatalf("Send = %v: %v after %v, want %v after %v", err, kind, after, tt.want, tt.retryAfter)
			}
			if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Provider != "webpush" {
				t.Fatalf("error %#v is not a webpush *push.Error", err)
			}
			if tt.unsub {
				return
			}
			// The script is used up: the next push is delivered.
			if err := c.Send(t.Context(), web(sub), push.Notification{Title: "t"}); err != nil || srv.Delivered(sub.ID) != 1 {
				t.Fatalf("second Send = %v, delivered %d", err, srv.Delivered(sub.ID))
			}
		})
	}
}

// A VAPID token the push service refuses is Fatal: here an expired one
// (a client whose clock is two days behind).
func TestSendRefusedVAPIDIsFatal(t *testing.T) {
	t.Parallel()
	srv := webpushtest.NewServer(t)
	c := newClient(t, srv, webpush.Options{Now: func() time.Time { return time.Now().Add(-48 * time.Hour) }})
	sub := srv.Subscribe()
	err := c.Send(t.Context(), web(sub), push.Notification{Title: "t"})
	if kind, _ := push.Classify(err); kind != push.Fatal {
		t.Fatalf("Send = %v, want Fatal", err)
	}
	if r := srv.Rejected(); len(r) != 1 || !strings.Contains(r[0], "expired") {
		t.Fatalf("the fake refused %v, want one expired token", r)
	}
}

func TestSendLocalFailures(t *testing.T) {
	t.Parallel()
	srv := webpushtest.NewServer(t)
	c := newClient(t, srv, webpush.Options{})
	sub := srv.Subscribe()
	tests := []struct {
		name   string
		t      push.Target
		n      push.Notification
		kind   push.Kind
		reason string
	}{
		{"not a subscription", push.Target{Platform: "web", Token: "reader-phone"}, push.Notification{Title: "t"}, push.DeadToken, "InvalidSubscription"},
		{"payload too large", web(sub), push.Notification{Title: "t", Body: strings.Repeat("x", webpush.MaxPayloadLen)}, push.Other, "PayloadTooLarge"},
		{"data not JSON", web(sub), push.Notification{Title: "t", Data: map[string]any{"f": func() {}}}, push.Other, "InvalidData"},
	}
	for _, tt := range tests {
		err := c.Send(t.Context(), tt.t, tt.n)
		pe, ok := errors.AsType[*push.Error](err)
		if !ok || pe.Kind != tt.kind || pe.Reason != tt.reason {
			t.Errorf("%s: Send = %v, want %v %s", tt.name, err, tt.kind, tt.reason)
		}
	}
	if n := srv.Attempts(sub.ID); n != 0 {
		t.Fatalf("%d pushes reached the push service", n)
	}
}

// Without AllowPrivate the default client dials no loopback address and
// refuses plain http endpoints; with it, a plain fake on 127.0.0.1 works.
func TestSendAddressPolicy(t *testing.T) {
	t.Parallel()
	plain := webpushtest.NewServer(t, webpushtest.PlainHTTP())
	sub := plain.Subscribe()
	strict, err := webpush.New(newKey(t), subject, webpush.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if kind, _ := push.Classify(strict.Send(t.Context(), web(sub), push.Notification{Title: "t"})); kind != push.DeadToken {
		t.Fatalf("an http endpoint was not refused: %v", kind)
	}
	tlsSrv := webpushtest.NewServer(t)
	tlsSub := tlsSrv.Subscribe()
	err = strict.Send(t.Context(), web(tlsSub), push.Notification{Title: "t"})
	if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Kind != push.DeadToken || pe.Reason != "EndpointNotAllowed" || tlsSrv.Attempts(tlsSub.ID) != 0 {
		t.Fatalf("the strict client to a loopback push service: %v, want DeadToken EndpointNotAllowed and no request", err)
	}
	dev, err := webpush.New(newKey(t), subject, webpush.Options{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := dev.Send(t.Context(), web(sub), push.Notification{Title: "t"}); err != nil || plain.Delivered(sub.ID) != 1 {
		t.Fatalf("with AllowPrivate: %v, delivered %d", err, plain.Delivered(sub.ID))
	}
}

func TestNewRefuses(t *testing.T) {
	t.Parallel()
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaDER, _ := x509.MarshalPKCS8PrivateKey(rsaKey)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384DER, _ := x509.MarshalECPrivateKey(p384)
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(p256)
	pemOf := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	tests := []struct {
		name    string
		key     []byte
		subject string
		ok      bool
	}{
		{"SEC 1 key, mailto", newKey(t), "mailto:ops@example.com", true},
		{"PKCS 8 key, https", pemOf("PRIVATE KEY", pkcs8), "https://example.com/contact", true},
		{"not PEM", []byte("nope"), subject, false},
		{"RSA", pemOf("PRIVATE KEY", rsaDER), subject, false},
		{"P-384", pemOf("EC PRIVATE KEY", p384DER), subject, false},
		{"no subject", newKey(t), "", false},
		{"http subject", newKey(t), "http://example.com", false},
		{"bare address", newKey(t), "ops@example.com", false},
	}
	for _, tt := range tests {
		c, err := webpush.New(tt.key, tt.subject, webpush.Options{})
		if (err == nil) != tt.ok {
			t.Errorf("%s: New = %v, want ok %v", tt.name, err, tt.ok)
		}
		if err == nil && len(c.PublicKey()) != 87 {
			t.Errorf("%s: public key %q is not 65 bytes of base64url", tt.name, c.PublicKey())
		}
	}
}

// One client serves concurrent sends (run with -race): each subscription
// gets its own push, readable by it.
func TestSendConcurrent(t *testing.T) {
	t.Parallel()
	srv := webpushtest.NewServer(t)
	c := newClient(t, srv, webpush.Options{})
	n := push.Notification{Title: "t", Body: "b"}.Prepared()
	subs := make([]webpushtest.Subscription, 40)
	for i := range subs {
		subs[i] = srv.Subscribe()
	}
	errs := make(chan error, len(subs))
	for _, s := range subs {
		go func() { errs <- c.Send(t.Context(), web(s), n) }()
	}
	for range subs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range subs {
		if m := srv.MessagesFor(s.ID); len(m) != 1 || m[0].Body != "b" {
			t.Fatalf("%s got %v", s.ID, m)
		}
	}
}
