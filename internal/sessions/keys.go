package sessions

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// Key is one Ed25519 key of the signing set. Private is nil for keys that
// only verify (kept for rotation: tokens they signed stay valid until they
// expire).
type Key struct {
	ID      string
	Public  ed25519.PublicKey
	Private ed25519.PrivateKey
}

// KeySet holds the active signing key and every key that may verify.
type KeySet struct {
	active Key
	byID   map[string]Key
}

// NewKeySet returns a set signing with active and verifying with active and
// the others.
func NewKeySet(active Key, verifyOnly ...Key) (*KeySet, error) {
	if active.Private == nil {
		return nil, errors.New("the active key needs its private part")
	}
	ks := &KeySet{active: active, byID: map[string]Key{active.ID: active}}
	for _, k := range verifyOnly {
		if _, dup := ks.byID[k.ID]; dup {
			return nil, fmt.Errorf("key id %q appears twice", k.ID)
		}
		ks.byID[k.ID] = k
	}
	return ks, nil
}

// KeyFromSeed derives a key from a 32-byte Ed25519 seed; its id is a hash
// of the public key, so every replica names it the same.
func KeyFromSeed(seed []byte) (Key, error) {
	if len(seed) != ed25519.SeedSize {
		return Key{}, fmt.Errorf("an Ed25519 seed is %d bytes, not %d", ed25519.SeedSize, len(seed))
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	sum := sha256.Sum256(pub)
	return Key{ID: base64.RawURLEncoding.EncodeToString(sum[:12]), Public: pub, Private: priv}, nil
}

// jwk is the JSON Web Key form (RFC 8037 for OKP/Ed25519). "active" is
// Herald's own member marking the signing key of a file.
type jwk struct {
	Kty    string `json:"kty"`
	Crv    string `json:"crv"`
	Kid    string `json:"kid"`
	X      string `json:"x"`
	D      string `json:"d,omitempty"`
	Use    string `json:"use,omitempty"`
	Alg    string `json:"alg,omitempty"`
	Active bool   `json:"active,omitempty"`
}

// LoadKeySetFile reads a JWK set: Ed25519 keys, exactly one with
// "active": true and its private part "d"; the others verify only.
func LoadKeySetFile(path string) (*KeySet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKeySet(data)
}

// ParseKeySet parses a JWK set document.
func ParseKeySet(data []byte) (*KeySet, error) {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("JWK set: %w", err)
	}
	var active *Key
	var others []Key
	for i, j := range doc.Keys {
		if j.Kty != "OKP" || j.Crv != "Ed25519" {
			return nil, fmt.Errorf("JWK set: key %d: only OKP/Ed25519 (EdDSA) keys are supported", i)
		}
		if j.Kid == "" {
			return nil, fmt.Errorf("JWK set: key %d has no kid", i)
		}
		x, err := base64.RawURLEncoding.DecodeString(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return nil, fmt.Errorf("JWK set: key %q: bad x", j.Kid)
		}
		k := Key{ID: j.Kid, Public: ed25519.PublicKey(x)}
		if j.D != "" {
			d, err := base64.RawURLEncoding.DecodeString(j.D)
			if err != nil || len(d) != ed25519.SeedSize {
				return nil, fmt.Errorf("JWK set: key %q: bad d", j.Kid)
			}
			k.Private = ed25519.NewKeyFromSeed(d)
			if !k.Private.Public().(ed25519.PublicKey).Equal(k.Public) {
				return nil, fmt.Errorf("JWK set: key %q: d does not match x", j.Kid)
			}
		}
		if j.Active {
			if active != nil {
				return nil, errors.New("JWK set: more than one key is marked active")
			}
			if k.Private == nil {
				return nil, fmt.Errorf("JWK set: active key %q has no private part d", j.Kid)
			}
			kk := k
			active = &kk
			continue
		}
		k.Private = nil // only the active key signs
		others = append(others, k)
	}
	if active == nil {
		return nil, errors.New(`JWK set: no key is marked "active": true`)
	}
	return NewKeySet(*active, others...)
}

// ActiveID is the kid of the key that signs.
func (ks *KeySet) ActiveID() string { return ks.active.ID }

// VerifyOnly counts the keys kept only to verify tokens signed earlier.
func (ks *KeySet) VerifyOnly() int { return len(ks.byID) - 1 }

// PublicJWKS is the document served at /.well-known/jwks.json.
func (ks *KeySet) PublicJWKS() []byte {
	var doc struct {
		Keys []jwk `json:"keys"`
	}
	add := func(k Key) {
		doc.Keys = append(doc.Keys, jwk{Kty: "OKP", Crv: "Ed25519", Kid: k.ID, X: base64.RawURLEncoding.EncodeToString(k.Public), Use: "sig", Alg: "EdDSA"})
	}
	add(ks.active)
	for id, k := range ks.byID {
		if id != ks.active.ID {
			add(k)
		}
	}
	b, _ := json.Marshal(doc)
	return b
}

// JWK renders a key as a private JWK, for `herald keys generate`.
func (k Key) JWK(active bool) map[string]any {
	m := map[string]any{"kty": "OKP", "crv": "Ed25519", "kid": k.ID, "x": base64.RawURLEncoding.EncodeToString(k.Public), "use": "sig", "alg": "EdDSA"}
	if k.Private != nil {
		m["d"] = base64.RawURLEncoding.EncodeToString(k.Private.Seed())
	}
	if active {
		m["active"] = true
	}
	return m
}
