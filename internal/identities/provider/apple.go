package provider

import (
	"context"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// AppleConfig is what Herald needs to call Apple's token endpoints: the
// team id, the key id and its .p8 private key (ES256), and the client id
// the authorization codes were issued to (the app's bundle id). BaseURL
// is https://appleid.apple.com unless a test says otherwise.
type AppleConfig struct {
	BaseURL  string
	TeamID   string
	KeyID    string
	ClientID string
	Key      *ecdsa.PrivateKey
}

// ParseAppleKey reads a .p8 file's PKCS#8 EC private key.
func ParseAppleKey(pemBytes []byte) (*ecdsa.PrivateKey, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		return nil, errors.New("apple key: no PEM block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("apple key: %w", err)
	}
	ec, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("apple key: not an EC key")
	}
	return ec, nil
}

// Apple calls Apple's token and revocation endpoints.
type Apple struct {
	cfg    AppleConfig
	client *http.Client
	now    func() time.Time
}

// NewApple returns the client; nil when cfg has no key (the exchange and
// the revocation are then skipped).
func NewApple(cfg AppleConfig, client *http.Client, now func() time.Time) *Apple {
	if cfg.Key == nil || cfg.TeamID == "" || cfg.KeyID == "" || cfg.ClientID == "" {
		return nil
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = "https://appleid.apple.com"
	}
	return &Apple{cfg: cfg, client: client, now: now}
}

// clientSecret is the short-lived JWT Apple takes as client_secret.
func (a *Apple) clientSecret() (string, error) {
	now := a.now()
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.RegisteredClaims{
		Issuer:    a.cfg.TeamID,
		Subject:   a.cfg.ClientID,
		Audience:  jwt.ClaimStrings{"https://appleid.apple.com"},
		IssuedAt:  jwt.NewNumericDate(now),
		ExpiresAt: jwt.NewNumericDate(now.Add(5 * time.Minute)),
	})
	tok.Header["kid"] = a.cfg.KeyID
	return tok.SignedString(a.cfg.Key)
}

// Exchange trades an authorization code for Apple's refresh token (POST
// /auth/token, grant_type authorization_code), once.
func (a *Apple) Exchange(ctx context.Context, code string) (string, error) {
	var out struct {
		RefreshToken string `json:"refresh_token"`
		Error        string `json:"error"`
	}
	if err := a.post(ctx, "/auth/token", url.Values{"grant_type": {"authorization_code"}, "code": {code}}, &out); err != nil {
		return "", err
	}
	if out.RefreshToken == "" {
		return "", errors.New("apple token: no refresh_token in the answer")
	}
	return out.RefreshToken, nil
}

// Revoke revokes a refresh token (POST /auth/revoke), as Apple requires
// when the account is deleted.
func (a *Apple) Revoke(ctx context.Context, refreshToken string) error {
	return a.post(ctx, "/auth/revoke", url.Values{"token": {refreshToken}, "token_type_hint": {"refresh_token"}}, nil)
}

// ErrRefused is Apple answering 400 (invalid_grant, invalid_client…): a
// retry will not help.
var ErrRefused = errors.New("apple refused the request")

func (a *Apple) post(ctx context.Context, path string, form url.Values, out any) error {
	secret, err := a.clientSecret()
	if err != nil {
		return err
	}
	form.Set("client_id", a.cfg.ClientID)
	form.Set("client_secret", secret)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.cfg.BaseURL+path, strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("apple %s: %w", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode == http.StatusBadRequest:
		return fmt.Errorf("apple %s: %w: %s", path, ErrRefused, strings.TrimSpace(string(body)))
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("apple %s: HTTP %d", path, resp.StatusCode)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}
