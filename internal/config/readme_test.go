package config

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// readmeRow is one row of the README's configuration table.
type readmeRow struct {
	line                        int
	name, def, example, meaning string
}

// readmeConfigTable returns the rows of the table under "## Configuration"
// whose header is | Variable | Default | Example | Meaning |.
func readmeConfigTable(t *testing.T) []readmeRow {
	t.Helper()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	start, inSection := -1, false
	for i, l := range lines {
		if strings.HasPrefix(l, "## ") {
			inSection = l == "## Configuration"
		}
		if inSection && strings.TrimSpace(l) == "| Variable | Default | Example | Meaning |" {
			start = i + 2 // past the |---| line
			break
		}
	}
	if start < 0 || start > len(lines) || !strings.HasPrefix(lines[start-1], "|---") {
		t.Fatal("README has no | Variable | Default | Example | Meaning | table under ## Configuration")
	}
	var rows []readmeRow
	for i := start; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
		l := strings.TrimSpace(lines[i])
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(l, "|"), "|"), "|")
		if len(cells) != 4 {
			t.Fatalf("README line %d: %d cells, want 4 (a | inside a cell?): %s", i+1, len(cells), l)
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		rows = append(rows, readmeRow{line: i + 1, name: cells[0], def: cells[1], example: cells[2], meaning: cells[3]})
	}
	return rows
}

// The README's configuration table is the operators' reference: it lists
// every variable Herald reads, in the order of Vars (and of `serve
// --help`), each with the default Herald really uses, the example and the
// meaning of Vars, and nothing else.
func TestREADMEConfigurationTableMatchesVars(t *testing.T) {
	rows := readmeConfigTable(t)
	vars := Vars()
	// Defaults computed at start-up are described in words.
	computed := map[string]struct{ words, value string }{
		"HERALD_HASH_CONCURRENCY": {"number of CPUs", strconv.Itoa(runtime.NumCPU())},
	}
	byName := map[string]readmeRow{}
	for _, r := range rows {
		if _, dup := byName[r.name]; dup {
			t.Errorf("README line %d: %s listed twice", r.line, r.name)
		}
		byName[r.name] = r
	}
	known, outOfOrder := map[string]bool{}, false
	for i, v := range vars {
		name := "`" + v.Name + "`"
		known[name] = true
		r, ok := byName[name]
		if !ok {
			t.Errorf("README's configuration table lacks %s", v.Name)
			continue
		}
		if i < len(rows) && rows[i].name != name && !outOfOrder {
			outOfOrder = true // one report is enough: the rest shifts with it
			t.Errorf("README line %d: %s, want %s (the table follows the order of config.Vars)", rows[i].line, rows[i].name, name)
		}
		wantDef := v.Default
		if c, ok := computed[v.Name]; ok {
			if v.Default != c.value {
				t.Errorf("%s: default %q, want %s (%s)", v.Name, v.Default, c.words, c.value)
			}
			wantDef = c.words
		} else if wantDef == "" {
			wantDef = "(empty)"
		}
		if r.def != wantDef {
			t.Errorf("README line %d: %s default %q, config.Vars says %q", r.line, v.Name, r.def, wantDef)
		}
		if want := "`" + v.Example + "`"; r.example != want {
			t.Errorf("README line %d: %s example %s, config.Vars says %s", r.line, v.Name, r.example, want)
		}
		if r.meaning != v.Help {
			t.Errorf("README line %d: %s meaning\n\t%q\nconfig.Vars says\n\t%q", r.line, v.Name, r.meaning, v.Help)
		}
	}
	for _, r := range rows {
		if !known[r.name] {
			t.Errorf("README line %d: %s is not a variable Herald reads (config.Vars)", r.line, r.name)
		}
	}
	if len(rows) != len(vars) {
		t.Errorf("README's configuration table has %d rows, config.Vars %d", len(rows), len(vars))
	}
}
