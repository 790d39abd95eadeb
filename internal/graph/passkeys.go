package graph

import (
	"encoding/json"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/passkeys"
	"github.com/herald-vpn/herald/internal/view"
)

// passkeyOptions renders a passkey ceremony begun.
func passkeyOptions(b passkeys.Begun, err error) (*view.PasskeyOptions, error) {
	if err != nil {
		return nil, err
	}
	o, err := view.NewPasskeyOptions(b)
	if err != nil {
		return nil, err
	}
	return &o, nil
}

// credentialJSON is a credential argument (a JSON object) as the JSON
// the passkeys package reads.
func credentialJSON(c map[string]any) ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, apperr.Invalid("credential", "a PublicKeyCredential as JSON", "a value JSON cannot hold")
	}
	return b, nil
}
