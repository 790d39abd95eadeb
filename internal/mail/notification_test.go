package mail_test

import (
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
)

// The notification email says the sender's subject and content in each
// locale's frame, and the unsubscribe link only when one is given.
func TestNotificationEmail(t *testing.T) {
	tpl, err := mail.LoadTemplates("", mail.Brand{Product: "Acme VPN", SupportEmail: "help@acme.test"})
	if err != nil {
		t.Fatal(err)
	}
	const link = "https://api.acme.test/api/v1/notifications/unsubscribe?token=abc.def"
	for loc, words := range map[string][2]string{"en": {"To stop them", ">Unsubscribe</a>"}, "de": {"abzubestellen", ">Abbestellen</a>"}} {
		t.Run(loc, func(t *testing.T) {
			m, err := tpl.Render(mail.EmailNotification, loc, "kim@example.com", mail.Vars{Title: "Winter sale <50%>", Content: "Half price\nfor a week & more", UnsubscribeURL: link})
			if err != nil {
				t.Fatal(err)
			}
			if m.Subject != "Winter sale <50%>" || m.ListUnsubscribe != link || m.Locale != loc {
				t.Fatalf("subject %q, ListUnsubscribe %q, locale %q", m.Subject, m.ListUnsubscribe, m.Locale)
			}
			for _, want := range []string{"Half price\nfor a week & more", link, words[0], "Acme VPN"} {
				if !strings.Contains(m.Text, want) {
					t.Errorf("the text part lacks %q:\n%s", want, m.Text)
				}
			}
			for _, want := range []string{"Winter sale &lt;50%&gt;", "for a week &amp; more", `href="` + link + `"`, words[1]} {
				if !strings.Contains(m.HTML, want) {
					t.Errorf("the HTML part lacks %q:\n%s", want, m.HTML)
				}
			}
			checkHTML(t, m.HTML, loc, m.Subject, "Half price", "")

			// A critical category's email: no link, no header.
			m, err = tpl.Render(mail.EmailNotification, loc, "kim@example.com", mail.Vars{Title: "Payment failed", Content: "Update your card."})
			if err != nil {
				t.Fatal(err)
			}
			if m.ListUnsubscribe != "" || strings.Contains(m.Text, words[0]) || strings.Contains(m.HTML, words[1]) || strings.Contains(m.Text, "unsubscribe") {
				t.Fatalf("an email without a link speaks of unsubscribing:\n%s\n%s", m.Text, m.HTML)
			}
		})
	}
}

// SMTPSender sends the one-click headers of RFC 8058 with an https link,
// and only the RFC 2369 header with an http one.
func TestSMTPListUnsubscribe(t *testing.T) {
	srv := mailtest.NewServer(t)
	s := newSender(t, srv.URL())
	for to, tc := range map[string]struct{ link, post string }{
		"https@example.com": {"https://api.acme.test/api/v1/notifications/unsubscribe?token=a.b", "List-Unsubscribe=One-Click"},
		"http@example.com":  {"http://localhost:8080/api/v1/notifications/unsubscribe?token=a.b", ""},
		"none@example.com":  {"", ""},
	} {
		if err := s.Send(t.Context(), mail.Message{To: to, Subject: "News", Text: "Hello\n", ListUnsubscribe: tc.link}); err != nil {
			t.Fatalf("Send to %s: %v", to, err)
		}
		got := srv.WaitForMessage(t, to, waitTime)
		wantHeader := ""
		if tc.link != "" {
			wantHeader = "<" + tc.link + ">"
		}
		if h := got.Header.Get("List-Unsubscribe"); h != wantHeader {
			t.Errorf("%s: List-Unsubscribe %q, want %q", to, h, wantHeader)
		}
		if h := got.Header.Get("List-Unsubscribe-Post"); h != tc.post {
			t.Errorf("%s: List-Unsubscribe-Post %q, want %q", to, h, tc.post)
		}
	}
}

// An override of the notification email must show the content, the
// subject and the unsubscribe link: a template that drops one is refused
// at load, naming the file.
func TestNotificationOverrideChecked(t *testing.T) {
	for what, tc := range map[string]struct{ txt, want string }{
		"no content": {`{{define "subject"}}{{.Title}}{{end}}{{define "body"}}{{.UnsubscribeURL}}{{end}}`, "content"},
		"no link":    {`{{define "subject"}}{{.Title}}{{end}}{{define "body"}}{{.Content}}{{end}}`, "unsubscribe link"},
		"no subject": {`{{define "subject"}}News{{end}}{{define "body"}}{{.Content}} {{.UnsubscribeURL}}{{end}}`, "subject"},
	} {
		_, err := mail.LoadTemplates(writeFiles(t, map[string]string{"en/notification.txt": tc.txt}), mail.Brand{})
		if err == nil || !strings.Contains(err.Error(), "notification.txt") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming notification.txt and the %s", what, err, tc.want)
		}
	}
	// A subject that adds to the notification's is fine.
	if _, err := mail.LoadTemplates(writeFiles(t, map[string]string{"en/notification.txt": `{{define "subject"}}[{{.Product}}] {{.Title}}{{end}}{{define "body"}}{{.Content}} {{.UnsubscribeURL}}{{end}}`}), mail.Brand{}); err != nil {
		t.Errorf("a prefixed subject: %v", err)
	}
}
