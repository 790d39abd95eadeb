package playfake_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/herald-vpn/herald/internal/billing/play/playfake"
)

func TestDiscovery(t *testing.T) {
	f := playfake.New(t, "com.herald.vpn")
	resp, err := f.Client().Get(f.URL() + "/.well-known/openid-configuration")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Issuer  string `json:"issuer"`
		JWKSURI string `json:"jwks_uri"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("discovery: %d, %v", resp.StatusCode, err)
	}
	if doc.Issuer != f.URL() || doc.JWKSURI != f.JWKSURL() {
		t.Fatalf("discovery %+v", doc)
	}
}

func TestAPIRequiresAccessToken(t *testing.T) {
	f := playfake.New(t, "com.herald.vpn")
	req, _ := http.NewRequest(http.MethodGet, f.URL()+"/androidpublisher/v3/applications/com.herald.vpn/purchases/subscriptionsv2/tokens/t", nil)
	req.Header.Set("Authorization", "Bearer made-up")
	resp, err := f.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", resp.StatusCode)
	}
}
