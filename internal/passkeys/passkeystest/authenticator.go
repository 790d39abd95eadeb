// Package passkeystest is a software WebAuthn authenticator for tests: it
// answers navigator.credentials.create and .get as a browser and a
// platform authenticator would, in the real wire format (CBOR
// attestation objects, COSE keys, ECDSA P-256 signatures over the
// authenticator data and the client data's hash), with attestation
// "none" or "packed" self attestation. Its knobs make the answers tests
// need to see refused: another origin, another relying party id, a
// signature counter that goes backwards.
package passkeystest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/fxamacker/cbor/v2"
)

// Attestation formats the authenticator answers registrations with.
const (
	FormatNone   = "none"
	FormatPacked = "packed" // self attestation: signed by the credential's own key
)

// Authenticator flags (WebAuthn §6.1).
const (
	flagUP = 0x01
	flagUV = 0x04
	flagBE = 0x08
	flagBS = 0x10
	flagAT = 0x40
)

// Authenticator is a software authenticator holding discoverable
// credentials.
type Authenticator struct {
	// Format is the attestation format of registrations (FormatNone when
	// empty).
	Format string
	// AAGUID names the model; zero unless set.
	AAGUID [16]byte
	// Synced makes credentials backup eligible and backed up.
	Synced bool

	mu    sync.Mutex
	creds []*Credential
}

// Credential is one credential the authenticator holds.
type Credential struct {
	ID         []byte
	RPID       string
	UserHandle []byte
	Key        *ecdsa.PrivateKey
	// Counter is the signature counter: each assertion adds one and
	// signs the result.
	Counter uint32
}

// Ceremony changes what the authenticator and its client answer, to
// test the server's refusals.
type Ceremony struct {
	// Origin is the client's origin (clientDataJSON.origin).
	Origin string
	// RPID overrides the relying party id hashed into the authenticator
	// data (the options' otherwise).
	RPID string
	// CredentialID picks the credential of an assertion (the last one
	// registered for the relying party otherwise).
	CredentialID []byte
	// Counter, when not nil, is the signature counter the assertion
	// signs (and the credential keeps).
	Counter *uint32
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// decodeB64 reads base64url with or without padding.
func decodeB64(s string) ([]byte, error) {
	if b, err := base64.RawURLEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.URLEncoding.DecodeString(s)
}

var ctap2 = func() cbor.EncMode {
	m, err := cbor.CTAP2EncOptions().EncMode()
	if err != nil {
		panic(err)
	}
	return m
}()

// coseKey is the COSE_Key of an ECDSA P-256 public key (ES256).
func coseKey(pub *ecdsa.PublicKey) ([]byte, error) {
	raw, err := pub.Bytes() // 0x04 || X || Y
	if err != nil {
		return nil, err
	}
	return ctap2.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: raw[1:33], -3: raw[33:65]})
}

func (a *Authenticator) flags() byte {
	f := byte(flagUP | flagUV)
	if a.Synced {
		f |= flagBE | flagBS
	}
	return f
}

func authData(rpID string, flags byte, counter uint32, attested []byte) []byte {
	h := sha256.Sum256([]byte(rpID))
	out := append([]byte{}, h[:]...)
	out = append(out, flags)
	out = binary.BigEndian.AppendUint32(out, counter)
	return append(out, attested...)
}

func clientData(typ, challenge, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": origin, "crossOrigin": false})
	return b
}

func str(m map[string]any, keys ...string) string {
	var v any = m
	for _, k := range keys {
		mm, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = mm[k]
	}
	s, _ := v.(string)
	return s
}

// Create answers navigator.credentials.create({publicKey: options}):
// the PublicKeyCredential as PublicKeyCredential.toJSON() writes it, and
// the credential made.
func (a *Authenticator) Create(options map[string]any, c Ceremony) (map[string]any, *Credential, error) {
	challenge, rpID := str(options, "challenge"), str(options, "rp", "id")
	handle, err := decodeB64(str(options, "user", "id"))
	if err != nil || challenge == "" || rpID == "" {
		return nil, nil, fmt.Errorf("passkeystest: creation options without challenge, rp.id or user.id: %v", options)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	id := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return nil, nil, err
	}
	cred := &Credential{ID: id, RPID: rpID, UserHandle: handle, Key: key}
	pub, err := coseKey(&key.PublicKey)
	if err != nil {
		return nil, nil, err
	}
	attested := append([]byte{}, a.AAGUID[:]...)
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(id)))
	attested = append(attested, id...)
	attested = append(attested, pub...)
	hashed := rpID
	if c.RPID != "" {
		hashed = c.RPID
	}
	ad := authData(hashed, a.flags()|flagAT, 0, attested)
	cdj := clientData("webauthn.create", challenge, c.Origin)
	format := a.Format
	if format == "" {
		format = FormatNone
	}
	stmt := map[string]any{}
	if format == FormatPacked {
		h := sha256.Sum256(cdj)
		sig, err := sign(key, ad, h[:])
		if err != nil {
			return nil, nil, err
		}
		stmt = map[string]any{"alg": -7, "sig": sig}
	}
	obj, err := ctap2.Marshal(map[string]any{"fmt": format, "attStmt": stmt, "authData": ad})
	if err != nil {
		return nil, nil, err
	}
	a.mu.Lock()
	a.creds = append(a.creds, cred)
	a.mu.Unlock()
	return map[string]any{
		"id": b64(id), "rawId": b64(id), "type": "public-key", "authenticatorAttachment": "platform",
		"response": map[string]any{
			"clientDataJSON":    b64(cdj),
			"attestationObject": b64(obj),
			"transports":        []string{"internal", "hybrid"},
		},
		"clientExtensionResults": map[string]any{},
	}, cred, nil
}

func sign(key *ecdsa.PrivateKey, authData, clientDataHash []byte) ([]byte, error) {
	h := sha256.Sum256(append(append([]byte{}, authData...), clientDataHash...))
	return ecdsa.SignASN1(rand.Reader, key, h[:])
}

// Get answers navigator.credentials.get({publicKey: options}): the
// PublicKeyCredential as toJSON() writes it, signed by a credential of
// the options' relying party (one they allow, when they list some).
func (a *Authenticator) Get(options map[string]any, c Ceremony) (map[string]any, error) {
	challenge, rpID := str(options, "challenge"), str(options, "rpId")
	if challenge == "" || rpID == "" {
		return nil, fmt.Errorf("passkeystest: request options without challenge or rpId: %v", options)
	}
	var allowed [][]byte
	if list, ok := options["allowCredentials"].([]any); ok {
		for _, d := range list {
			m, _ := d.(map[string]any)
			id, err := decodeB64(str(m, "id"))
			if err != nil {
				return nil, err
			}
			allowed = append(allowed, id)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	var cred *Credential
	for _, cr := range a.creds {
		if cr.RPID != rpID {
			continue
		}
		if c.CredentialID != nil && string(cr.ID) != string(c.CredentialID) {
			continue
		}
		if len(allowed) > 0 && !containsID(allowed, cr.ID) {
			continue
		}
		cred = cr
	}
	if cred == nil {
		return nil, errors.New("passkeystest: no credential for these options (NotAllowedError)")
	}
	cred.Counter++
	if c.Counter != nil {
		cred.Counter = *c.Counter
	}
	hashed := rpID
	if c.RPID != "" {
		hashed = c.RPID
	}
	ad := authData(hashed, a.flags(), cred.Counter, nil)
	cdj := clientData("webauthn.get", challenge, c.Origin)
	h := sha256.Sum256(cdj)
	sig, err := sign(cred.Key, ad, h[:])
	if err != nil {
		return nil, err
	}
	return map[string]any{
		"id": b64(cred.ID), "rawId": b64(cred.ID), "type": "public-key", "authenticatorAttachment": "platform",
		"response": map[string]any{
			"clientDataJSON":    b64(cdj),
			"authenticatorData": b64(ad),
			"signature":         b64(sig),
			"userHandle":        b64(cred.UserHandle),
		},
		"clientExtensionResults": map[string]any{},
	}, nil
}

func containsID(ids [][]byte, id []byte) bool {
	for _, x := range ids {
		if string(x) == string(id) {
			return true
		}
	}
	return false
}
