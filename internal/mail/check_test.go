package mail_test

import (
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
)

// Check goes as far as Send before MAIL FROM: TLS as Send would, AUTH when
// the URL has a user, and sends nothing.
func TestSMTPCheck(t *testing.T) {
	t.Parallel()
	const user, pass = "herald", "s3cret"
	tests := []struct {
		name     string
		server   func(testing.TB) *mailtest.Server
		url      func(*mailtest.Server) string
		trust    bool
		wantTLS  string
		wantAuth bool
		wantErr  string // "" for success
	}{
		{"plain, no STARTTLS offered", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t) }, (*mailtest.Server).URL, false, "none", false, ""},
		{"STARTTLS", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t, mailtest.WithStartTLS()) }, (*mailtest.Server).URL, true, "STARTTLS", false, ""},
		{"implicit TLS with AUTH", func(t testing.TB) *mailtest.Server { return mailtest.NewTLSServer(t, mailtest.WithAuth(user, pass)) },
			func(s *mailtest.Server) string { return s.URLWithAuth(user, pass) }, true, "implicit TLS", true, ""},
		{"AUTH", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t, mailtest.WithAuth(user, pass)) },
			func(s *mailtest.Server) string { return s.URLWithAuth(user, pass) }, false, "none", true, ""},
		{"wrong password", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t, mailtest.WithAuth(user, pass)) },
			func(s *mailtest.Server) string { return s.URLWithAuth(user, "wrong") }, false, "", false, "535"},
		{"untrusted certificate", func(t testing.TB) *mailtest.Server { return mailtest.NewServer(t, mailtest.WithStartTLS()) }, (*mailtest.Server).URL, false, "", false, "certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := tt.server(t)
			var opts []mail.Option
			if tt.trust {
				opts = append(opts, mail.WithTLSConfig(srv.ClientTLSConfig()))
			}
			res, err := newSender(t, tt.url(srv), opts...).Check(t.Context())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Check = %+v, %v; want an error mentioning %q", res, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "wrong") {
					t.Errorf("the error shows the password: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.TLS != tt.wantTLS || res.Authenticated != tt.wantAuth {
				t.Errorf("Check = %+v, want TLS %q, authenticated %v", res, tt.wantTLS, tt.wantAuth)
			}
			if n := len(srv.Messages()); n != 0 {
				t.Errorf("the server received %d messages, want none", n)
			}
		})
	}
}
