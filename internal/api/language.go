package api

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/language"
)

// Bounds on the Accept-Language header: browsers send a handful of
// languages in well under 200 bytes.
const (
	maxAcceptLanguageLen = 1024 // bytes read; the rest is ignored
	maxLanguageRanges    = 32   // entries looked at
	maxAcceptedLanguages = 8    // languages returned
	maxLanguageTagLen    = 35
)

// AcceptedLanguages parses an Accept-Language header (RFC 9110, 12.5.4)
// into canonical BCP 47 tags, best first (by q, then by order), without
// duplicates. It is lenient, as a header only advises: a malformed entry,
// "*" and q=0 are skipped, not an error.
func AcceptedLanguages(header string) []string {
	if len(header) > maxAcceptLanguageLen {
		header = header[:maxAcceptLanguageLen]
		if i := strings.LastIndexByte(header, ','); i >= 0 {
			header = header[:i] // drop the entry cut in two
		}
	}
	type entry struct {
		tag string
		q   int // thousandths
	}
	var entries []entry
	for i, part := range strings.Split(header, ",") {
		if i == maxLanguageRanges {
			break
		}
		rng, params, _ := strings.Cut(part, ";")
		rng = strings.TrimSpace(rng)
		q, ok := 1000, true
		for p := range strings.SplitSeq(params, ";") {
			k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
			if strings.EqualFold(strings.TrimSpace(k), "q") {
				q, ok = parseQ(strings.TrimSpace(v))
			}
		}
		if !ok || q == 0 || !languageRange(rng) {
			continue
		}
		tag, err := language.Parse(rng)
		if err != nil || tag == language.Und {
			continue
		}
		entries = append(entries, entry{tag.String(), q})
	}
	slices.SortStableFunc(entries, func(a, b entry) int { return cmp.Compare(b.q, a.q) })
	var out []string
	for _, e := range entries {
		if !slices.Contains(out, e.tag) {
			out = append(out, e.tag)
		}
		if len(out) == maxAcceptedLanguages {
			break
		}
	}
	return out
}

// languageRange reports whether s is a language range other than "*":
// 1*8ALPHA *("-" 1*8alphanum), and short enough to be a real tag.
func languageRange(s string) bool {
	if s == "" || len(s) > maxLanguageTagLen {
		return false
	}
	for i, sub := range strings.Split(s, "-") {
		if sub == "" || len(sub) > 8 {
			return false
		}
		for j := 0; j < len(sub); j++ {
			c := sub[j] | 0x20 // lower case for letters
			letter := c >= 'a' && c <= 'z'
			digit := sub[j] >= '0' && sub[j] <= '9'
			if !letter && (i == 0 || !digit) {
				return false
			}
		}
	}
	return true
}

// parseQ reads a weight: qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] ),
// in thousandths.
func parseQ(v string) (int, bool) {
	whole, frac, _ := strings.Cut(v, ".")
	if (whole != "0" && whole != "1") || len(frac) > 3 {
		return 0, false
	}
	for i := 0; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, false
		}
	}
	n, _ := strconv.Atoi(whole + (frac + "000")[:3])
	if n > 1000 {
		return 0, false
	}
	return n, true
}

// Accepted returns the languages the request's client accepts (its
// Accept-Language, parsed), best first.
func Accepted(info *RequestInfo) []string { return AcceptedLanguages(info.AcceptLanguage) }
