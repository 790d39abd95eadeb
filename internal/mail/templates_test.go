package mail_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/mail/mailtest"
	"golang.org/x/net/html"
)

// shipped is every locale Herald ships, with words each of its emails must
// say in that language (so a copy-paste that leaves a locale in English
// shows).
var shipped = map[string]map[string][]string{
	"en": {mail.EmailVerify: {"verify your email address", "valid for 15 minutes"}, mail.EmailReset: {"reset your", "password", "valid for 15 minutes"},
		mail.EmailChangeEmail: {"this address", "change your email", "valid for 15 minutes"}},
	"de": {mail.EmailVerify: {"bestätigen Sie", "15 Minuten gültig"}, mail.EmailReset: {"Passwort", "zurück", "15 Minuten gültig"},
		mail.EmailChangeEmail: {"diese Adresse", "E-Mail-Adresse", "15 Minuten gültig"}},
}

func TestEveryTemplateRendersInEveryLocale(t *testing.T) {
	brand := mail.Brand{Product: "Acme VPN", LogoURL: "https://cdn.acme.test/logo.png", SupportEmail: "help@acme.test"}
	tpl, err := mail.LoadTemplates("", brand)
	if err != nil {
		t.Fatal(err)
	}
	locales := slices.Sorted(func(yield func(string) bool) {
		for l := range shipped {
			if !yield(l) {
				return
			}
		}
	})
	if got := slices.Sorted(slices.Values(tpl.Locales())); !slices.Equal(got, locales) {
		t.Fatalf("Locales() = %v, want %v", got, locales)
	}
	if tpl.Locales()[0] != mail.DefaultLocale {
		t.Errorf("Locales()[0] = %s, want the default %s", tpl.Locales()[0], mail.DefaultLocale)
	}
	for _, loc := range locales {
		for _, email := range mail.Emails() {
			t.Run(loc+"/"+email, func(t *testing.T) {
				m, err := tpl.Render(email, loc, "kim@example.com", mail.Vars{Code: "042917", TTL: 15 * time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				if m.To != "kim@example.com" || m.Code != "042917" || m.Locale != loc {
					t.Errorf("To, Code, Locale = %q, %q, %q", m.To, m.Code, m.Locale)
				}
				if !strings.Contains(m.Subject, "Acme VPN") || strings.ContainsAny(m.Subject, "\r\n") || strings.Contains(m.Subject, "Herald") {
					t.Errorf("subject %q: want one line naming the product, not Herald", m.Subject)
				}
				if code, ok := mailtest.ExtractCode(m.Text); !ok || code != "042917" {
					t.Errorf("text part has no code on a line of its own:\n%s", m.Text)
				}
				for _, part := range []string{m.Text, m.HTML} {
					for _, want := range append([]string{"Acme VPN", "help@acme.test"}, shipped[loc][email]...) {
						if !strings.Contains(part, want) {
							t.Errorf("a part lacks %q:\n%s", want, part)
						}
					}
					if strings.Contains(part, "<no value>") || strings.Contains(part, "ZgotmplZ") {
						t.Errorf("a part renders a missing or unsafe value:\n%s", part)
					}
				}
				checkHTML(t, m.HTML, loc, m.Subject, "042917", brand.LogoURL)
			})
		}
	}
}

// checkHTML asserts that doc is a well-formed HTML document as mail
// clients want it: a doctype, <html lang>, a head with charset, viewport
// and title, every element closed in order, a table layout, the code.
func checkHTML(t *testing.T, doc, lang, title, code, logo string) {
	t.Helper()
	void := map[string]bool{"meta": true, "img": true, "br": true, "hr": true, "link": true}
	z := html.NewTokenizer(strings.NewReader(doc))
	var stack []string
	seen := map[string]bool{}
	first := true
	var inTitle bool
	var gotTitle string
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if !errors.Is(z.Err(), io.EOF) {
				t.Fatalf("tokenizing: %v", z.Err())
			}
			break
		}
		tok := z.Token()
		if first && tt != html.TextToken {
			if tt != html.DoctypeToken || !strings.EqualFold(tok.Data, "html") {
				t.Errorf("the document does not start with <!DOCTYPE html>: %v", tok)
			}
			first = false
		}
		attr := func(k string) string {
			for _, a := range tok.Attr {
				if a.Key == k {
					return a.Val
				}
			}
			return ""
		}
		switch tt {
		case html.StartTagToken, html.SelfClosingTagToken:
			switch {
			case tok.Data == "html" && attr("lang") == lang:
				seen["lang"] = true
			case tok.Data == "meta" && strings.EqualFold(attr("charset"), "utf-8"):
				seen["charset"] = true
			case tok.Data == "meta" && attr("name") == "viewport" && strings.Contains(attr("content"), "width=device-width"):
				seen["viewport"] = true
			case tok.Data == "img" && attr("src") == logo && attr("alt") != "":
				seen["logo"] = true
			}
			seen[tok.Data] = true
			if tt == html.StartTagToken && !void[tok.Data] {
				stack = append(stack, tok.Data)
			}
			inTitle = tok.Data == "title"
		case html.EndTagToken:
			if len(stack) == 0 || stack[len(stack)-1] != tok.Data {
				t.Fatalf("</%s> closes %v", tok.Data, stack)
			}
			stack = stack[:len(stack)-1]
			inTitle = false
		case html.TextToken:
			if inTitle {
				gotTitle += tok.Data
			}
		}
	}
	if len(stack) != 0 {
		t.Errorf("unclosed elements: %v", stack)
	}
	wants := []string{"html", "head", "body", "title", "table", "lang", "charset", "viewport"}
	if logo != "" {
		wants = append(wants, "logo")
	}
	for _, want := range wants {
		if !seen[want] {
			t.Errorf("the document has no %s", want)
		}
	}
	if gotTitle != title {
		t.Errorf("<title> = %q, want the subject %q", gotTitle, title)
	}
	if !strings.Contains(doc, code) {
		t.Errorf("the HTML part lacks the code")
	}
}

func TestRenderFallsBack(t *testing.T) {
	tpl, err := mail.LoadTemplates("", mail.Brand{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ locale, want string }{
		{"", "en"},
		{"en", "en"},
		{"en-GB", "en"},
		{"de", "de"},
		{"de-AT", "de"},
		{"de-CH", "de"},
		{"fr", "en"},
		{"ja-JP", "en"},
		{"not a tag", "en"},
	} {
		m, err := tpl.Render(mail.EmailVerify, tc.locale, "a@example.com", mail.Vars{Code: "111111", TTL: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if m.Locale != tc.want {
			t.Errorf("locale %q renders %s, want %s", tc.locale, m.Locale, tc.want)
		}
		if !strings.Contains(m.Subject, mail.DefaultProduct) {
			t.Errorf("subject %q: want the default product name", m.Subject)
		}
	}
}

func TestMatch(t *testing.T) {
	tpl, err := mail.LoadTemplates("", mail.Brand{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		accepted []string
		want     string
		ok       bool
	}{
		{nil, "", false},
		{[]string{"fr", "de"}, "de", true},
		{[]string{"de-AT", "en"}, "de", true},
		{[]string{"en-US", "de"}, "en", true},
		{[]string{"fr", "ja"}, "", false},
		{[]string{"%%", "de"}, "de", true},
	} {
		got, ok := tpl.Match(tc.accepted...)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Match(%q) = %q, %v; want %q, %v", tc.accepted, got, ok, tc.want, tc.ok)
		}
	}
}

func TestValidity(t *testing.T) {
	tpl, err := mail.LoadTemplates("", mail.Brand{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		locale string
		ttl    time.Duration
		want   string
	}{
		{"en", 30 * time.Second, "valid for 30 seconds"},
		{"en", time.Minute, "valid for 1 minute."},
		{"en", 10 * time.Minute, "valid for 10 minutes"},
		{"de", 45 * time.Second, "45 Sekunden gültig"},
		{"de", time.Minute, "1 Minute gültig"},
		{"de", time.Hour, "60 Minuten gültig"},
	} {
		m, err := tpl.Render(mail.EmailReset, tc.locale, "a@example.com", mail.Vars{Code: "222222", TTL: tc.ttl})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(m.Text, tc.want) || !strings.Contains(m.HTML, tc.want) {
			t.Errorf("%s %s: want %q in both parts:\n%s", tc.locale, tc.ttl, tc.want, m.Text)
		}
	}
}

// writeFiles creates files (relative path → content) under a fresh
// directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestOverrides(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"en/verify.txt": "{{define \"subject\"}}Welcome aboard {{.Product}}{{end}}\n{{define \"body\"}}Your code:\n{{.Code}}\nCustom text.{{end}}\n",
		"README.md":     "notes of the operator, ignored",
	})
	tpl, err := mail.LoadTemplates(dir, mail.Brand{Product: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := tpl.Render(mail.EmailVerify, "en", "a@example.com", mail.Vars{Code: "333333", TTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "Welcome aboard Acme" || !strings.Contains(m.Text, "Custom text.") {
		t.Errorf("the override is not used: %q\n%s", m.Subject, m.Text)
	}
	if !strings.Contains(m.HTML, "Welcome to Acme") {
		t.Errorf("the HTML part, not overridden, should be the embedded one:\n%s", m.HTML)
	}
	// The other emails and locales are the embedded ones.
	de, err := tpl.Render(mail.EmailVerify, "de", "a@example.com", mail.Vars{Code: "333333", TTL: time.Minute})
	if err != nil || !strings.Contains(de.Subject, "Bestätigen") {
		t.Errorf("de verify = %q, %v", de.Subject, err)
	}
}

// A complete directory for a new locale adds it.
func TestOverrideAddsALocale(t *testing.T) {
	files := map[string]string{
		"fr/common.txt":  `{{define "validity"}}{{.ValidMinutes}} minutes{{end}}{{define "footer"}}{{.Product}}{{end}}`,
		"fr/common.html": `{{define "validity"}}{{.ValidMinutes}} minutes{{end}}{{define "footer"}}<p>{{.Product}}</p>{{end}}`,
	}
	for _, e := range mail.Emails() {
		files["fr/"+e+".txt"] = `{{define "subject"}}Votre code {{.Product}}{{end}}{{define "body"}}Votre code :
{{.Code}}
Valable {{template "validity" .}}.{{end}}`
		files["fr/"+e+".html"] = `{{define "preheader"}}Votre code{{end}}{{define "body"}}<p>Votre code :</p>{{template "code" .}}{{end}}`
	}
	for _, e := range mail.Notices() {
		files["fr/"+e+".txt"] = `{{define "subject"}}{{.Product}}{{end}}{{define "body"}}{{.Plan}} {{.RenewURL}}{{end}}`
		files["fr/"+e+".html"] = `{{define "preheader"}}{{.Product}}{{end}}{{define "body"}}<p>{{.Plan}} <a href="{{.RenewURL}}">{{.RenewURL}}</a></p>{{end}}`
	}
	for _, e := range mail.SecurityNotices() {
		files["fr/"+e+".txt"] = `{{define "subject"}}{{.Product}}{{end}}{{define "body"}}{{.Count}} {{.NewEmail}} {{.CancelURL}} {{.IP}}{{end}}`
		files["fr/"+e+".html"] = `{{define "preheader"}}{{.Product}}{{end}}{{define "body"}}<p>{{.Count}} {{.NewEmail}} <a href="{{.CancelURL}}">{{.CancelURL}}</a> {{.IP}}</p>{{end}}`
	}
	files["fr/"+mail.EmailNotification+".txt"] = `{{define "subject"}}{{.Title}}{{end}}{{define "body"}}{{.Content}} {{.UnsubscribeURL}}{{end}}`
	files["fr/"+mail.EmailNotification+".html"] = `{{define "preheader"}}{{.Title}}{{end}}{{define "body"}}<p>{{.Content}} <a href="{{.UnsubscribeURL}}">désabonner</a> {{.UnsubscribeURL}}</p>{{end}}`
	tpl, err := mail.LoadTemplates(writeFiles(t, files), mail.Brand{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tpl.Locales(), "fr") {
		t.Fatalf("Locales() = %v, want fr among them", tpl.Locales())
	}
	m, err := tpl.Render(mail.EmailReset, "fr-CA", "a@example.com", mail.Vars{Code: "444444", TTL: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if m.Locale != "fr" || m.Subject != "Votre code Herald" || !strings.Contains(m.Text, "Valable 5 minutes.") {
		t.Errorf("fr-CA rendered %s: %q\n%s", m.Locale, m.Subject, m.Text)
	}
	checkHTML(t, m.HTML, "fr", m.Subject, "444444", "")
}

func TestBrokenOverrides(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // in the error
	}{
		{"syntax error names file and line",
			map[string]string{"en/reset.html": "{{define \"preheader\"}}x{{end}}\n{{define \"body\"}}\n<p>{{.Code}</p>{{end}}\n"},
			[]string{filepath.Join("en", "reset.html") + ":3:", "bad character"}},
		{"broken layout",
			map[string]string{"layout.txt": "{{template \"body\" .}}\n{{if}}\n"},
			[]string{"layout.txt:2:", "missing value for if"}},
		{"unknown field fails at start",
			map[string]string{"de/verify.txt": "{{define \"subject\"}}{{.Produkt}}{{end}}{{define \"body\"}}{{.Code}}{{end}}"},
			[]string{filepath.Join("de", "verify.txt"), "Produkt"}},
		{"an email without its code",
			map[string]string{"en/verify.html": "{{define \"preheader\"}}x{{end}}{{define \"body\"}}<p>no code</p>{{end}}"},
			[]string{filepath.Join("en", "verify.html"), "must show the code"}},
		{"a missing block",
			map[string]string{"en/reset.txt": "{{define \"body\"}}{{.Code}}{{end}}"},
			[]string{filepath.Join("en", "reset.txt"), `"subject"`}},
		{"a misspelt file",
			map[string]string{"en/verfy.txt": "x"},
			[]string{filepath.Join("en", "verfy.txt"), "not a template Herald knows"}},
		{"an incomplete locale",
			map[string]string{"fr/verify.txt": "{{define \"subject\"}}x{{end}}{{define \"body\"}}{{.Code}}{{end}}"},
			[]string{"fr/common.txt: missing"}},
		{"a locale that is no language tag",
			map[string]string{"english/verify.txt": "x"},
			[]string{"english", "not a language tag"}},
		{"a locale not in canonical form",
			map[string]string{"DE/verify.txt": "x"},
			[]string{"DE", "canonical"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			_, err := mail.LoadTemplates(dir, mail.Brand{})
			if err == nil {
				t.Fatal("LoadTemplates succeeded, want an error")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if strings.Contains(tc.name, "names file") && !strings.Contains(err.Error(), dir) {
				t.Errorf("error %q does not name the file by its path under %s", err, dir)
			}
		})
	}
}

func TestTemplatesDirMissing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	_, err := mail.LoadTemplates(dir, mail.Brand{})
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("err = %v, want one naming %s", err, dir)
	}
	file := writeFiles(t, map[string]string{"f": "x"})
	if _, err := mail.LoadTemplates(filepath.Join(file, "f"), mail.Brand{}); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("err = %v, want not a directory", err)
	}
}
