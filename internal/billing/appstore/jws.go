package appstore

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/herald-vpn/herald/internal/billing"
)

// maxJWS bounds a signed payload (a notification nests two JWS, each with
// its three certificates: about 15 KB).
const maxJWS = 256 << 10

// Apple's marker extensions: the leaf that signs App Store payloads and
// the Worldwide Developer Relations intermediate that issues it.
var (
	oidLeaf         = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 11, 1}
	oidIntermediate = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 2, 1}
)

type jwsHeader struct {
	Alg string   `json:"alg"`
	X5c []string `json:"x5c"`
}

// verify checks signed (a compact JWS) and returns its payload: the x5c
// chain verifies to c.roots at c.now(), the certificates carry Apple's
// markers, and the leaf's key signed the signing input with ES256.
func (c *Client) verify(signed string) ([]byte, error) {
	if len(signed) > maxJWS {
		return nil, fmt.Errorf("%w: a JWS of %d bytes", billing.ErrMalformed, len(signed))
	}
	parts := strings.Split(signed, ".")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%w: not a compact JWS", billing.ErrMalformed)
	}
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return nil, fmt.Errorf("%w: JWS header: %v", billing.ErrMalformed, err)
	}
	var h jwsHeader
	if err := json.Unmarshal(hb, &h); err != nil {
		return nil, fmt.Errorf("%w: JWS header: %v", billing.ErrMalformed, err)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, fmt.Errorf("%w: JWS payload: %v", billing.ErrMalformed, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return nil, fmt.Errorf("%w: JWS signature: %v", billing.ErrMalformed, err)
	}
	if h.Alg != "ES256" {
		return nil, fmt.Errorf("%w: alg %q, not ES256", billing.ErrForged, h.Alg)
	}
	if len(h.X5c) != 3 {
		return nil, fmt.Errorf("%w: x5c has %d certificates, not 3", billing.ErrForged, len(h.X5c))
	}
	certs := make([]*x509.Certificate, len(h.X5c))
	for i, s := range h.X5c {
		der, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, fmt.Errorf("%w: x5c[%d]: %v", billing.ErrMalformed, i, err)
		}
		if certs[i], err = x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("%w: x5c[%d]: %v", billing.ErrMalformed, i, err)
		}
	}
	leaf, inter := certs[0], certs[1]
	if !hasExtension(leaf, oidLeaf) || !hasExtension(inter, oidIntermediate) {
		return nil, fmt.Errorf("%w: the certificates are not Apple's App Store signing certificates", billing.ErrForged)
	}
	inters := x509.NewCertPool()
	inters.AddCert(inter)
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:         c.roots,
		Intermediates: inters,
		CurrentTime:   c.now(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageAny},
	}); err != nil {
		return nil, fmt.Errorf("%w: certificate chain: %v", billing.ErrForged, err)
	}
	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: the leaf's key is not ECDSA P-256", billing.ErrForged)
	}
	if len(sig) != 64 {
		return nil, fmt.Errorf("%w: an ES256 signature of %d bytes", billing.ErrForged, len(sig))
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(pub, digest[:], r, s) {
		return nil, fmt.Errorf("%w: bad signature", billing.ErrForged)
	}
	return payload, nil
}

func hasExtension(cert *x509.Certificate, oid asn1.ObjectIdentifier) bool {
	for _, e := range cert.Extensions {
		if e.Id.Equal(oid) {
			return true
		}
	}
	return false
}

// verifyJSON verifies signed and decodes its payload into v.
func (c *Client) verifyJSON(signed string, v any) error {
	payload, err := c.verify(signed)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("%w: JWS payload: %v", billing.ErrMalformed, err)
	}
	return nil
}
