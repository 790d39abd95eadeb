package telegramtest

//lint:file-ignore ST1005 these errors are Telegram's own wording (capitalised), which the fake sends back verbatim after "Bad Request: can't parse entities: ".

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// HTMLToken is one piece of Telegram-HTML: a run of decoded text (Tag ""),
// or a start/end tag.
type HTMLToken struct {
	Text  string
	Tag   string // lower-case tag name
	End   bool   // true for </tag>
	Attrs map[string]string
}

// supportedTags are the tags Telegram's HTML parse mode accepts.
var supportedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true,
	"s": true, "strike": true, "del": true, "a": true, "code": true,
	"pre": true, "tg-spoiler": true, "span": true, "blockquote": true,
}

// ParseHTML tokenises s under Telegram's HTML parse-mode rules and returns
// an error worded like Telegram's "can't parse entities: …" detail.
//
// It is deliberately a little stricter than Telegram: a bare '&' that does
// not start &lt; &gt; &amp; &quot; or a numeric entity, and a bare '>',
// are rejected (Telegram sometimes tolerates them, but its docs say they
// must be escaped).
func ParseHTML(s string) ([]HTMLToken, error) {
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("Strings must be encoded in UTF-8")
	}
	var (
		toks  []HTMLToken
		text  strings.Builder
		stack []string
	)
	flush := func() {
		if text.Len() > 0 {
			toks = append(toks, HTMLToken{Text: text.String()})
			text.Reset()
		}
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '&':
			r, n, err := decodeEntity(s, i)
			if err != nil {
				return nil, err
			}
			text.WriteString(r)
			i += n
		case '>':
			return nil, fmt.Errorf("Character '>' is reserved and must be escaped as &gt; at byte offset %d", i)
		case '<':
			flush()
			if i+1 < len(s) && s[i+1] == '/' {
				j := strings.IndexByte(s[i:], '>')
				if j < 0 {
					return nil, fmt.Errorf("Unclosed end tag at byte offset %d", i)
				}
				name := strings.ToLower(strings.TrimSpace(s[i+2 : i+j]))
				if len(stack) == 0 {
					return nil, fmt.Errorf("Unexpected end tag at byte offset %d", i)
				}
				if top := stack[len(stack)-1]; name != top {
					return nil, fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", i, top, name)
				}
				stack = stack[:len(stack)-1]
				toks = append(toks, HTMLToken{Tag: name, End: true})
				i += j + 1
				continue
			}
			tok, n, err := parseStartTag(s, i)
			if err != nil {
				return nil, err
			}
			stack = append(stack, tok.Tag)
			toks = append(toks, tok)
			i += n
		default:
			text.WriteByte(s[i])
			i++
		}
	}
	if len(stack) > 0 {
		return nil, fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	flush()
	return toks, nil
}

// ValidateHTML checks s like Telegram does and returns the visible text
// (tags removed, entities decoded).
func ValidateHTML(s string) (visible string, err error) {
	toks, err := ParseHTML(s)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, t := range toks {
		b.WriteString(t.Text)
	}
	return b.String(), nil
}

func parseStartTag(s string, start int) (HTMLToken, int, error) {
	i := start + 1
	j := i
	for j < len(s) && isNameByte(s[j]) {
		j++
	}
	name := strings.ToLower(s[i:j])
	if !supportedTags[name] {
		return HTMLToken{}, 0, fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, start)
	}
	tok := HTMLToken{Tag: name, Attrs: map[string]string{}}
	for {
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		if j >= len(s) {
			return HTMLToken{}, 0, fmt.Errorf("Unclosed start tag at byte offset %d", start)
		}
		if s[j] == '>' {
			j++
			break
		}
		k := j
		for k < len(s) && isNameByte(s[k]) {
			k++
		}
		if k == j {
			return HTMLToken{}, 0, fmt.Errorf("Empty attribute name in the tag \"%s\" at byte offset %d", name, j)
		}
		attr := strings.ToLower(s[j:k])
		j = k
		for j < len(s) && isSpace(s[j]) {
			j++
		}
		val := ""
		if j < len(s) && s[j] == '=' {
			j++
			for j < len(s) && isSpace(s[j]) {
				j++
			}
			if j >= len(s) {
				return HTMLToken{}, 0, fmt.Errorf("Unclosed start tag at byte offset %d", start)
			}
			var raw string
			if q := s[j]; q == '"' || q == '\'' {
				e := strings.IndexByte(s[j+1:], q)
				if e < 0 {
					return HTMLToken{}, 0, fmt.Errorf("Unclosed start tag at byte offset %d", start)
				}
				raw = s[j+1 : j+1+e]
				j += e + 2
			} else {
				e := j
				for e < len(s) && !isSpace(s[e]) && s[e] != '>' {
					e++
				}
				raw = s[j:e]
				j = e
			}
			v, err := decodeAttr(raw, j)
			if err != nil {
				return HTMLToken{}, 0, err
			}
			val = v
		}
		tok.Attrs[attr] = val
	}
	if name == "span" && tok.Attrs["class"] != "tg-spoiler" {
		return HTMLToken{}, 0, fmt.Errorf("Tag \"span\" must have class \"tg-spoiler\" at byte offset %d", start)
	}
	return tok, j - start, nil
}

func decodeAttr(raw string, off int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(raw); {
		if raw[i] == '&' {
			r, n, err := decodeEntity(raw, i)
			if err != nil {
				return "", fmt.Errorf("%v in attribute near byte offset %d", err, off)
			}
			b.WriteString(r)
			i += n
			continue
		}
		if raw[i] == '<' {
			return "", fmt.Errorf("Character '<' is reserved and must be escaped in attribute near byte offset %d", off)
		}
		b.WriteByte(raw[i])
		i++
	}
	return b.String(), nil
}

// decodeEntity decodes the entity starting at s[i] == '&'.
func decodeEntity(s string, i int) (string, int, error) {
	end := strings.IndexByte(s[i:], ';')
	if end > 1 && end <= 10 {
		ent := s[i+1 : i+end]
		switch ent {
		case "lt":
			return "<", end + 1, nil
		case "gt":
			return ">", end + 1, nil
		case "amp":
			return "&", end + 1, nil
		case "quot":
			return "\"", end + 1, nil
		}
		if strings.HasPrefix(ent, "#") {
			var (
				n   uint64
				err error
			)
			if len(ent) > 1 && (ent[1] == 'x' || ent[1] == 'X') {
				n, err = strconv.ParseUint(ent[2:], 16, 32)
			} else {
				n, err = strconv.ParseUint(ent[1:], 10, 32)
			}
			if err == nil && n > 0 && utf8.ValidRune(rune(n)) {
				return string(rune(n)), end + 1, nil
			}
		}
	}
	return "", 0, fmt.Errorf("Character '&' is reserved and must be escaped as &amp; at byte offset %d", i)
}

func isNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
