package config

import (
	"flag"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/herald-vpn/herald/internal/testsupport"
)

var update = flag.Bool("update", false, "rewrite the generated part of docs/configuration.md")

// refreshReference is the command that rewrites the reference from Vars.
const refreshReference = "go test ./internal/config -run TestConfigurationReference -update"

// computedDefaults are the defaults worked out at start-up, which the
// reference describes in words rather than as this machine's value.
var computedDefaults = map[string]struct{ words, value string }{
	"HERALD_HASH_QUEUE":       {"8 × HERALD_HASH_CONCURRENCY", strconv.Itoa(HashQueuePerSlot * DefaultHashConcurrency(runtime.GOMAXPROCS(0)))},
	"HERALD_HASH_CONCURRENCY": {"half the CPUs (GOMAXPROCS), at least 1", strconv.Itoa(DefaultHashConcurrency(runtime.GOMAXPROCS(0)))},
}

// referenceTable is the configuration reference made from Vars: one row per
// variable, in the order of Vars (and of `serve --help`), each with the
// default Herald really uses, the example and the meaning.
func referenceTable(t *testing.T, vars []Var) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("| Variable | Default | Example | Meaning |\n|---|---|---|---|\n")
	seen := map[string]bool{}
	for _, v := range vars {
		if seen[v.Name] {
			t.Errorf("%s is in Vars twice", v.Name)
		}
		seen[v.Name] = true
		def := v.Default
		if c, ok := computedDefaults[v.Name]; ok {
			if v.Default != c.value {
				t.Errorf("%s: default %q, want %s (%s)", v.Name, v.Default, c.words, c.value)
			}
			def = c.words
		} else if def == "" {
			def = "(empty)"
		}
		for _, cell := range []string{v.Name, def, v.Example, v.Help} {
			if strings.ContainsAny(cell, "|\n`") {
				t.Errorf("%s: %q would break its Markdown table cell (a |, ` or line break)", v.Name, cell)
			}
		}
		b.WriteString("| `" + v.Name + "` | " + def + " | `" + v.Example + "` | " + v.Help + " |\n")
	}
	return b.String()
}

// The configuration reference, docs/configuration.md, is the operators'
// list of every variable Herald reads. Its table is generated from Vars,
// and this test fails when the page is stale (CI runs it with every test).
func TestConfigurationReference(t *testing.T) {
	testsupport.CheckGenerated(t, "../../docs/configuration.md", refreshReference, referenceTable(t, Vars()), *update)
}
