package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"time"
)

// VAPIDKey is the application server's P-256 key (RFC 8292).
type VAPIDKey struct {
	priv   *ecdsa.PrivateKey
	public string // base64url uncompressed point
}

// ParseVAPIDKey reads a PEM P-256 private key: "EC PRIVATE KEY" (SEC 1,
// what `openssl ecparam -name prime256v1 -genkey -noout` and
// `herald keys vapid` write) or "PRIVATE KEY" (PKCS #8).
func ParseVAPIDKey(keyPEM []byte) (*VAPIDKey, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, errors.New("webpush: VAPID key is not PEM")
	}
	var priv *ecdsa.PrivateKey
	switch block.Type {
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("webpush: VAPID key: %w", err)
		}
		priv = k
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("webpush: VAPID key: %w", err)
		}
		ec, ok := k.(*ecdsa.PrivateKey)
		if !ok {
			return nil, errors.New("webpush: VAPID key is not an EC key")
		}
		priv = ec
	default:
		return nil, fmt.Errorf("webpush: VAPID key is a PEM %q block, want EC PRIVATE KEY or PRIVATE KEY", block.Type)
	}
	if priv.Curve != elliptic.P256() {
		return nil, errors.New("webpush: VAPID key is not on P-256")
	}
	pub, err := priv.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("webpush: VAPID key: %w", err)
	}
	return &VAPIDKey{priv: priv, public: base64.RawURLEncoding.EncodeToString(pub.Bytes())}, nil
}

// GenerateVAPIDKey returns a new P-256 key as PEM ("EC PRIVATE KEY").
func GenerateVAPIDKey() ([]byte, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(priv)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// Public is the public key, base64url of the uncompressed point (the k=
// of the Authorization header and the browser's applicationServerKey).
func (k *VAPIDKey) Public() string { return k.public }

// SignJWT is the VAPID token for a push service: an ES256 JWT with the
// push service's origin as aud, exp and the operator's contact as sub.
func (k *VAPIDKey) SignJWT(aud, sub string, exp time.Time) (string, error) {
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{aud, exp.Unix(), sub})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, k.priv, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // JWS ES256: r and s, 32 bytes each
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig), nil
}
