package graph

import (
	"strings"
	"testing"
)

// Every field with a first argument has its page size, and every page
// size is a field with a first argument.
func TestEveryPagedFieldHasItsSize(t *testing.T) {
	schema := describedSchema()
	paged := map[string]bool{}
	for _, def := range schema.Types {
		if strings.HasPrefix(def.Name, "__") {
			continue
		}
		for _, f := range def.Fields {
			if f.Arguments.ForName("first") != nil {
				paged[def.Name+"."+f.Name] = true
				if _, ok := pageSizes[def.Name+"."+f.Name]; !ok {
					t.Errorf("%s.%s takes first but has no page size", def.Name, f.Name)
				}
			}
		}
	}
	for name := range pageSizes {
		if !paged[name] {
			t.Errorf("pageSizes has %s, which takes no first", name)
		}
	}
}
