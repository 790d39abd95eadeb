package apperr

import (
	"flag"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/testsupport"
)

var update = flag.Bool("update", false, "rewrite the generated part of docs/errors.md")

// refreshReference is the command that rewrites the reference from the catalogue.
const refreshReference = "go test ./internal/apperr -run TestErrorReference -update"

// referenceTable is the error reference made from the catalogue: every
// code, in alphabetical order, with its HTTP status, whether a client may
// retry it and its default message.
func referenceTable(t *testing.T, entries []Entry) string {
	t.Helper()
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(string(a.Code), string(b.Code)) })
	var b strings.Builder
	b.WriteString("| Code | HTTP | Retryable | Default message |\n|---|---|---|---|\n")
	for _, e := range entries {
		if strings.ContainsAny(e.Message, "|\n") {
			t.Errorf("%s: message %q would break its Markdown table cell (a | or line break)", e.Code, e.Message)
		}
		retryable := "no"
		if Retryable(e.Status) {
			retryable = "yes"
		}
		b.WriteString("| `" + string(e.Code) + "` | " + strconv.Itoa(e.Status) + " | " + retryable + " | " + e.Message + " |\n")
	}
	return b.String()
}

// The error reference, docs/errors.md, lists every code clients may see.
// Its table is generated from the catalogue, and this test fails when the
// page is stale (CI runs it with every test).
func TestErrorReference(t *testing.T) {
	testsupport.CheckGenerated(t, "../../docs/errors.md", refreshReference, referenceTable(t, All()), *update)
}
