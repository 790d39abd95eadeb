package telegram_test

import (
	"context"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/telegram"
	"github.com/herald-vpn/herald/internal/telegram/telegramtest"
)

var formatCases = []struct {
	name, md, html string
}{
	{"plain", "Hello there", "Hello there"},
	{"price", "Price: 4.99 (50% off!)", "Price: 4.99 (50% off!)"},
	{"lone backslash", `C:\Users\me and a lone \`, `C:\Users\me and a lone \`},
	{"unmatched star", "2 * 3 = 6 and *oops", "2 * 3 = 6 and *oops"},
	{"unmatched underscore", "_start only", "_start only"},
	{"snake case", "use my_var_name here", "use my_var_name here"},
	{"script", "<script>alert('x')</script>", "&lt;script&gt;alert('x')&lt;/script&gt;"},
	{"ampersand", "A & B > C < D &amp;", "A &amp; B &gt; C &lt; D &amp;amp;"},
	{"reserved chars", "_*[]()~`>#+-=|{}.!\\ <&> \"quotes\" 'single' 100% $5 @user #tag",
		"_*[]()~`&gt;#+-=|{}.!\\ &lt;&amp;&gt; \"quotes\" 'single' 100% $5 @user #tag"},
	{"bold", "**bold** and __also__", "<b>bold</b> and <b>also</b>"},
	{"italic", "*it* and _it_", "<i>it</i> and <i>it</i>"},
	{"strike", "~~gone~~ but ~kept~", "<s>gone</s> but ~kept~"},
	{"bold italic", "***both***", "<b><i>both</i></b>"},
	{"nested", "**bold _and italic_**", "<b>bold <i>and italic</i></b>"},
	{"italic around bold", "*a **b** c*", "<i>a <b>b</b> c</i>"},
	{"code", "run `a<b && c` now", "run <code>a&lt;b &amp;&amp; c</code> now"},
	{"code keeps markers", "`**not bold**`", "<code>**not bold**</code>"},
	{"pre", "```\nline 1\n  <line 2>\n```", "<pre>line 1\n  &lt;line 2&gt;</pre>"},
	{"pre lang", "```go\nfmt.Println(\"hi\")\n```", "<pre><code class=\"language-go\">fmt.Println(\"hi\")</code></pre>"},
	{"empty fence", "```\n```", "```\n```"},
	{"link", "[Renew](https://herald.example/renew?a=1&b=2)", `<a href="https://herald.example/renew?a=1&amp;b=2">Renew</a>`},
	{"link quotes", `[q](https://e.example/"x")`, `<a href="https://e.example/&quot;x&quot;">q</a>`},
	{"link parens", "[wiki](https://en.wikipedia.org/wiki/Go_(language))", `<a href="https://en.wikipedia.org/wiki/Go_(language)">wiki</a>`},
	{"tg link", "[support](tg://resolve?domain=herald)", `<a href="tg://resolve?domain=herald">support</a>`},
	{"bold link", "[**Go**](http://x.example)", `<a href="http://x.example"><b>Go</b></a>`},
	{"javascript link", "[bad](javascript:alert(1))", "[bad](javascript:alert(1))"},
	{"relative link", "[rel](/path)", "[rel](/path)"},
	{"bare url", "see https://example.com/a_b_c and *x*", "see https://example.com/a_b_c and <i>x</i>"},
	{"bold url", "**https://x.example**", "<b>https://x.example</b>"},
	{"escapes", `\*not italic\* and \_nor this\_`, "*not italic* and _nor this_"},
	{"spaced stars", "** not bold **", "** not bold **"},
	{"multiline", "Hi *there*\n\n- item 1\n- item 2\n# heading", "Hi <i>there</i>\n\n- item 1\n- item 2\n# heading"},
	{"crlf fence", "```go\r\nx := 1\r\n```\r\nok", "<pre><code class=\"language-go\">x := 1</code></pre>\nok"},
	{"unicode", "**Привет** мир 🎉 _ünï_", "<b>Привет</b> мир 🎉 <i>ünï</i>"},
}

func TestFormatMarkdown(t *testing.T) {
	s := telegramtest.NewServer(t, token)
	c := telegram.New(token, s.URL, nil)
	for _, tc := range formatCases {
		t.Run(tc.name, func(t *testing.T) {
			got, mode := telegram.FormatMarkdown(tc.md)
			if mode != telegram.ParseModeHTML {
				t.Fatalf("mode = %q", mode)
			}
			if got != tc.html {
				t.Fatalf("FormatMarkdown(%q)\n got %q\nwant %q", tc.md, got, tc.html)
			}
			if _, err := c.SendMessage(context.Background(), "42", got, telegram.SendOptions{ParseMode: mode}); err != nil {
				t.Fatalf("fake Telegram rejected %q: %v", got, err)
			}
		})
	}
}

// markers are the characters FormatMarkdown may consume: emphasis, code and
// link punctuation, escape backslashes and the newlines around fenced code.
const markers = "*_~`[]()\\\n"

func FuzzFormatMarkdown(f *testing.F) {
	for _, tc := range formatCases {
		f.Add(tc.md)
	}
	for _, s := range []string{
		"", "*", "**", "***", "****", "_", "__", "~~~~", "`", "```", "``````", "[", "[]()", "[a](", "[a](http://",
		"[a](http://x", "*[a](http://x*)*", "**a `**` b**", "\\", "\\\\*a*", "&", "&amp;", "<", ">", "\"", "\xff\xfe",
		"```go\n```", "```\n\n```", "*a _b* c_", "[*a](http://x.y)*", "[a](http://x.y \"t\")", "_a_b_", "a*b*c",
		"https://x.y/**a**", "**http://a.b/c_d**", "~~a ~~b~~ c~~", "[a [b](http://c.d) e](http://f.g)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out, mode := telegram.FormatMarkdown(md)
		if mode != telegram.ParseModeHTML {
			t.Fatalf("mode %q", mode)
		}
		toks, err := telegramtest.ParseHTML(out)
		if err != nil {
			t.Fatalf("FormatMarkdown(%q) = %q: %v", md, out, err)
		}
		checkStructure(t, md, out, toks)
		checkNoLoss(t, strings.ReplaceAll(strings.ToValidUTF8(md, "\uFFFD"), "\r\n", "\n"), out, toks)
	})
}

// checkStructure enforces what FormatMarkdown promises beyond parseability:
// only its own tags, nothing inside code, only code inside pre, no nested
// links, and safe link schemes.
func checkStructure(t *testing.T, md, out string, toks []telegramtest.HTMLToken) {
	t.Helper()
	var stack []string
	for _, tk := range toks {
		if tk.Tag == "" {
			continue
		}
		if tk.End {
			stack = stack[:len(stack)-1]
			continue
		}
		parent := ""
		if len(stack) > 0 {
			parent = stack[len(stack)-1]
		}
		switch tk.Tag {
		case "b", "i", "s", "a", "code", "pre":
		default:
			t.Fatalf("%q -> %q: unexpected tag %q", md, out, tk.Tag)
		}
		if parent == "code" || parent == "pre" && tk.Tag != "code" {
			t.Fatalf("%q -> %q: <%s> inside <%s>", md, out, tk.Tag, parent)
		}
		if tk.Tag == "pre" && len(stack) > 0 {
			t.Fatalf("%q -> %q: nested <pre>", md, out)
		}
		if tk.Tag == "a" {
			for _, p := range stack {
				if p == "a" {
					t.Fatalf("%q -> %q: nested <a>", md, out)
				}
			}
			h := strings.ToLower(tk.Attrs["href"])
			if !strings.HasPrefix(h, "http://") && !strings.HasPrefix(h, "https://") && !strings.HasPrefix(h, "tg://") {
				t.Fatalf("%q -> %q: unsafe href %q", md, out, tk.Attrs["href"])
			}
		}
		stack = append(stack, tk.Tag)
	}
}

// checkNoLoss rebuilds the user's characters from the output – visible
// text, plus each link's URL after its text and a code block's language
// before it, in source order – and checks that what is missing from md is
// only markdown markers.
func checkNoLoss(t *testing.T, md, out string, toks []telegramtest.HTMLToken) {
	t.Helper()
	var rec strings.Builder
	var hrefs []string
	for _, tk := range toks {
		switch {
		case tk.Tag == "":
			rec.WriteString(tk.Text)
		case tk.Tag == "a" && !tk.End:
			hrefs = append(hrefs, tk.Attrs["href"])
		case tk.Tag == "a" && tk.End:
			rec.WriteString(hrefs[len(hrefs)-1])
			hrefs = hrefs[:len(hrefs)-1]
		case tk.Tag == "code" && !tk.End:
			rec.WriteString(strings.TrimPrefix(tk.Attrs["class"], "language-"))
		}
	}
	// Greedy subsequence match: every rebuilt byte must appear in md in
	// order, and every md byte skipped on the way must be a marker.
	got := rec.String()
	j := 0
	for i := 0; i < len(md); i++ {
		if j < len(got) && md[i] == got[j] {
			j++
			continue
		}
		if strings.IndexByte(markers, md[i]) < 0 {
			t.Fatalf("FormatMarkdown(%q) = %q lost %q at byte %d (rebuilt %q)", md, out, md[i], i, got)
		}
	}
	if j != len(got) {
		t.Fatalf("FormatMarkdown(%q) = %q invented text: rebuilt %q", md, out, got)
	}
}
