package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

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
	if !AtEnd(dec) {
		return validation("body", "a single JSON object", "trailing data")
	}
	if field, t, bad := unwritableTime(reflect.ValueOf(dst), ""); bad {
		// encoding/json reads an offset of ±24:00, which RFC 3339 (and
		// time.Time's MarshalJSON) refuse: a time we could not write back.
		return validation(field, "an RFC 3339 time", t)
	}
	return nil
}

// unwritableTime finds a time.Time in v that cannot be encoded as JSON
// again, and names its field by its JSON path.
func unwritableTime(v reflect.Value, path string) (field, value string, bad bool) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", "", false
		}
		return unwritableTime(v.Elem(), path)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			t := v.Interface().(time.Time)
			if _, err := t.MarshalJSON(); err != nil {
				return strings.TrimPrefix(path, "."), t.String(), true
			}
			return "", "", false
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" {
				name = f.Name
			}
			if field, value, bad := unwritableTime(v.Field(i), path+"."+name); bad {
				return field, value, true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if field, value, bad := unwritableTime(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); bad {
				return field, value, true
			}
		}
	}
	return "", "", false
}

// AtEnd reports whether only white space follows the value dec decoded.
// (dec.More is not that test: it is false before a stray '}' or ']'.)
func AtEnd(dec *json.Decoder) bool {
	_, err := dec.Token()
	return err == io.EOF
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
		// encoding/json quotes the name with %q.
		field, err := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
		if err != nil || field == "" {
			return validation("body", "known fields", "an unknown field")
		}
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
