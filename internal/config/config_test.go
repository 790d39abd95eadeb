package config

import (
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Load(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" || c.DatabaseURL != "sqlite:herald.db" || c.VerificationCodeTTL != 15*time.Minute ||
		c.ResendCooldown != time.Minute || c.ResendHourlyLimit != 5 || c.TrialPeriod != 168*time.Hour || c.MailFrom != "Herald <no-reply@localhost>" {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestEveryProblemOnItsOwnLine(t *testing.T) {
	_, err := Load(env(map[string]string{
		"HERALD_ADDR":                "nowhere",
		"HERALD_DATABASE_URL":        "mysql://x",
		"HERALD_RESEND_COOLDOWN":     "soon",
		"HERALD_RESEND_HOURLY_LIMIT": "0",
		"HERALD_SMTP_URL":            "http://mail",
		"HERALD_TRUSTED_PROXIES":     "10.0.0.0/8, nope",
		"HERALD_LOG_FORMAT":          "xml",
	}))
	if err == nil {
		t.Fatal("bad configuration accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	for _, name := range []string{"HERALD_ADDR", "HERALD_DATABASE_URL", "HERALD_RESEND_COOLDOWN", "HERALD_RESEND_HOURLY_LIMIT", "HERALD_SMTP_URL", "HERALD_TRUSTED_PROXIES", "HERALD_LOG_FORMAT"} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(l, name+": ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line for %s in:\n%s", name, err)
		}
	}
	if len(lines) != 7 {
		t.Errorf("%d lines, want 7:\n%s", len(lines), err)
	}
}

func TestTrustedProxies(t *testing.T) {
	c, err := Load(env(map[string]string{"HERALD_TRUSTED_PROXIES": "10.1.2.3/8, 127.0.0.1 ,::1"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.TrustedProxies) != 3 || c.TrustedProxies[0].String() != "10.0.0.0/8" || c.TrustedProxies[1].String() != "127.0.0.1/32" {
		t.Fatalf("%v", c.TrustedProxies)
	}
}
