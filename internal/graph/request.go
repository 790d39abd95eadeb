package graph

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
)

// MaxQueryBytes caps the GraphQL document itself (the body cap is larger
// because variables may carry data).
const MaxQueryBytes = 64 << 10

// Request is the body of POST /graphql.
type Request struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables"`
	OperationName string         `json:"operationName"`
}

// DecodeRequest parses a POST /graphql body. Every refusal is an
// application error with a code; nothing it is given makes it panic.
func DecodeRequest(body []byte) (Request, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return Request{}, apperr.Newf(apperr.ValidationError, "The body must be a JSON object with a query string.").
			With("field", "body").With("constraint", "JSON object {query, variables?, operationName?}").With("received", "invalid JSON")
	}
	if dec.More() {
		return Request{}, apperr.Newf(apperr.ValidationError, "The body must hold a single JSON object.").
			With("field", "body").With("constraint", "a single JSON object").With("received", "trailing data")
	}
	if strings.TrimSpace(req.Query) == "" {
		return Request{}, apperr.Newf(apperr.ValidationError, "The query is missing.").
			With("field", "query").With("constraint", "required").With("received", "empty")
	}
	if len(req.Query) > MaxQueryBytes {
		return Request{}, apperr.Newf(apperr.QueryTooComplex, "The query is longer than %d bytes.", MaxQueryBytes).With("limit", MaxQueryBytes)
	}
	req.Variables = normalizeNumbers(req.Variables).(map[string]any)
	return req, nil
}

// normalizeNumbers turns json.Number into int64 or float64, which is what
// gqlgen's scalars expect, while keeping big integers exact.
func normalizeNumbers(v any) any {
	switch t := v.(type) {
	case map[string]any:
		if t == nil {
			return map[string]any{}
		}
		for k, e := range t {
			t[k] = normalizeNumbers(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = normalizeNumbers(e)
		}
		return t
	case json.Number:
		if i, err := t.Int64(); err == nil {
			return i
		}
		if f, err := t.Float64(); err == nil {
			return f
		}
		return t.String()
	case nil:
		return nil
	}
	return v
}
