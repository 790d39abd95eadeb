package webpush

import (
	"bytes"
	"crypto/ecdh"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of a subscription.
const (
	// MaxEndpointLen bounds the endpoint URL (browsers' are 150–400 bytes),
	// so the canonical subscription stays far below the devices' token
	// limit and the stores' index limits.
	MaxEndpointLen = 1024
	// MaxSubscriptionLen bounds the JSON ParseSubscription reads.
	MaxSubscriptionLen = 4096

	p256dhLen = 65 // uncompressed P-256 point
	authLen   = 16
)

// Subscription is a browser's PushSubscription: where to send and the
// keys to encrypt for.
type Subscription struct {
	Endpoint string // absolute https URL of the push service
	P256dh   []byte // the browser's P-256 public key, uncompressed (65 bytes)
	Auth     []byte // the authentication secret (16 bytes)

	pub *ecdh.PublicKey
}

// ParseOption changes what ParseSubscription accepts.
type ParseOption func(*parseConfig)

type parseConfig struct{ loopbackHTTP bool }

// AllowLoopbackHTTP admits a plain http endpoint on a loopback host
// (127.0.0.0/8, ::1, localhost): a fake push service in tests, a local
// one in development. https stays required for every other host.
func AllowLoopbackHTTP() ParseOption { return func(c *parseConfig) { c.loopbackHTTP = true } }

// subscriptionJSON is PushSubscription.toJSON(); other members
// (expirationTime) are ignored.
type subscriptionJSON struct {
	Endpoint *string `json:"endpoint"`
	Keys     *struct {
		P256dh *string `json:"p256dh"`
		Auth   *string `json:"auth"`
	} `json:"keys"`
}

// ParseSubscription decodes and checks the PushSubscription JSON a
// browser gives (PushSubscription.toJSON()):
//
//	{"endpoint":"https://…","expirationTime":null,"keys":{"p256dh":"…","auth":"…"}}
//
// The endpoint must be an absolute https URL with a host, no user
// information or fragment, no spaces or control characters, at most
// MaxEndpointLen bytes; p256dh a base64url (padded or not) uncompressed
// P-256 point on the curve; auth base64url of 16 bytes. The error says
// which member is wrong, in words fit for an API client.
func ParseSubscription(s string, opts ...ParseOption) (Subscription, error) {
	var cfg parseConfig
	for _, o := range opts {
		o(&cfg)
	}
	if len(s) > MaxSubscriptionLen {
		return Subscription{}, fmt.Errorf("subscription longer than %d bytes", MaxSubscriptionLen)
	}
	dec := json.NewDecoder(strings.NewReader(s))
	var j subscriptionJSON
	if err := dec.Decode(&j); err != nil {
		return Subscription{}, errors.New("not a PushSubscription JSON object")
	}
	if dec.More() {
		return Subscription{}, errors.New("text after the JSON object")
	}
	if j.Endpoint == nil {
		return Subscription{}, errors.New("endpoint is required")
	}
	if err := checkEndpoint(*j.Endpoint, cfg); err != nil {
		return Subscription{}, err
	}
	if j.Keys == nil || j.Keys.P256dh == nil || j.Keys.Auth == nil {
		return Subscription{}, errors.New("keys.p256dh and keys.auth are required")
	}
	p256dh, err := decodeBase64URL(*j.Keys.P256dh)
	if err != nil || len(p256dh) != p256dhLen {
		return Subscription{}, errors.New("keys.p256dh must be a base64url uncompressed P-256 public key (65 bytes)")
	}
	pub, err := ecdh.P256().NewPublicKey(p256dh)
	if err != nil {
		return Subscription{}, errors.New("keys.p256dh is not a point on P-256")
	}
	auth, err := decodeBase64URL(*j.Keys.Auth)
	if err != nil || len(auth) != authLen {
		return Subscription{}, errors.New("keys.auth must be base64url of 16 bytes")
	}
	return Subscription{Endpoint: *j.Endpoint, P256dh: p256dh, Auth: auth, pub: pub}, nil
}

func checkEndpoint(e string, cfg parseConfig) error {
	if e == "" {
		return errors.New("endpoint is required")
	}
	if len(e) > MaxEndpointLen {
		return fmt.Errorf("endpoint longer than %d bytes", MaxEndpointLen)
	}
	if !utf8.ValidString(e) || strings.IndexFunc(e, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return errors.New("endpoint has spaces or control characters")
	}
	u, err := url.Parse(e)
	if err != nil || !u.IsAbs() || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return errors.New("endpoint must be an absolute https URL")
	}
	if u.User != nil || u.Fragment != "" || strings.Contains(e, "#") {
		return errors.New("endpoint must have no user information or fragment")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && cfg.loopbackHTTP && isLoopback(u.Hostname()):
	default:
		return errors.New("endpoint must be an https URL")
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// decodeBase64URL decodes base64url with or without its padding.
func decodeBase64URL(s string) ([]byte, error) {
	return base64.RawURLEncoding.Strict().DecodeString(strings.TrimRight(s, "="))
}

// String is the subscription's canonical JSON, the device token Herald
// stores: the same subscription always gives the same text, whatever the
// order of the members, the padding of the keys or the extra members the
// browser sent.
//
//	{"endpoint":"https://…","keys":{"p256dh":"…","auth":"…"}}
func (s Subscription) String() string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(struct {
		Endpoint string `json:"endpoint"`
		Keys     struct {
			P256dh string `json:"p256dh"`
			Auth   string `json:"auth"`
		} `json:"keys"`
	}{Endpoint: s.Endpoint, Keys: struct {
		P256dh string `json:"p256dh"`
		Auth   string `json:"auth"`
	}{base64.RawURLEncoding.EncodeToString(s.P256dh), base64.RawURLEncoding.EncodeToString(s.Auth)}})
	return strings.TrimSuffix(b.String(), "\n")
}

// CanonicalSubscription is ParseSubscription's subscription as String
// writes it: what a device stores as its push token.
func CanonicalSubscription(s string, opts ...ParseOption) (string, error) {
	sub, err := ParseSubscription(s, opts...)
	if err != nil {
		return "", err
	}
	return sub.String(), nil
}
