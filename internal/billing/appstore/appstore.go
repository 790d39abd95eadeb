// Package appstore verifies and decodes what the App Store says about
// subscriptions: App Store Server Notifications V2, the StoreKit 2 signed
// transactions an app posts, and the App Store Server API's answers to Get
// All Subscription Statuses (each becomes a subscriptions.Observation) and
// Get Transaction History (its refunded and revoked transactions).
//
// Every payload is a JWS (ES256) whose x5c header carries the signing
// chain (leaf, intermediate, root), which must verify to Apple Root CA -
// G3 (or the configured roots).
package appstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	_ "embed"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// API bases of the App Store Server API.
const (
	ProductionAPI = "https://api.storekit.itunes.apple.com"
	SandboxAPI    = "https://api.storekit-sandbox.itunes.apple.com"
)

// Environments the App Store signs into its payloads.
const (
	Production = "Production"
	Sandbox    = "Sandbox"
)

// appleRootG3 is Apple Root CA - G3 (SHA-256 fingerprint
// 63:34:3A:BF:B8:9A:6A:03:EB:B5:7E:9B:3F:5F:A7:BE:7C:4F:5C:75:6F:30:17:B3:A8:C4:88:C3:65:3E:91:79),
// from https://www.apple.com/certificateauthority/.
//
//go:embed AppleRootCA-G3.pem
var appleRootG3 []byte

// Errors of the App Store Server API besides billing.ErrUpstream.
var (
	// ErrNotConfigured: Statuses and RevokedHistory need an in-app purchase key.
	ErrNotConfigured = errors.New("appstore: the App Store Server API is not configured (no in-app purchase key)")
	// ErrUnauthorized: the API refused the bearer token (wrong key, key id
	// or issuer).
	ErrUnauthorized = errors.New("appstore: the App Store Server API refused the key")
	// ErrNotFound: the API knows no such transaction, or its answer names
	// no subscription with the original transaction id asked for.
	ErrNotFound = errors.New("appstore: no such transaction")
)

// Config configures a Client.
type Config struct {
	// BundleID is the app's bundle id; a payload for another is
	// billing.ErrMisaddressed.
	BundleID string
	// Environment is "Production" or "Sandbox"; a payload of another
	// environment is billing.ErrMisaddressed. "" accepts both.
	Environment string
	// Roots are the trust anchors; nil is Apple Root CA - G3.
	Roots *x509.CertPool

	// The App Store Server API (reconciliation). Optional: without
	// PrivateKey, Statuses and RevokedHistory answer ErrNotConfigured.
	IssuerID, KeyID string
	// PrivateKey is the in-app purchase key (ParsePrivateKey reads its .p8).
	PrivateKey *ecdsa.PrivateKey
	// APIBase defaults to ProductionAPI (SandboxAPI when Environment is
	// Sandbox).
	APIBase    string
	HTTPClient *http.Client
	// Now is the clock for certificate validity and the token's iat;
	// nil is time.Now.
	Now func() time.Time
}

// Client verifies App Store payloads and calls the App Store Server API.
type Client struct {
	cfg   Config
	roots *x509.CertPool
	base  string
	http  *http.Client
	now   func() time.Time
}

// New checks cfg and returns a Client.
func New(cfg Config) (*Client, error) {
	if cfg.BundleID == "" {
		return nil, errors.New("appstore: BundleID is required")
	}
	switch cfg.Environment {
	case "", Production, Sandbox:
	default:
		return nil, fmt.Errorf("appstore: Environment %q is neither %q nor %q", cfg.Environment, Production, Sandbox)
	}
	c := &Client{cfg: cfg, roots: cfg.Roots, base: strings.TrimRight(cfg.APIBase, "/"), http: cfg.HTTPClient, now: cfg.Now}
	if c.roots == nil {
		c.roots = x509.NewCertPool()
		if !c.roots.AppendCertsFromPEM(appleRootG3) {
			return nil, errors.New("appstore: the embedded Apple Root CA - G3 does not parse")
		}
	}
	if c.base == "" {
		c.base = ProductionAPI
		if cfg.Environment == Sandbox {
			c.base = SandboxAPI
		}
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second}
	}
	if c.now == nil {
		c.now = time.Now
	}
	if cfg.PrivateKey != nil {
		if cfg.PrivateKey.Curve != elliptic.P256() {
			return nil, errors.New("appstore: the in-app purchase key is not a P-256 key")
		}
		if cfg.IssuerID == "" || cfg.KeyID == "" {
			return nil, errors.New("appstore: IssuerID and KeyID are required with PrivateKey")
		}
	}
	return c, nil
}

// ParsePrivateKey reads an in-app purchase key as App Store Connect
// hands it out (a .p8 file: PKCS#8 PEM of a P-256 key).
func ParsePrivateKey(pemBytes []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("appstore: the private key is not PEM")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("appstore: the private key: %w", err)
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok || ek.Curve != elliptic.P256() {
		return nil, errors.New("appstore: the private key is not an ECDSA P-256 key")
	}
	return ek, nil
}
