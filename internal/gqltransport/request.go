package gqltransport

import (
	"bytes"
	"encoding/json"
	"math"
	"net/url"
	"strings"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

// MaxQueryBytes caps the GraphQL document itself (the body cap is larger
// because variables may carry data).
const MaxQueryBytes = 64 << 10

// Request is the body of POST /graphql, or the query parameters of
// GET /graphql.
type Request struct {
	Query         string         `json:"query"`
	Variables     map[string]any `json:"variables"`
	OperationName string         `json:"operationName"`
	// Extensions is accepted, as the GraphQL-over-HTTP spec asks, and
	// otherwise unused.
	Extensions map[string]any `json:"extensions"`
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
	if !api.AtEnd(dec) {
		return Request{}, apperr.Newf(apperr.ValidationError, "The body must hold a single JSON object.").
			With("field", "body").With("constraint", "a single JSON object").With("received", "trailing data")
	}
	return req.checked()
}

// RequestFromQuery reads the parameters of GET /graphql: query,
// operationName, and variables and extensions as JSON objects.
func RequestFromQuery(rawQuery string) (Request, error) {
	values, err := url.ParseQuery(rawQuery)
	if err != nil {
		return Request{}, apperr.Invalid("query string", "URL-encoded parameters", "malformed")
	}
	req := Request{Query: values.Get("query"), OperationName: values.Get("operationName")}
	for _, p := range []struct {
		name string
		dst  *map[string]any
	}{{"variables", &req.Variables}, {"extensions", &req.Extensions}} {
		raw := values.Get(p.name)
		if raw == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(p.dst); err != nil || !api.AtEnd(dec) {
			return Request{}, apperr.Invalid(p.name, "a JSON object", "not a JSON object")
		}
	}
	return req.checked()
}

// checked refuses a request without a query or with one over
// MaxQueryBytes, and normalizes its variables.
func (req Request) checked() (Request, error) {
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
// gqlgen's scalars expect, while keeping big integers exact. JSON has one
// number type: a whole number written with a fraction or an exponent (5.0,
// 1e3) is the integer it equals, as long as a float64 holds it exactly.
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
			if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
				return int64(f)
			}
			return f
		}
		return t.String()
	case nil:
		return nil
	}
	return v
}
