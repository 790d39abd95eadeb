package apns_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/herald-vpn/herald/internal/push/apns"
	"github.com/herald-vpn/herald/internal/push/apns/apnstest"
)

func TestCheckKey(t *testing.T) {
	t.Parallel()
	good, _, err := apnstest.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	// A P-384 key parses as PKCS#8 but cannot sign ES256.
	k384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	der, _ := x509.MarshalPKCS8PrivateKey(k384)
	p384 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	tests := []struct {
		name          string
		key           []byte
		keyID, teamID string
		ok            bool
	}{
		{"valid", good, "KEYID12345", "TEAMID1234", true},
		{"not PEM", []byte("not a key"), "KEYID12345", "TEAMID1234", false},
		{"no key id", good, "", "TEAMID1234", false},
		{"P-384", p384, "KEYID12345", "TEAMID1234", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := apns.CheckKey(tt.key, tt.keyID, tt.teamID)
			if (err == nil) != tt.ok {
				t.Fatalf("CheckKey = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
