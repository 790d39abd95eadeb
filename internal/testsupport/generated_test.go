package testsupport_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// errorRecorder is a testing.TB whose Errorf records the message.
type errorRecorder struct {
	testing.TB
	msgs []string
}

func (e *errorRecorder) Helper()                         {}
func (e *errorRecorder) Logf(format string, args ...any) {}
func (e *errorRecorder) Errorf(format string, args ...any) {
	e.msgs = append(e.msgs, fmt.Sprintf(format, args...))
}

func TestCheckGenerated(t *testing.T) {
	const refresh = "go test ./x -update"
	page := func(body string) string {
		return "# Title\n\nProse.\n\n" + testsupport.GeneratedBegin(refresh) + "\n\n" + body + "\n" + testsupport.GeneratedEnd + "\n\nMore prose.\n"
	}
	path := filepath.Join(t.TempDir(), "page.md")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	// Current: no error, nothing written.
	write(page("| a |\n| b |\n"))
	rec := &errorRecorder{TB: t}
	testsupport.CheckGenerated(rec, path, refresh, "| a |\n| b |\n", false)
	if len(rec.msgs) != 0 {
		t.Fatalf("a current page failed: %q", rec.msgs)
	}

	// Stale: the error names the page's line and the command; nothing is written.
	for _, c := range []struct{ body, want, line string }{
		{"| a |\n| x |\n", "| a |\n| b |\n", "line 8 is\n\t\"| x |\"\nwant\n\t\"| b |\""},
		{"| a |\n", "| a |\n| b |\n", "line 8 is\n\t\"\"\nwant\n\t\"| b |\""},
		{"| a |\n| b |\n| c |\n", "| a |\n| b |\n", "line 9 is\n\t\"| c |\"\nwant\n\t\"\""},
	} {
		write(page(c.body))
		rec := &errorRecorder{TB: t}
		testsupport.CheckGenerated(rec, path, refresh, c.want, false)
		if len(rec.msgs) != 1 || !strings.Contains(rec.msgs[0], c.line) || !strings.HasSuffix(rec.msgs[0], "refresh it with: "+refresh) {
			t.Errorf("body %q: messages %q, want one naming %q and the command", c.body, rec.msgs, c.line)
		}
		if read() != page(c.body) {
			t.Errorf("body %q: a check without update wrote the page", c.body)
		}
	}

	// Update: only the generated part changes.
	write(page("| old |\n"))
	rec = &errorRecorder{TB: t}
	testsupport.CheckGenerated(rec, path, refresh, "| a |\n| b |\n", true)
	if len(rec.msgs) != 0 || read() != page("| a |\n| b |\n") {
		t.Fatalf("after update: %q, errors %q", read(), rec.msgs)
	}
}

func TestCheckGeneratedWithoutMarkers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "page.md")
	for _, body := range []string{"# no markers\n", testsupport.GeneratedBegin("r") + "\nnot closed\n"} {
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if msg := run(t, func(tb testing.TB) { testsupport.CheckGenerated(tb, path, "r", "x\n", true) }); msg == "" {
			t.Errorf("page %q: no failure", body)
		}
		if b, _ := os.ReadFile(path); string(b) != body {
			t.Errorf("page %q was written: %q", body, b)
		}
	}
}
