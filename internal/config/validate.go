package config

import (
	"errors"
	"fmt"
	netmail "net/mail"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
	"github.com/herald-vpn/herald/internal/seal"
	"github.com/herald-vpn/herald/internal/storage"
)

// A setter checks one variable's value and stores it in its field of the
// Config; its error says what is wrong, without the variable's name (Load
// adds it). Each constructor below is given the field it fills, so a row of
// Vars reads as name, default, example, meaning and the kind of value.
type setter func(c *Config, v string) error

// optional leaves the field at its zero value when the variable is empty,
// and checks any other value with set.
func optional(set setter) setter {
	return func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		return set(c, v)
	}
}

func str(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		*field(c) = v
		return nil
	}
}

// categories is a comma-separated list of notification categories the
// catalogue takes.
func categories(field func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		var list []string
		for _, n := range strings.Split(v, ",") {
			list = append(list, strings.TrimSpace(n))
		}
		if _, err := preferences.NewCatalogue(list); err != nil {
			return err
		}
		*field(c) = list
		return nil
	}
}

// digests is HERALD_NOTIFICATION_DIGESTS (preferences.ParseDigests); Load
// checks its categories against the catalogue.
func digests(field func(*Config) *preferences.Digests) setter {
	return func(c *Config, v string) error {
		d, err := preferences.ParseDigests(v)
		if err != nil {
			return err
		}
		*field(c) = d
		return nil
	}
}

// names is a comma-separated list of non-empty names without spaces.
func names(field func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		var out []string
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n == "" || strings.ContainsAny(n, " \t") || len(n) > 256 {
				return fmt.Errorf("must be a comma-separated list of names, not %q", v)
			}
			out = append(out, n)
		}
		*field(c) = out
		return nil
	}
}

// oneOf accepts exactly one of the words given.
func oneOf(field func(*Config) *string, words ...string) setter {
	return func(c *Config, v string) error {
		if !slices.Contains(words, v) {
			return fmt.Errorf("must be %s, not %q", orList(words), v)
		}
		*field(c) = v
		return nil
	}
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// onOff reads a switch (see parseOnOff).
func onOff(field func(*Config) *bool) setter {
	return func(c *Config, v string) error {
		on, err := parseOnOff(v)
		if err != nil {
			return err
		}
		*field(c) = on
		return nil
	}
}

func integer(field func(*Config) *int, min int) setter {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%q is not a whole number", v)
		}
		if n < min {
			return fmt.Errorf("must be at least %d, not %d", min, n)
		}
		*field(c) = n
		return nil
	}
}

// integerIn accepts a whole number from min to max.
func integerIn(field func(*Config) *int, min, max int) setter {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < min || n > max {
			return fmt.Errorf("must be a whole number from %d to %d", min, max)
		}
		*field(c) = n
		return nil
	}
}

// parseDuration reads a duration in Go's syntax.
func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use Go syntax such as 90s, 15m, 168h)", v)
	}
	return d, nil
}

func duration(field func(*Config) *time.Duration) setter {
	return func(c *Config, v string) error {
		d, err := parseDuration(v)
		if err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("must be positive, not %s", v)
		}
		*field(c) = d
		return nil
	}
}

// signedDuration is any duration: negative, zero or positive.
func signedDuration(field func(*Config) *time.Duration) setter {
	return func(c *Config, v string) error {
		d, err := parseDuration(v)
		if err != nil {
			return err
		}
		*field(c) = d
		return nil
	}
}

// durationOrZero is duration that also takes 0 (what 0 means is the
// variable's to say).
func durationOrZero(field func(*Config) *time.Duration) setter {
	return func(c *Config, v string) error {
		d, err := parseDuration(v)
		if err != nil {
			return err
		}
		if d < 0 {
			return fmt.Errorf("must not be negative, not %s", v)
		}
		*field(c) = d
		return nil
	}
}

// wholeSeconds accepts a duration of at least a second, in whole seconds
// (the rate-limit windows start at multiples of it since the Unix epoch).
func wholeSeconds(field func(*Config) *time.Duration) setter {
	return func(c *Config, v string) error {
		d, err := parseDuration(v)
		if err != nil {
			return err
		}
		if d < time.Second || d%time.Second != 0 {
			return fmt.Errorf("must be a whole number of seconds, at least 1s, not %s", v)
		}
		*field(c) = d
		return nil
	}
}

// durations reads a comma-separated list of positive durations.
func durations(field func(*Config) *[]time.Duration) setter {
	return func(c *Config, v string) error {
		*field(c) = nil
		for _, part := range strings.Split(v, ",") {
			d, err := time.ParseDuration(strings.TrimSpace(part))
			if err != nil || d <= 0 {
				return fmt.Errorf("%q is not a list of positive durations such as 5s,5m,30m", v)
			}
			*field(c) = append(*field(c), d)
		}
		return nil
	}
}

// ports reads a comma-separated list of TCP ports.
func ports(field func(*Config) *[]uint16) setter {
	return func(c *Config, v string) error {
		*field(c) = nil
		for _, part := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(strings.TrimSpace(part), 10, 16)
			if err != nil || n == 0 {
				return fmt.Errorf("%q is not a list of ports (1-65535) such as 8443,9000", v)
			}
			*field(c) = append(*field(c), uint16(n))
		}
		return nil
	}
}

// planLimits reads plan=number pairs, comma-separated.
func planLimits(field func(*Config) *map[string]int) setter {
	return func(c *Config, v string) error {
		m := map[string]int{}
		for _, part := range strings.Split(v, ",") {
			plan, n, ok := strings.Cut(strings.TrimSpace(part), "=")
			limit, err := strconv.Atoi(strings.TrimSpace(n))
			if !ok || strings.TrimSpace(plan) == "" || err != nil || limit < 0 {
				return fmt.Errorf("%q is not plan=number", part)
			}
			m[strings.TrimSpace(plan)] = limit
		}
		*field(c) = m
		return nil
	}
}

// address accepts a listen address, host:port (the host may be empty).
func address(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if _, _, err := splitHostPort(v); err != nil {
			return err
		}
		*field(c) = v
		return nil
	}
}

func splitHostPort(addr string) (string, int, error) {
	i := strings.LastIndex(addr, ":")
	if i < 0 {
		return "", 0, fmt.Errorf("%q needs a port, such as 127.0.0.1:8080", addr)
	}
	port, err := strconv.Atoi(addr[i+1:])
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q has no valid port", addr)
	}
	return addr[:i], port, nil
}

// prefixes reads comma-separated CIDRs; a bare address is its own /32 or
// /128.
func prefixes(field func(*Config) *[]netip.Prefix) setter {
	return func(c *Config, v string) error {
		*field(c) = nil
		for _, part := range strings.Split(v, ",") {
			part = strings.TrimSpace(part)
			if part == "" {
				continue
			}
			p, err := netip.ParsePrefix(part)
			if err != nil {
				a, aerr := netip.ParseAddr(part)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR", part)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			*field(c) = append(*field(c), p.Masked())
		}
		return nil
	}
}

func databaseURL(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if _, _, err := storage.ParseURL(v); err != nil {
			return err
		}
		*field(c) = v
		return nil
	}
}

func httpURL(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q is not an http(s) URL", v)
		}
		*field(c) = v
		return nil
	}
}

func httpsURL(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if u, err := url.Parse(v); err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%q is not an https URL", v)
		}
		*field(c) = v
		return nil
	}
}

// baseURL accepts the base of published URLs and keeps it without a
// trailing slash.
func baseURL(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(v, "#") {
			return fmt.Errorf("%q is not a base URL such as https://api.example.com (http(s), a host, optionally a path; no query)", v)
		}
		*field(c) = strings.TrimSuffix(v, "/")
		return nil
	}
}

func smtpURL(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "smtp" && u.Scheme != "smtps") || u.Hostname() == "" || u.Port() == "" {
			return errors.New("must look like smtp://[user:pass@]host:port or smtps://[user:pass@]host:port")
		}
		*field(c) = v
		return nil
	}
}

func redisURL(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if u, err := url.Parse(v); err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
			return errors.New("must look like redis://[user:pass@]host:port[/db] or rediss://…")
		}
		*field(c) = v
		return nil
	}
}

// mailbox accepts a sender, such as Herald <no-reply@example.com>.
func mailbox(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if !strings.Contains(v, "@") {
			return fmt.Errorf("must be an address, not %q", v)
		}
		*field(c) = v
		return nil
	}
}

// bareAddress accepts an address without a name or angle brackets.
func bareAddress(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		if _, err := netmail.ParseAddress(v); err != nil || strings.ContainsAny(v, "<> ") {
			return fmt.Errorf("must be a bare address such as support@example.com, not %q", v)
		}
		*field(c) = v
		return nil
	}
}

// line accepts one line of at most max bytes.
func line(field func(*Config) *string, max int) setter {
	return func(c *Config, v string) error {
		if len(v) > max || strings.ContainsAny(v, "\r\n\t") {
			return fmt.Errorf("must be one line of at most %d characters, not %q", max, v)
		}
		*field(c) = v
		return nil
	}
}

// token accepts 1 to max characters of A-Za-z0-9_-.
func token(field func(*Config) *string, max int) setter {
	return func(c *Config, v string) error {
		if len(v) > max || strings.Trim(v, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-") != "" {
			return fmt.Errorf("must be 1 to %d characters of A-Za-z0-9_-", max)
		}
		*field(c) = v
		return nil
	}
}

// hexKey accepts a key of at least min bytes written in hex.
func hexKey(field func(*Config) *[]byte, min int) setter {
	return func(c *Config, v string) error {
		var b []byte
		if _, err := fmt.Sscanf(v, "%x", &b); err != nil || len(b) < min || len(v) != 2*len(b) {
			return fmt.Errorf("must be at least %d hex digits", 2*min)
		}
		*field(c) = b
		return nil
	}
}

// sealKey accepts a key of the seal package.
func sealKey(field func(*Config) *[]byte) setter {
	return func(c *Config, v string) error {
		k, err := seal.ParseKey(v)
		if err != nil {
			return err
		}
		*field(c) = k
		return nil
	}
}

// sealKeyFile reads a key of the seal package from a file, in place of the
// variable other, which must not be set too.
func sealKeyFile(field func(*Config) *[]byte, other string) setter {
	return func(c *Config, v string) error {
		b, err := os.ReadFile(v)
		if err != nil {
			return err
		}
		k, err := seal.ParseKey(string(b))
		if err != nil {
			return fmt.Errorf("%s: %v", v, err)
		}
		if *field(c) != nil {
			return fmt.Errorf("set this or %s, not both", other)
		}
		*field(c) = k
		return nil
	}
}

// secretFile reads a secret from a file (trimmed of surrounding white
// space, such as the final newline), in place of the variable other, which
// must not be set too. The secret itself is never part of an error.
func secretFile(field func(*Config) *string, other string) setter {
	return func(c *Config, v string) error {
		b, err := os.ReadFile(v)
		if err != nil {
			return err
		}
		s := strings.TrimSpace(string(b))
		if s == "" {
			return fmt.Errorf("%s is empty", v)
		}
		if *field(c) != "" {
			return fmt.Errorf("set this or %s, not both", other)
		}
		*field(c) = s
		return nil
	}
}

// sealKeys reads comma-separated keys of the seal package.
func sealKeys(field func(*Config) *[][]byte) setter {
	return func(c *Config, v string) error {
		*field(c) = nil
		for _, part := range strings.Split(v, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			k, err := seal.ParseKey(part)
			if err != nil {
				return fmt.Errorf("each key %v", err)
			}
			*field(c) = append(*field(c), k)
		}
		return nil
	}
}

// origins reads HERALD_CORS_ORIGINS: exact origins as browsers send
// them in the Origin header (scheme://host[:port], no path, no default
// port), or a lone *. Browsers send the scheme and host in lower case, so
// they are kept in lower case.
func origins(field func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		list, err := corsOrigins(v)
		*field(c) = list
		return err
	}
}

func corsOrigins(v string) ([]string, error) {
	var list []string
	var problems []string
	for _, part := range strings.Split(v, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		origin, err := corsOrigin(part)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if !slices.Contains(list, origin) {
			list = append(list, origin)
		}
	}
	if len(problems) > 0 {
		return list, errors.New(strings.Join(problems, "; "))
	}
	if slices.Contains(list, "*") && len(list) > 1 {
		return list, errors.New("* allows every origin: list no other origin with it")
	}
	return list, nil
}

func corsOrigin(s string) (string, error) {
	if s == "*" {
		return s, nil
	}
	if strings.Contains(s, "*") {
		return "", fmt.Errorf("%q: origins are exact (no wildcards); * is allowed only on its own", s)
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return "", fmt.Errorf("%q is not an origin such as https://app.example.com", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return "", fmt.Errorf("%q: an origin is scheme://host[:port] only", s)
	}
	if u.Path != "" {
		return "", fmt.Errorf("%q: an origin has no path (not even /): write %s://%s", s, u.Scheme, u.Host)
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != p {
			return "", fmt.Errorf("%q has no valid port", s)
		}
		if (scheme == "http" && n == 80) || (scheme == "https" && n == 443) {
			return "", fmt.Errorf("%q: browsers send the origin without its default port: write %s://%s", s, scheme, strings.TrimSuffix(host, ":"+p))
		}
	}
	return scheme + "://" + host, nil
}

// rpID reads a WebAuthn relying party id: a domain name, lower case, no
// scheme, port or path ("localhost" included).
func rpID(field func(*Config) *string) setter {
	return func(c *Config, v string) error {
		bad := fmt.Errorf("%q is not a domain name such as example.com (no scheme, port or path)", v)
		if v != strings.ToLower(v) || len(v) > 253 || strings.HasPrefix(v, ".") || strings.HasSuffix(v, ".") {
			return bad
		}
		for _, label := range strings.Split(v, ".") {
			if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
				return bad
			}
			for _, r := range label {
				if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
					return bad
				}
			}
		}
		*field(c) = v
		return nil
	}
}

// webAuthnOrigins reads a comma-separated list of WebAuthn origins: https
// origins (scheme and host, optionally a port; nothing after), http
// origins of localhost, and Android apps' android:apk-key-hash:<hash>.
func webAuthnOrigins(field func(*Config) *[]string) setter {
	return func(c *Config, v string) error {
		*field(c) = nil
		for _, part := range strings.Split(v, ",") {
			o := strings.TrimSpace(part)
			if hash, ok := strings.CutPrefix(o, "android:apk-key-hash:"); ok {
				if hash == "" || strings.ContainsFunc(hash, func(r rune) bool {
					return !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_')
				}) {
					return fmt.Errorf("%q: an Android origin is android:apk-key-hash: and the unpadded base64url SHA-256 of the app's signing certificate", o)
				}
				*field(c) = append(*field(c), o)
				continue
			}
			u, err := url.Parse(o)
			if err != nil || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
				return fmt.Errorf("%q is not an origin such as https://example.com or android:apk-key-hash:…", o)
			}
			if u.Scheme != "https" && (u.Scheme != "http" || u.Hostname() != "localhost" && u.Hostname() != "127.0.0.1") {
				return fmt.Errorf("%q: origins are https (http only for localhost)", o)
			}
			if u.Scheme == "https" && u.Port() == "443" || u.Scheme == "http" && u.Port() == "80" || strings.HasSuffix(u.Host, ":") {
				return fmt.Errorf("%q: leave the default port out (browsers send the origin without it)", o)
			}
			*field(c) = append(*field(c), u.Scheme+"://"+strings.ToLower(u.Host))
		}
		return nil
	}
}
