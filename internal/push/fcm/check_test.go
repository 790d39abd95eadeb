package fcm_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/herald-vpn/herald/internal/push"
	"github.com/herald-vpn/herald/internal/push/fcm"
	"github.com/herald-vpn/herald/internal/push/fcm/fcmtest"
)

// Check gets an access token and sends nothing; a key the token endpoint
// refuses is a Fatal TOKEN_ENDPOINT error.
func TestCheck(t *testing.T) {
	t.Parallel()
	unknownKey := func(srv *fcmtest.Server) []byte {
		var creds map[string]string
		if err := json.Unmarshal(srv.CredentialsJSON(project), &creds); err != nil {
			t.Fatal(err)
		}
		creds["private_key_id"] = "a-key-the-fake-never-issued"
		b, _ := json.Marshal(creds)
		return b
	}
	tests := []struct {
		name   string
		creds  func(*fcmtest.Server) []byte
		status int // token endpoint fault, 0 for none
		want   push.Kind
		ok     bool
	}{
		{"accepted", func(s *fcmtest.Server) []byte { return s.CredentialsJSON(project) }, 0, 0, true},
		{"unknown key", unknownKey, 0, push.Fatal, false},
		{"revoked key", func(s *fcmtest.Server) []byte { return s.CredentialsJSON(project) }, http.StatusUnauthorized, push.Fatal, false},
		{"token endpoint down", func(s *fcmtest.Server) []byte { return s.CredentialsJSON(project) }, http.StatusServiceUnavailable, push.Retryable, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := fcmtest.NewServer(t)
			c, err := fcm.New(t.Context(), tt.creds(srv), "", srv.URL, fcm.NewHTTPClient(srv.CertPool()))
			if err != nil {
				t.Fatal(err)
			}
			srv.SetTokenEndpointStatus(tt.status)
			err = c.Check(t.Context())
			if tt.ok {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
			} else if pe, ok := errors.AsType[*push.Error](err); !ok || pe.Kind != tt.want || pe.Reason != "TOKEN_ENDPOINT" {
				t.Fatalf("Check = %v, want %v TOKEN_ENDPOINT", err, tt.want)
			}
			if n := len(srv.Exchanges()); n != 0 {
				t.Errorf("%d sends reached FCM, want none", n)
			}
		})
	}
}
