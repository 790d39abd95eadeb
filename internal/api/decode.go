package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/herald-vpn/herald/internal/apperr"
)

// MaxBodyBytes caps every request body.
const MaxBodyBytes = 1 << 20

// ReadBody reads a JSON request body under the cap: 413 PAYLOAD_TOO_LARGE
// above it, VALIDATION_ERROR for a wrong content type.
func ReadBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, validation("body", "content type application/json", ct)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, apperr.Newf(apperr.PayloadTooLarge, "The request body is larger than %d bytes.", MaxBodyBytes).With("limit", MaxBodyBytes)
		}
		return nil, validation("body", "readable request body", "")
	}
	return body, nil
}

// DecodeJSON reads the body into dst, refusing unknown fields, trailing
// data and wrong types with VALIDATION_ERROR naming the field.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	body, err := ReadBody(w, r)
	if err != nil {
		return err
	}
	return Unmarshal(body, dst)
}

// Unmarshal decodes one JSON object strictly.
func Unmarshal(body []byte, dst any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return validation("body", "a JSON object", "empty body")
	}
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if dec.More() {
		return validation("body", "a single JSON object", "trailing data")
	}
	return nil
}

func decodeError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		field := typeErr.Field
		if field == "" {
			field = "body"
		}
		return validation(field, "type "+jsonType(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &syntaxErr):
		return validation("body", "valid JSON", fmt.Sprintf("syntax error at byte %d", syntaxErr.Offset))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return validation("body", "valid JSON", "truncated JSON")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		field := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return validation(field, "known field", "unknown field")
	}
	return validation("body", "valid JSON", "undecodable")
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "map", "struct":
		return "object"
	case "slice", "array":
		return "array"
	}
	return "number"
}

func validation(field, constraint, received string) *apperr.Error {
	return apperr.Invalid(field, constraint, received)
}

// Required refuses an empty field with VALIDATION_ERROR naming it.
func Required(field, value string) error {
	if strings.TrimSpace(value) == "" {
		return validation(field, "required", "empty")
	}
	return nil
}
