package mail

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"

	"golang.org/x/text/language"
)

// The emails Herald sends; each is a pair of files per locale,
// LOCALE/NAME.txt (defines "subject" and "body") and LOCALE/NAME.html
// (defines "preheader" and "body").
const (
	EmailVerify      = "verify"       // the code that verifies an email address
	EmailReset       = "reset"        // the code that resets a password
	EmailChangeEmail = "email_change" // the code, sent to the new address, that confirms an email change
)

// The security notices of email and password changes (accounts sends
// them), told to the address that had the account: the first carries the
// cancel link, the others neither code nor link.
const (
	EmailChangeRequested = "email_change_requested" // to the old address: a change was asked for, with its cancel link
	EmailChanged         = "email_changed"          // to the old address: the change happened
	EmailPasswordChanged = "password_changed"       // the password was changed while signed in
)

// The notices of an account's subscription (billing/notices sends them):
// they carry no code but the plan, a date and the link that renews.
const (
	EmailPaymentFailed = "payment_failed" // a renewal's payment failed
	EmailExpired       = "expired"        // the subscription ended
	EmailRefunded      = "refunded"       // the store refunded it; access ended
	EmailTrialEnding   = "trial_ending"   // the trial ends within days
)

// The security notices (issue 25): they tell the owner of an account what
// happened to it, with neither code nor link.
const (
	EmailRecoveryCodeUsed = "recovery_code_used" // a recovery code completed a sign-in or a step-up
	// EmailNewDevice: a sign-in from a device the account had not signed
	// in from, with when, the IP, the user agent and the link that ends
	// that session.
	EmailNewDevice = "new_device"
)

// EmailNotification is a notification sent to a user on the email
// channel (notifications.ChannelEmail): its subject and content as the
// sender wrote them, and, unless its category is critical, the link that
// unsubscribes from that category's emails (Vars.UnsubscribeURL).
const EmailNotification = "notification"

// codeEmails carry a one-time code; notices do not, nor security
// notices. emails is all, for the checks at load.
var (
	codeEmails = []string{EmailVerify, EmailReset, EmailChangeEmail}
	notices    = []string{EmailPaymentFailed, EmailExpired, EmailRefunded, EmailTrialEnding}
	security   = []string{EmailRecoveryCodeUsed, EmailChangeRequested, EmailChanged, EmailPasswordChanged, EmailNewDevice}
	emails     = slices.Concat(codeEmails, notices, security, []string{EmailNotification})
)

// Emails returns the names of the emails that carry a one-time code.
func Emails() []string { return slices.Clone(codeEmails) }

// SecurityNotices returns the names of the security notices.
func SecurityNotices() []string { return slices.Clone(security) }

// Notices returns the names of the subscription notices.
func Notices() []string { return slices.Clone(notices) }

// DefaultLocale is the language of last resort: an account whose locale
// has no templates gets these.
const DefaultLocale = "en"

// DefaultProduct is the product name when none is configured.
const DefaultProduct = "Herald"

// The shared files, at the top of the templates directory, and the files
// every locale directory holds besides one pair per email.
const (
	layoutHTML = "layout.html"
	layoutText = "layout.txt"
	commonHTML = "common.html"
	commonText = "common.txt"
)

//go:embed templates
var embedded embed.FS

// Brand is what every email says about the product.
type Brand struct {
	Product      string // HERALD_PRODUCT_NAME; DefaultProduct when empty
	LogoURL      string // HERALD_EMAIL_LOGO_URL: an http(s) image shown atop the HTML part; optional
	SupportEmail string // HERALD_SUPPORT_EMAIL: named in every footer; optional
}

// Data is what a template sees ({{.Product}}, {{.Code}}...).
type Data struct {
	Product      string
	LogoURL      string
	SupportEmail string
	Lang         string    // the locale whose templates render, for <html lang>
	Subject      string    // the rendered subject, for <title> (empty while the subject renders)
	Code         string    // the one-time code
	ValidMinutes int       // the code's lifetime, rounded to minutes
	ValidSeconds int       // the code's lifetime in seconds
	Plan         string    // a notice's plan
	RenewURL     string    // where a notice's reader renews or fixes the payment
	Date         time.Time // a notice's date: when access ends or ended (zero if unknown)
	NewEmail     string    // an email change's new address
	CancelURL    string    // where the old address cancels an email change ("" when the server has no public URL)
	Count        int       // a security notice's count (recovery codes left)
	IP           string    // a new-device alert's client address
	UserAgent    string    // a new-device alert's user agent ("" when none was sent)
	EndURL       string    // where a new-device alert's reader ends that session ("" when the server has no public URL)
	// A notification's: its subject and content as the sender wrote
	// them, and the link that unsubscribes from its category's emails
	// ("" for a critical category, or when the server has no public URL).
	Title          string
	Content        string
	UnsubscribeURL string
}

// Vars are what one email says besides the brand.
type Vars struct {
	Code string        // the one-time code
	TTL  time.Duration // how long the code is valid
	// A notice's: the plan, the link that renews, and when access ends
	// or ended.
	Plan     string
	RenewURL string
	Date     time.Time
	// An account notice's: the new address of an email change, and the
	// link that cancels it.
	NewEmail  string
	CancelURL string
	// Count is a security notice's number (recovery codes left).
	Count int
	// A new-device alert's: the client's address and user agent, and
	// the link that ends its session.
	IP        string
	UserAgent string
	EndURL    string
	// A notification's (EmailNotification): its subject and content, and
	// the one-click unsubscribe link; the rendered Message carries the
	// link as ListUnsubscribe too.
	Title          string
	Content        string
	UnsubscribeURL string
}

// Templates renders Herald's emails: the embedded templates, any of which
// an operator may override. Safe for concurrent use.
type Templates struct {
	brand   Brand
	locales []string // DefaultLocale first, then sorted
	matcher language.Matcher
	sets    map[string]map[string]emailTemplates // locale → email → templates
}

type emailTemplates struct {
	text *texttemplate.Template
	html *htmltemplate.Template
}

// source is one template file: its text and the name errors show (the
// override's path on disk, or the embedded path).
type source struct {
	name, body string
}

// LoadTemplates parses the embedded templates, with each file found under
// dir (HERALD_EMAIL_TEMPLATES_DIR; "" for none) in place of the embedded
// file of the same relative path. A directory of dir named after a locale
// the embedded set lacks adds that locale; it must hold every file. Each
// email of each locale is then rendered once with sample data, so a
// mistake shows at start, not at the first signup. Errors name the file,
// and the line for a syntax error.
func LoadTemplates(dir string, brand Brand) (*Templates, error) {
	if strings.TrimSpace(brand.Product) == "" {
		brand.Product = DefaultProduct
	}
	files := map[string]source{}
	root, err := fs.Sub(embedded, "templates")
	if err != nil {
		return nil, err
	}
	if err := collect(root, "templates", files); err != nil {
		return nil, err
	}
	if dir != "" {
		info, err := os.Stat(dir)
		if err != nil {
			return nil, pathErr(dir, err)
		}
		if !info.IsDir() {
			return nil, fmt.Errorf("%s: not a directory", dir)
		}
		if err := collect(os.DirFS(dir), dir, files); err != nil {
			return nil, err
		}
	}
	locales := []string{DefaultLocale}
	for rel := range files {
		if loc, _, ok := strings.Cut(rel, "/"); ok && !slices.Contains(locales, loc) {
			locales = append(locales, loc)
		}
	}
	slices.Sort(locales[1:])

	t := &Templates{brand: brand, locales: locales, sets: map[string]map[string]emailTemplates{}}
	tags := make([]language.Tag, len(locales))
	for i, loc := range locales {
		tags[i] = language.MustParse(loc) // checked by collect
		set, err := parseLocale(files, loc)
		if err != nil {
			return nil, err
		}
		t.sets[loc] = set
	}
	t.matcher = language.NewMatcher(tags)
	for _, loc := range locales {
		for _, e := range emails {
			if err := t.check(files, loc, e); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

// collect adds the template files of fsys to files, by path relative to
// its root; shown is how errors name that root. Unknown .txt and .html
// files are refused, so a misspelt override does not go unnoticed.
func collect(fsys fs.FS, shown string, files map[string]source) error {
	known := func(base string) bool {
		if base == commonHTML || base == commonText {
			return true
		}
		for _, e := range emails {
			if base == e+".txt" || base == e+".html" {
				return true
			}
		}
		return false
	}
	return fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return pathErr(filepath.Join(shown, filepath.FromSlash(rel)), err)
		}
		name := filepath.Join(shown, filepath.FromSlash(rel))
		if d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return nil
		}
		ext := path.Ext(rel)
		if ext != ".txt" && ext != ".html" {
			return nil // a README or the like
		}
		parts := strings.Split(rel, "/")
		switch {
		case len(parts) == 1 && (rel == layoutHTML || rel == layoutText):
		case len(parts) == 2 && known(parts[1]):
			tag, err := language.Parse(parts[0])
			if err != nil || tag.String() != parts[0] {
				return fmt.Errorf("%s: the directory %q is not a language tag in canonical form, such as de or pt-BR", name, parts[0])
			}
		default:
			var names []string
			for _, e := range emails {
				names = append(names, e+".txt", e+".html")
			}
			return fmt.Errorf("%s: not a template Herald knows (the files are %s, %s, and LOCALE/ with %s, %s, %s)",
				name, layoutHTML, layoutText, commonText, commonHTML, strings.Join(names, ", "))
		}
		body, err := fs.ReadFile(fsys, rel)
		if err != nil {
			return pathErr(name, err)
		}
		files[rel] = source{name: name, body: string(body)}
		return nil
	})
}

// parseLocale parses each email of locale loc: the layout, then the
// locale's common file, then the email's own file, once for text and once
// for HTML.
func parseLocale(files map[string]source, loc string) (map[string]emailTemplates, error) {
	get := func(rel string) (source, error) {
		s, ok := files[rel]
		if !ok {
			return s, fmt.Errorf("%s: missing: a locale needs %s, %s and a .txt and .html file per email (%s); copy them from %s", rel, commonText, commonHTML, strings.Join(emails, ", "), DefaultLocale)
		}
		return s, nil
	}
	var srcs [6]source
	for i, rel := range []string{layoutText, loc + "/" + commonText, layoutHTML, loc + "/" + commonHTML} {
		s, err := get(rel)
		if err != nil {
			return nil, err
		}
		srcs[i] = s
	}
	baseText, err := texttemplate.New(srcs[0].name).Parse(srcs[0].body)
	if err == nil {
		_, err = baseText.New(srcs[1].name).Parse(srcs[1].body)
	}
	if err != nil {
		return nil, err
	}
	baseHTML, err := htmltemplate.New(srcs[2].name).Parse(srcs[2].body)
	if err == nil {
		_, err = baseHTML.New(srcs[3].name).Parse(srcs[3].body)
	}
	if err != nil {
		return nil, err
	}
	set := map[string]emailTemplates{}
	for _, e := range emails {
		txt, err := get(loc + "/" + e + ".txt")
		if err != nil {
			return nil, err
		}
		htm, err := get(loc + "/" + e + ".html")
		if err != nil {
			return nil, err
		}
		tt, err := baseText.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := tt.New(txt.name).Parse(txt.body); err != nil {
			return nil, err
		}
		ht, err := baseHTML.Clone()
		if err != nil {
			return nil, err
		}
		if _, err := ht.New(htm.name).Parse(htm.body); err != nil {
			return nil, err
		}
		for _, need := range []string{"subject", "body", "footer"} {
			if tt.Lookup(need) == nil {
				return nil, fmt.Errorf("%s: defines no %q template", txt.name, need)
			}
		}
		for _, need := range []string{"preheader", "body", "footer"} {
			if ht.Lookup(need) == nil {
				return nil, fmt.Errorf("%s: defines no %q template", htm.name, need)
			}
		}
		set[e] = emailTemplates{text: tt, html: ht}
	}
	return set, nil
}

// check renders one email with sample data: an error at run time (a field
// that does not exist, say) is then a configuration error at start, as
// is an email that would not carry its code, or a notice its link.
func (t *Templates) check(files map[string]source, loc, email string) error {
	sample, field, what := "123456", "{{.Code}}", "code"
	switch {
	case slices.Contains(notices, email):
		sample, field, what = "https://renew.example.com/check", "{{.RenewURL}}", "renew link"
	case email == EmailChangeRequested:
		sample, field, what = "https://cancel.example.com/check", "{{.CancelURL}}", "cancel link"
	case email == EmailChanged:
		sample, field, what = "new-address@example.com", "{{.NewEmail}}", "new address"
	case email == EmailPasswordChanged:
		sample, field, what = "", "", ""
	case email == EmailRecoveryCodeUsed:
		sample, field, what = "7", "{{.Count}}", "count"
	case email == EmailNewDevice:
		sample, field, what = "203.0.113.7", "{{.IP}}", "IP address"
	case email == EmailNotification:
		sample, field, what = "https://unsubscribe.example.com/check", "{{.UnsubscribeURL}}", "unsubscribe link"
	}
	v := Vars{Code: "123456", TTL: 15 * time.Minute, Plan: "premium", RenewURL: "https://renew.example.com/check", Date: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC),
		NewEmail: "new-address@example.com", CancelURL: "https://cancel.example.com/check", Count: 7,
		IP: "203.0.113.7", UserAgent: "CheckBrowser/1.0", EndURL: "https://end.example.com/check",
		Title: "Check subject", Content: "Check content", UnsubscribeURL: "https://unsubscribe.example.com/check"}
	m, err := t.render(loc, email, "check@example.com", v)
	if err != nil {
		return err
	}
	if email == EmailNotification {
		// The notification's own words, in both parts; its subject is
		// the sender's.
		for part, body := range map[string]string{".txt": m.Text, ".html": m.HTML} {
			if !strings.Contains(body, v.Content) {
				return fmt.Errorf("%s: the notification's content must show ({{.Content}})", files[loc+"/"+email+part].name)
			}
		}
		if !strings.Contains(m.Subject, v.Title) {
			return fmt.Errorf("%s: the subject must show the notification's ({{.Title}}), not only %q", files[loc+"/"+email+".txt"].name, m.Subject)
		}
	}
	if !strings.Contains(m.Text, sample) {
		return fmt.Errorf("%s: the text part must show the %s (%s)", files[loc+"/"+email+".txt"].name, what, field)
	}
	if !strings.Contains(m.HTML, sample) {
		return fmt.Errorf("%s: the HTML part must show the %s (%s)", files[loc+"/"+email+".html"].name, what, field)
	}
	if m.Subject == "" {
		return fmt.Errorf("%s: the subject is empty", files[loc+"/"+email+".txt"].name)
	}
	return nil
}

// Locales lists the locales templates exist for, DefaultLocale first.
func (t *Templates) Locales() []string { return slices.Clone(t.locales) }

// Match returns the locale of the templates that best fit the languages
// a client accepts (best first, as BCP 47 tags); false when none fits.
func (t *Templates) Match(accepted ...string) (string, bool) {
	var tags []language.Tag
	for _, a := range accepted {
		if tag, err := language.Parse(a); err == nil {
			tags = append(tags, tag)
		}
	}
	if len(tags) == 0 {
		return "", false
	}
	_, i, conf := t.matcher.Match(tags...)
	if conf == language.No {
		return "", false
	}
	return t.locales[i], true
}

// localeFor is the locale whose templates render for an account's locale:
// the best fit (de for de-AT), else DefaultLocale.
func (t *Templates) localeFor(locale string) string {
	if locale == "" {
		return DefaultLocale
	}
	if loc, ok := t.Match(locale); ok {
		return loc
	}
	return DefaultLocale
}

// Render composes email (EmailVerify, EmailReset, a notice, or
// EmailNotification) to to, in the language
// that best fits locale (an account's BCP 47 tag; "" for the default).
func (t *Templates) Render(email, locale, to string, v Vars) (Message, error) {
	return t.render(t.localeFor(locale), email, to, v)
}

func (t *Templates) render(loc, email, to string, v Vars) (Message, error) {
	set, ok := t.sets[loc][email]
	if !ok {
		return Message{}, fmt.Errorf("mail: no email named %q", email)
	}
	d := Data{
		Product:        t.brand.Product,
		LogoURL:        t.brand.LogoURL,
		SupportEmail:   t.brand.SupportEmail,
		Lang:           loc,
		Code:           v.Code,
		ValidSeconds:   int(v.TTL.Round(time.Second) / time.Second),
		ValidMinutes:   int(v.TTL.Round(time.Minute) / time.Minute),
		Plan:           v.Plan,
		RenewURL:       v.RenewURL,
		Date:           v.Date,
		NewEmail:       v.NewEmail,
		CancelURL:      v.CancelURL,
		Count:          v.Count,
		IP:             v.IP,
		UserAgent:      v.UserAgent,
		EndURL:         v.EndURL,
		Title:          v.Title,
		Content:        v.Content,
		UnsubscribeURL: v.UnsubscribeURL,
	}
	var subject, text, html bytes.Buffer
	if err := set.text.ExecuteTemplate(&subject, "subject", d); err != nil {
		return Message{}, err
	}
	// A subject is one line, whatever the template's line breaks.
	d.Subject = strings.Join(strings.Fields(subject.String()), " ")
	if err := set.text.Execute(&text, d); err != nil {
		return Message{}, err
	}
	if err := set.html.Execute(&html, d); err != nil {
		return Message{}, err
	}
	return Message{
		To:              to,
		Subject:         d.Subject,
		Text:            strings.TrimSpace(text.String()) + "\n",
		HTML:            html.String(),
		Code:            v.Code,
		Locale:          loc,
		ListUnsubscribe: v.UnsubscribeURL,
	}, nil
}

// pathErr names the file once: fs errors name it already, relative to
// their root.
func pathErr(name string, err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", name, err)
}
