// Package apidoc holds the OpenAPI 3.1 description of Herald's REST surface,
// apidoc/openapi.yaml, embedded in the binary. The YAML is the one source: the
// server serves it as JSON (GET /api/v1/openapi.json), converted once, and
// the tests validate the document itself and every REST answer of the
// end-to-end tests against it.
//
// The package lives beside the YAML because go:embed cannot reach into a
// parent directory; it is named apidoc, not api, so that it does not clash
// with internal/api where both are imported, and its folder is named as it
// is.
package apidoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/goccy/go-yaml"
)

// YAML is apidoc/openapi.yaml as written.
//
//go:embed openapi.yaml
var YAML []byte

// JSON returns the document as compact JSON, converted from YAML on the
// first call (map keys keep their order) and shared afterwards: callers must
// not modify it.
func JSON() ([]byte, error) { return converted() }

var converted = sync.OnceValues(func() ([]byte, error) { return toJSON(YAML) })

// toJSON converts a YAML document to compact JSON, keeping the order of
// keys.
func toJSON(doc []byte) ([]byte, error) {
	raw, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, fmt.Errorf("apidoc/openapi.yaml: %w", err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, fmt.Errorf("apidoc/openapi.yaml: converted to invalid JSON: %w", err)
	}
	return out.Bytes(), nil
}
