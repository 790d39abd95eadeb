package api_test

import (
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/api"
	"github.com/herald-vpn/herald/internal/apperr"
)

func TestUnmarshal(t *testing.T) {
	type body struct {
		Name  string                  `json:"name"`
		Count int                     `json:"count"`
		At    *time.Time              `json:"at"`
		Times []time.Time             `json:"times"`
		Inner *struct{ At time.Time } `json:"inner"`
	}
	cases := []struct {
		name, body string
		field      string // "" means accepted
	}{
		{"object", `{"name":"a","count":2,"at":"2030-01-02T03:04:05+05:30"}`, ""},
		{"white space after", "{\"name\":\"a\"} \n\t", ""},
		{"empty", ``, "body"},
		{"trailing value", `{"name":"a"} {}`, "body"},
		{"stray closing brace", `{"name":"a"}}`, "body"},
		{"stray closing bracket", `{"name":"a"}]`, "body"},
		{"unknown field", `{"nome":"a"}`, "nome"},
		{"unknown field with an empty name", `{"":1}`, "body"},
		{"unknown field with a quote", `{"a\"b":1}`, `a"b`},
		{"wrong type", `{"count":"2"}`, "count"},
		{"number too large", `{"count":1e400}`, "count"},
		{"truncated", `{"name":"a"`, "body"},
		{"offset of 24 hours", `{"at":"2030-01-01T00:00:00+24:00"}`, "at"},
		{"offset of -24 hours in a list", `{"times":["2030-01-01T00:00:00Z","2030-01-01T00:00:00-24:00"]}`, "times[1]"},
		{"offset of 24 hours nested", `{"inner":{"At":"2030-01-01T00:00:00+24:00"}}`, "inner.At"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b body
			err := api.Unmarshal([]byte(c.body), &b)
			if c.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			ae := apperr.As(err)
			if ae.Code != apperr.ValidationError || ae.Details["field"] != c.field {
				t.Fatalf("err = %v (details %v), want VALIDATION_ERROR naming %q", err, ae.Details, c.field)
			}
		})
	}
}
