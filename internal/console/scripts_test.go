package console

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// TestScriptsBuildNoMarkup: the console's scripts build the page from DOM
// nodes, so nothing Herald or a user wrote can run as markup, and set no
// style attribute, which the CSP (style-src 'self') would block. Reading
// innerHTML is allowed; writing markup is not.
func TestScriptsBuildNoMarkup(t *testing.T) {
	forbidden := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*\+?=[^=]|insertAdjacentHTML|document\.write|\beval\s*\(|new Function\b|setAttribute\(\s*["']style["']|[{,]\s*style\s*:|createContextualFragment`)
	n := 0
	err := fs.WalkDir(assets, "assets", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".js") {
			return err
		}
		n++
		src, err := fs.ReadFile(assets, path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(src), "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s:%d: %q writes markup or an inline style: %s", path, i+1, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no script found under assets")
	}
}
