package appstorefake

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"math/big"
	"testing"
	"time"
)

// Apple's marker extensions (value ASN.1 NULL, as in Apple's
// certificates): the App Store signing leaf and the WWDR intermediate.
var (
	oidLeaf         = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 11, 1}
	oidIntermediate = asn1.ObjectIdentifier{1, 2, 840, 113635, 100, 6, 2, 1}
)

// Signer picks the certificates and key the fake signs with.
type Signer int

// Signers.
const (
	// Apple: the fake's leaf, intermediate and root, as the App Store.
	Apple Signer = iota
	// ExpiredLeaf: the fake's chain, with a leaf whose validity ended.
	ExpiredLeaf
	// ForeignRoot: a complete chain with Apple's markers to another root.
	ForeignRoot
	// ForeignKey: the fake's chain in x5c, signed by another key.
	ForeignKey
	// NoMarkers: a leaf without Apple's marker, issued by the fake's
	// intermediate.
	NoMarkers
)

// chain is what a signer puts in x5c and signs with.
type chain struct {
	x5c [][]byte
	key *ecdsa.PrivateKey
}

type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("appstorefake: key: %v", err)
	}
	return k
}

// issue makes a certificate; parent nil is self-signed.
func issue(t testing.TB, serial int64, cn string, parent *issuer, ca bool, marker asn1.ObjectIdentifier, from, until time.Time) *issuer {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(serial),
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"Herald appstorefake"}},
		NotBefore:             from,
		NotAfter:              until,
		BasicConstraintsValid: true,
		IsCA:                  ca,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}
	if ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	if marker != nil {
		tmpl.ExtraExtensions = []pkix.Extension{{Id: marker, Value: []byte{0x05, 0x00}}}
	}
	signer, parentCert := key, tmpl
	if parent != nil {
		signer, parentCert = parent.key, parent.cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, &key.PublicKey, signer)
	if err != nil {
		t.Fatalf("appstorefake: certificate %s: %v", cn, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("appstorefake: certificate %s: %v", cn, err)
	}
	return &issuer{cert: cert, key: key}
}

// pki is the fake's root, and a chain for each Signer.
type pki struct {
	root   *x509.Certificate
	chains map[Signer]chain
}

func newPKI(t testing.TB, now time.Time) pki {
	from, until := now.Add(-24*time.Hour), now.Add(10*365*24*time.Hour)
	root := issue(t, 1, "Fake Apple Root CA - G3", nil, true, nil, from, until)
	inter := issue(t, 2, "Fake Apple Worldwide Developer Relations CA - G6", root, true, oidIntermediate, from, until)
	leaf := issue(t, 3, "Fake Prod ECC Mac App Store and iTunes Store Receipt Signing", inter, false, oidLeaf, from, until)
	expired := issue(t, 4, "Fake expired receipt signing", inter, false, oidLeaf, now.Add(-48*time.Hour), now.Add(-time.Hour))
	unmarked := issue(t, 5, "Fake unmarked signing", inter, false, nil, from, until)
	otherRoot := issue(t, 6, "Foreign Root", nil, true, nil, from, until)
	otherInter := issue(t, 7, "Foreign intermediate", otherRoot, true, oidIntermediate, from, until)
	otherLeaf := issue(t, 8, "Foreign leaf", otherInter, false, oidLeaf, from, until)
	x5c := func(certs ...*issuer) [][]byte {
		out := make([][]byte, len(certs))
		for i, c := range certs {
			out[i] = c.cert.Raw
		}
		return out
	}
	return pki{
		root: root.cert,
		chains: map[Signer]chain{
			Apple:       {x5c(leaf, inter, root), leaf.key},
			ExpiredLeaf: {x5c(expired, inter, root), expired.key},
			ForeignRoot: {x5c(otherLeaf, otherInter, otherRoot), otherLeaf.key},
			ForeignKey:  {x5c(leaf, inter, root), newKey(t)},
			NoMarkers:   {x5c(unmarked, inter, root), unmarked.key},
		},
	}
}
