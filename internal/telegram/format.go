package telegram

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// FormatMarkdown converts Markdown as people usually type it into text for
// Telegram's HTML parse mode and returns it with ParseModeHTML.
//
// Recognised: **bold** / __bold__, *italic* / _italic_, ~~strike~~,
// `code`, ```pre``` (with an optional language line), [text](url) for
// http, https and tg URLs, and backslash escapes of ASCII punctuation
// (\* gives a literal *). Everything else – headings, lists, unmatched
// markers, <, >, &, a lone \ – is sent literally, escaped as needed. An
// underscore inside a word (snake_case) is never emphasis, and bare
// http(s) URLs are left untouched so their _ and * survive.
//
// The output always parses under Telegram's HTML rules: only b, i, s, a,
// code and pre tags, properly nested, with &lt; &gt; &amp; &quot; escapes.
// Invalid UTF-8 is replaced with U+FFFD since Telegram rejects it, and
// CRLF (as browsers submit textareas) becomes LF.
func FormatMarkdown(md string) (text string, parseMode string) {
	md = strings.ReplaceAll(strings.ToValidUTF8(md, "\uFFFD"), "\r\n", "\n")
	f := &mdFormatter{s: md, links: map[int]mdLink{}, codes: map[int]int{}}
	f.b.Grow(len(md) + len(md)/8)
	f.render(0, len(md), false, false)
	return f.b.String(), ParseModeHTML
}

// mdFormatter works on absolute offsets into s so that link and code-span
// lookups can be cached; without the caches nested emphasis scans over
// many brackets would be cubic.
type mdFormatter struct {
	s     string
	b     strings.Builder
	links map[int]mdLink // '[' offset -> parsed link (end < 0: none)
	codes map[int]int    // backtick-run offset -> offset of closing run (-1: none)
}

type mdLink struct {
	textLo, textHi int
	url            string
	end            int
}

// render writes s[lo:hi] as HTML. inLink forbids nested links; nested
// means we are inside another tag, where <pre> would be out of place.
func (f *mdFormatter) render(lo, hi int, inLink, nested bool) {
	s := f.s
	i := lo
	for i < hi {
		c := s[i]
		switch {
		case c == '\\' && i+1 < hi && isASCIIPunct(s[i+1]):
			f.writeEscaped(s[i+1 : i+2])
			i += 2
			continue
		case c == '`':
			n := runLen(s, i, hi, '`')
			if end := f.codeClose(i, n); end >= 0 && end+n <= hi &&
				f.writeCode(s[i+n:end], n >= 3 && !inLink && !nested) {
				i = end + n
			} else {
				f.b.WriteString(s[i : i+n])
				i += n
			}
			continue
		case c == '[' && !inLink:
			if l := f.link(i); l.end >= 0 && l.end <= hi {
				f.b.WriteString(`<a href="`)
				writeAttr(&f.b, l.url)
				f.b.WriteString(`">`)
				f.render(l.textLo, l.textHi, true, true)
				f.b.WriteString("</a>")
				i = l.end
				continue
			}
		case c == 'h' || c == 'H':
			if end := bareURLEnd(s, i, hi); end > i {
				f.writeEscaped(s[i:end])
				i = end
				continue
			}
		case c == '*' || c == '_' || c == '~':
			if next, ok := f.emphasis(i, lo, hi, inLink); ok {
				i = next
				continue
			}
			n := runLen(s, i, hi, c)
			f.b.WriteString(s[i : i+n])
			i += n
			continue
		}
		f.writeEscaped(s[i : i+1])
		i++
	}
}

// emphasis tries to open bold/italic/strike at i; on success it writes the
// element and returns the offset after the closing delimiter.
func (f *mdFormatter) emphasis(i, lo, hi int, inLink bool) (int, bool) {
	s := f.s
	d := s[i]
	n := runLen(s, i, hi, d)
	w := 1
	if n >= 2 {
		w = 2
	}
	if d == '~' && w != 2 {
		return 0, false
	}
	// Opening run must be followed by non-space; _ must not be mid-word.
	if i+n >= hi {
		return 0, false
	}
	if r, _ := utf8.DecodeRuneInString(s[i+n : hi]); unicode.IsSpace(r) {
		return 0, false
	}
	if d == '_' && i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); isWordRune(r) {
			return 0, false
		}
	}
	close := f.findCloser(i+w, hi, d, w)
	if close < 0 {
		return 0, false
	}
	tag := "i"
	switch {
	case d == '~':
		tag = "s"
	case w == 2:
		tag = "b"
	}
	f.b.WriteString("<" + tag + ">")
	f.render(i+w, close, inLink, true)
	f.b.WriteString("</" + tag + ">")
	return close + w, true
}

// findCloser returns the offset of a closing delimiter of width w for d in
// s[from:hi], skipping code spans, links and bare URLs whose contents are
// not markup. A closing run must follow non-space; for width 1 it must be a
// single char (so ** inside *...* is left to the inner bold), and a run of
// 3+ closes with its last w chars.
func (f *mdFormatter) findCloser(from, hi int, d byte, w int) int {
	s := f.s
	j := from
	for j < hi {
		c := s[j]
		switch {
		case c == '\\' && j+1 < hi && isASCIIPunct(s[j+1]):
			j += 2
			continue
		case c == '`':
			n := runLen(s, j, hi, '`')
			if end := f.codeClose(j, n); end >= 0 && end+n <= hi {
				j = end + n
			} else {
				j += n
			}
			continue
		case c == '[':
			if l := f.link(j); l.end >= 0 && l.end <= hi {
				j = l.end
				continue
			}
		case c == 'h' || c == 'H':
			if end := bareURLEnd(s, j, hi); end > j {
				j = end
				continue
			}
		case c == d:
			m := runLen(s, j, hi, d)
			if j > from && (m == w || m >= 3) {
				prev, _ := utf8.DecodeLastRuneInString(s[:j])
				ok := !unicode.IsSpace(prev)
				if ok && d == '_' && j+m < hi {
					next, _ := utf8.DecodeRuneInString(s[j+m : hi])
					ok = !isWordRune(next)
				}
				if ok {
					return j + m - w
				}
			}
			j += m
			continue
		}
		j++
	}
	return -1
}

// codeClose finds the run of exactly n backticks closing the run at i
// (searching the whole string; callers check it lies in range).
func (f *mdFormatter) codeClose(i, n int) int {
	if end, ok := f.codes[i]; ok {
		return end
	}
	s := f.s
	end := -1
	for j := i + n; j < len(s); {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			break
		}
		j += k
		m := runLen(s, j, len(s), '`')
		if m == n {
			end = j
			break
		}
		j += m
	}
	f.codes[i] = end
	return end
}

// link parses [text](url) at i; only http, https and tg URLs qualify, so
// javascript: and friends stay literal text.
func (f *mdFormatter) link(i int) mdLink {
	if l, ok := f.links[i]; ok {
		return l
	}
	l := parseLink(f.s, i)
	f.links[i] = l
	return l
}

func parseLink(s string, i int) mdLink {
	none := mdLink{end: -1}
	depth := 0
	k := i
	for ; k < len(s); k++ {
		c := s[k]
		if c == '\\' && k+1 < len(s) {
			k++
			continue
		}
		if c == '[' {
			depth++
		} else if c == ']' {
			depth--
			if depth == 0 {
				break
			}
		}
	}
	if k >= len(s) || k == i+1 || k+1 >= len(s) || s[k+1] != '(' {
		return none
	}
	depth = 1
	u := k + 2
	e := u
	for ; e < len(s); e++ {
		c := s[e]
		if c <= ' ' || c == '<' || c == '>' || c == 0x7f {
			return none
		}
		if c == '(' {
			depth++
		} else if c == ')' {
			depth--
			if depth == 0 {
				break
			}
		}
	}
	if e >= len(s) {
		return none
	}
	url := s[u:e]
	if !allowedLinkURL(url) {
		return none
	}
	return mdLink{textLo: i + 1, textHi: k, url: url, end: e + 1}
}

func allowedLinkURL(u string) bool {
	for _, p := range [...]string{"http://", "https://", "tg://"} {
		if len(u) > len(p) && strings.EqualFold(u[:len(p)], p) {
			return true
		}
	}
	return false
}

// bareURLEnd returns the end of an http(s) URL starting at i on a word
// boundary, or i if there is none. Trailing punctuation is left out, like
// autolinkers do, so "**see https://x.y**" still closes the bold.
func bareURLEnd(s string, i, hi int) int {
	if i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); isWordRune(r) {
			return i
		}
	}
	rest := s[i:hi]
	var n int
	switch {
	case len(rest) > 8 && strings.EqualFold(rest[:8], "https://"):
		n = 8
	case len(rest) > 7 && strings.EqualFold(rest[:7], "http://"):
		n = 7
	default:
		return i
	}
	end := i + n
	for end < hi {
		r, size := utf8.DecodeRuneInString(s[end:hi])
		if unicode.IsSpace(r) || r == '<' || r == '>' || r == '`' {
			break
		}
		end += size
	}
	for end > i+n && strings.IndexByte(".,:;!?*_~)]'\"", s[end-1]) >= 0 {
		end--
	}
	if end == i+n {
		return i
	}
	return end
}

// writeCode emits a code span, or a <pre> block for fenced code, where an
// info string on the first line becomes Telegram's language class. It
// writes nothing and reports false for an empty block, which the caller then
// keeps as literal text (an empty <pre> would silently vanish).
func (f *mdFormatter) writeCode(content string, block bool) bool {
	if !block {
		f.b.WriteString("<code>")
		f.writeEscaped(content)
		f.b.WriteString("</code>")
		return true
	}
	lang := ""
	if nl := strings.IndexByte(content, '\n'); nl >= 0 {
		if first := content[:nl]; isLang(first) {
			lang, content = first, content[nl+1:]
		} else if first == "" {
			content = content[1:]
		}
	}
	content = strings.TrimSuffix(content, "\n")
	if content == "" {
		return false
	}
	if lang != "" {
		f.b.WriteString(`<pre><code class="language-`)
		writeAttr(&f.b, lang)
		f.b.WriteString(`">`)
		f.writeEscaped(content)
		f.b.WriteString("</code></pre>")
		return true
	}
	f.b.WriteString("<pre>")
	f.writeEscaped(content)
	f.b.WriteString("</pre>")
	return true
}

func isLang(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("+#._-", c) >= 0) {
			return false
		}
	}
	return true
}

// writeEscaped writes text escaping exactly what Telegram's HTML requires.
func (f *mdFormatter) writeEscaped(t string) {
	for len(t) > 0 {
		k := strings.IndexAny(t, "<>&")
		if k < 0 {
			f.b.WriteString(t)
			return
		}
		f.b.WriteString(t[:k])
		switch t[k] {
		case '<':
			f.b.WriteString("&lt;")
		case '>':
			f.b.WriteString("&gt;")
		case '&':
			f.b.WriteString("&amp;")
		}
		t = t[k+1:]
	}
}

// writeAttr escapes an attribute value, quotes included.
func writeAttr(b *strings.Builder, v string) {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		case '"':
			b.WriteString("&quot;")
		default:
			b.WriteByte(c)
		}
	}
}

func runLen(s string, i, hi int, c byte) int {
	n := 0
	for i+n < hi && s[i+n] == c {
		n++
	}
	return n
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

func isWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
