package gqltransport

import (
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// media is the media type of an answer, chosen from the request's Accept
// header as the GraphQL-over-HTTP spec says.
type media int

const (
	// mediaJSON is application/json: the statuses of the error catalogue
	// (422 for a document that fails validation) and "data": null on
	// every error, as Herald always answered.
	mediaJSON media = iota
	// mediaGraphQL is application/graphql-response+json: the catalogue's
	// statuses too, but 400 for a document that fails validation, and no
	// "data" entry in an answer whose status is not 2xx (the spec keeps
	// 4xx and 5xx for answers without data).
	mediaGraphQL
)

const (
	typeJSON    = "application/json"
	typeGraphQL = "application/graphql-response+json"
)

func (m media) contentType() string {
	if m == mediaGraphQL {
		return typeGraphQL + "; charset=utf-8"
	}
	return typeJSON + "; charset=utf-8"
}

// negotiate picks the answer's media type from the Accept headers: the one
// of the two Herald speaks with the higher quality, each rated by the most
// specific media range that names it (the type itself, application/*, or
// */*). At equal quality the more specific rating wins, and between equals
// application/graphql-response+json, the type the GraphQL-over-HTTP spec
// prefers: so */* (curl's, and fetch's default) and application/* get it,
// and application/json alone, or beside a wildcard, keeps application/json.
// No Accept header at all is answered as application/json, the contract's
// envelope for clients that do not negotiate.
// ok is false when neither is acceptable: the answer is then 406.
func negotiate(h http.Header) (m media, ok bool) {
	accept := strings.Join(h.Values("Accept"), ",")
	if strings.TrimSpace(accept) == "" {
		return mediaJSON, true
	}
	type rating struct {
		q           float64
		specificity int // 0 unnamed, 1 */*, 2 application/*, 3 the type itself
	}
	var gql, js rating
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		q := 1.0
		if v, ok := params["q"]; ok {
			if q, err = strconv.ParseFloat(v, 64); err != nil || q < 0 || q > 1 {
				continue
			}
		}
		for _, c := range []struct {
			name string
			r    *rating
		}{{typeGraphQL, &gql}, {typeJSON, &js}} {
			s := 0
			switch mt {
			case c.name:
				s = 3
			case "application/*":
				s = 2
			case "*/*":
				s = 1
			}
			if s > c.r.specificity || (s == c.r.specificity && s > 0 && q > c.r.q) {
				*c.r = rating{q, s}
			}
		}
	}
	switch {
	case gql.q <= 0 && js.q <= 0:
		return mediaJSON, false
	case gql.q != js.q:
		if gql.q > js.q {
			return mediaGraphQL, true
		}
		return mediaJSON, true
	case js.specificity > gql.specificity:
		return mediaJSON, true
	}
	return mediaGraphQL, true
}

// status is the HTTP status of an answer in m whose first error has the
// catalogue status s.
func (m media) status(s int, errs gqlerror.List) int {
	if m == mediaGraphQL && len(errs) > 0 && codeOf(errs[0]) == apperr.GraphQLInvalid {
		return http.StatusBadRequest
	}
	return s
}

// response is graphql.Response with data always present (null on error),
// as the spec's error envelope shows it.
type response struct {
	Errors     gqlerror.List   `json:"errors,omitempty"`
	Data       json.RawMessage `json:"data"`
	Extensions map[string]any  `json:"extensions,omitempty"`
}

// responseWithoutData is an application/graphql-response+json answer with
// a status that is not 2xx.
type responseWithoutData struct {
	Errors     gqlerror.List  `json:"errors,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
}

func (m media) writeErrors(w http.ResponseWriter, status int, errs gqlerror.List) {
	m.writeResponse(w, status, &graphql.Response{Errors: errs})
}

// writeResponse writes resp with status, which comes from the catalogue
// (m.status adjusts it for the media type).
func (m media) writeResponse(w http.ResponseWriter, status int, resp *graphql.Response) {
	status = m.status(status, resp.Errors)
	data := json.RawMessage(resp.Data)
	if len(data) == 0 {
		data = json.RawMessage("null")
	}
	var v any = response{Errors: resp.Errors, Data: data, Extensions: resp.Extensions}
	if m == mediaGraphQL && (status < 200 || status > 299) {
		v = responseWithoutData{Errors: resp.Errors, Extensions: resp.Extensions}
	}
	body, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"errors":[{"message":"An unexpected error occurred.","extensions":{"code":"INTERNAL_ERROR"}}],"data":null}`)
		if m == mediaGraphQL {
			body = []byte(`{"errors":[{"message":"An unexpected error occurred.","extensions":{"code":"INTERNAL_ERROR"}}]}`)
		}
	}
	// A 429 or 503 says when to come back in Retry-After, as the REST door
	// does (rate-limit tiers, the resend cooldown, a busy database).
	if (status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable) && len(resp.Errors) > 0 {
		if secs, ok := resp.Errors[0].Extensions["retryAfter"].(int); ok && secs > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(secs))
		}
	}
	api.WriteRaw(w, status, m.contentType(), body)
}
