package config

import (
	"os"
	"strings"
	"testing"
)

// The README's configuration table is the operators' reference: every
// variable Herald reads must be in it.
func TestREADMEListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range Vars() {
		if !strings.Contains(string(readme), "| `"+v.Name+"` |") {
			t.Errorf("README's configuration table lacks %s", v.Name)
		}
	}
}
