package preferences

import (
	"fmt"
	"strings"
	"time"
)

// Digest windows bound HERALD_NOTIFICATION_DIGESTS: shorter than a minute
// folds nothing a person would notice, longer than a day is a newsletter.
const (
	MinDigestWindow = time.Minute
	MaxDigestWindow = 24 * time.Hour
)

// Digests are the categories whose sends to a user are folded into one
// digest per window (HERALD_NOTIFICATION_DIGESTS), and each one's window.
type Digests map[string]time.Duration

// ParseDigests reads "category=window,…" (for example "messages=15m"):
// each category named once, each window a Go duration between
// MinDigestWindow and MaxDigestWindow. Whether the categories exist is
// the catalogue's to say (Catalogue.CheckDigests).
func ParseDigests(spec string) (Digests, error) {
	d := Digests{}
	if strings.TrimSpace(spec) == "" {
		return d, nil
	}
	for _, part := range strings.Split(spec, ",") {
		name, window, ok := strings.Cut(strings.TrimSpace(part), "=")
		name, window = strings.TrimSpace(name), strings.TrimSpace(window)
		if !ok || name == "" || window == "" {
			return nil, fmt.Errorf("%q: write category=window, for example messages=15m", strings.TrimSpace(part))
		}
		if !validName(name) {
			return nil, fmt.Errorf("%q is not a category name (1 to %d lowercase letters, digits, '-' or '_')", name, MaxCategoryLen)
		}
		if _, dup := d[name]; dup {
			return nil, fmt.Errorf("category %q is named twice", name)
		}
		w, err := time.ParseDuration(window)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a duration (use Go syntax such as 15m or 1h)", name, window)
		}
		if w < MinDigestWindow || w > MaxDigestWindow {
			return nil, fmt.Errorf("%s: the window %s is outside %s to %s", name, w, MinDigestWindow, MaxDigestWindow)
		}
		d[name] = w
	}
	return d, nil
}

// CheckDigests refuses a digest of a category the catalogue does not have,
// and of a critical one: a sign-in alert or a failed payment is told at
// once, never folded.
func (c Catalogue) CheckDigests(d Digests) error {
	for name := range d {
		k, ok := c.Find(name)
		switch {
		case !ok:
			return fmt.Errorf("no notification category %q (known: %s)", name, c.Names())
		case k.Critical:
			return fmt.Errorf("category %q is critical: its sends are never folded into a digest", name)
		}
	}
	return nil
}
