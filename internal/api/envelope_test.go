package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/shed"
	"github.com/herald-vpn/herald/internal/storage"
)

func TestWriteError(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		status     int
		code       apperr.Code
		retryAfter string
	}{
		{"application error", apperr.New(apperr.EmailNotFound), 400, apperr.EmailNotFound, ""},
		{"renamed for REST", apperr.New(apperr.EmailExists), 409, apperr.EmailAlreadyExists, ""},
		{"rate limited", func() error { e := apperr.New(apperr.RateLimited); e.RetryAfterSeconds = 7; return e }(), 429, apperr.RateLimited, "7"},
		{"database busy", fmt.Errorf("insert: %w", storage.ErrBusy), 503, apperr.ServiceUnavailable, "1"},
		{"work over its class's bounds", fmt.Errorf("login: %w", &shed.Refused{Class: "password hashing", QueueFull: true, RetryAfter: 1500 * time.Millisecond}), 503, apperr.ServiceUnavailable, "2"},
		{"a deadline that passed", fmt.Errorf("select: %w", context.DeadlineExceeded), 503, apperr.ServiceUnavailable, "2"},
		{"text the database refuses", fmt.Errorf("select: %w", storage.ErrInvalidText), 400, apperr.ValidationError, ""},
		{"anything else", errors.New("pq: relation does not exist"), 500, apperr.Internal, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			WriteError(w, httptest.NewRequest("GET", "/", nil), c.err)
			var env Envelope
			if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil {
				t.Fatal(err)
			}
			if w.Code != c.status || env.Success || env.Error == nil || env.Error.Code != c.code || w.Header().Get("Retry-After") != c.retryAfter {
				t.Fatalf("status %d, body %s, Retry-After %q", w.Code, w.Body, w.Header().Get("Retry-After"))
			}
			if c.code == apperr.Internal && env.Error.Message != apperr.Lookup(apperr.Internal).Message {
				t.Fatalf("internal error text leaked: %q", env.Error.Message)
			}
		})
	}
}

func TestUnmarshalRefusals(t *testing.T) {
	type body struct {
		Email string `json:"email"`
	}
	cases := map[string]struct{ in, field string }{
		"empty":         {"", "body"},
		"syntax":        {`{"email":`, "body"},
		"wrong type":    {`{"email":1}`, "email"},
		"unknown field": {`{"emial":"a@b.co"}`, "emial"},
		"trailing":      {`{"email":"a@b.co"} {}`, "body"},
		"array":         {`["a"]`, "body"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			var b body
			err := Unmarshal([]byte(c.in), &b)
			ae := apperr.As(err)
			if ae.Code != apperr.ValidationError || ae.Details["field"] != c.field || ae.Status() != http.StatusBadRequest {
				t.Fatalf("%+v", ae)
			}
		})
	}
}
