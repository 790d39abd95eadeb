// Package docs holds the tests of Herald's manual (README.md and docs/):
// the manual's contents are generated from the pages' headings, the README
// links every page, and every relative link and image path resolves, its
// #fragment included.
package docs

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/herald-vpn/herald/internal/testsupport"
)

var update = flag.Bool("update", false, "rewrite the generated contents of docs/README.md")

const (
	root = "../.."
	// refreshContents is the command that rewrites the manual's contents.
	refreshContents = "go test ./internal/docs -run TestManualContents -update"
)

// manual lists the pages of docs/ in the order the contents show them.
// docs/README.md is the index itself.
var manual = []string{
	"commands.md", "configuration.md", "operations.md",
	"api.md", "errors.md", "accounts.md", "security.md", "rate-limits.md", "notifications.md", "messenger.md",
	"clients.md", "webhooks.md", "billing.md", "rest.md", "graphql.md",
	"console.md", "benchmarks.md", "architecture.md", "testing.md",
}

// heading is one ATX heading of a page.
type heading struct {
	level int
	text  string // as written, Markdown included
}

// page is what the tests read of a Markdown file.
type page struct {
	headings []heading
	links    []string // link and image destinations, in order
}

var (
	atxHeading  = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	inlineCode  = regexp.MustCompile("`[^`]*`")
	linkTarget  = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	linkText    = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	htmlComment = regexp.MustCompile(`<!--.*?-->`)
)

// readPage reads the headings and links of a Markdown file, outside fenced
// code blocks and inline code.
func readPage(t *testing.T, path string) page {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p page
	fenced := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := atxHeading.FindStringSubmatch(line); m != nil {
			p.headings = append(p.headings, heading{len(m[1]), m[2]})
		}
		line = htmlComment.ReplaceAllString(inlineCode.ReplaceAllString(line, ""), "")
		for _, m := range linkTarget.FindAllStringSubmatch(line, -1) {
			p.links = append(p.links, m[1])
		}
	}
	return p
}

// plain is a heading's text as a reader sees it: links become their text,
// and code loses its backticks.
func plain(text string) string {
	return strings.ReplaceAll(linkText.ReplaceAllString(text, "$1"), "`", "")
}

// anchors returns the fragment of every heading, as GitHub makes them:
// lower case, only letters, digits, spaces, hyphens and underscores kept,
// spaces as hyphens, and -1, -2… after a repeated one.
func anchors(hs []heading) map[string]bool {
	out, seen := map[string]bool{}, map[string]int{}
	for _, h := range hs {
		a := slug(h.text)
		if n := seen[a]; n > 0 {
			seen[a] = n + 1
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

func slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(plain(text)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// The manual's contents, in docs/README.md, list every page of docs/ with
// its sections (## headings), generated from the pages themselves; this
// test fails when a page is missing from them or they are stale.
func TestManualContents(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		if name := filepath.Base(p); name != "README.md" && !slices.Contains(manual, name) {
			t.Errorf("docs/%s is not in the manual's contents: add it to manual in %s", name, "internal/docs/docs_test.go")
		}
	}
	var b strings.Builder
	for _, name := range manual {
		p := readPage(t, filepath.Join(root, "docs", name))
		if len(p.headings) == 0 || p.headings[0].level != 1 {
			t.Fatalf("docs/%s does not begin with a # title", name)
		}
		b.WriteString("- [" + plain(p.headings[0].text) + "](" + name + ")\n")
		for _, h := range p.headings[1:] {
			if h.level == 2 {
				b.WriteString("  - [" + plain(h.text) + "](" + name + "#" + slug(h.text) + ")\n")
			}
		}
	}
	testsupport.CheckGenerated(t, filepath.Join(root, "docs", "README.md"), refreshContents, b.String(), *update)
}

// Every relative link and image of README.md and docs/ leads to a file or
// folder of the repository, and its #fragment to a heading of that page.
func TestManualLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	headings := map[string]map[string]bool{} // by cleaned path
	anchorsOf := func(path string) map[string]bool {
		if a, ok := headings[path]; ok {
			return a
		}
		headings[path] = anchors(readPage(t, path).headings)
		return headings[path]
	}
	for _, file := range files {
		name, _ := filepath.Rel(root, file)
		for _, link := range readPage(t, file).links {
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			target, fragment, _ := strings.Cut(link, "#")
			path := file
			if target != "" {
				path = filepath.Join(filepath.Dir(file), target)
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s: link %s: no such file or folder", name, link)
					continue
				}
			}
			if fragment == "" {
				continue
			}
			if !strings.HasSuffix(path, ".md") {
				t.Errorf("%s: link %s: a fragment into a file that is not Markdown", name, link)
				continue
			}
			if !anchorsOf(filepath.Clean(path))[fragment] {
				t.Errorf("%s: link %s: no heading makes #%s there", name, link, fragment)
			}
		}
	}
}

// The README, the front door, links every page of the manual.
func TestREADMELinksEveryPage(t *testing.T) {
	links := readPage(t, filepath.Join(root, "README.md")).links
	for _, name := range append([]string{"README.md"}, manual...) {
		if !slices.ContainsFunc(links, func(l string) bool { return strings.HasPrefix(l, "docs/"+name) }) {
			t.Errorf("README.md does not link docs/%s", name)
		}
	}
}
