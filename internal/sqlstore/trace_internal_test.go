package sqlstore

import "testing"

func TestOperation(t *testing.T) {
	for q, want := range map[string]string{
		"SELECT 1":                              "SELECT",
		"  insert into t values (?)":            "INSERT",
		"-- why\n-- more\nUPDATE t SET a = 1":   "UPDATE",
		"WITH x AS (SELECT 1)\nSELECT * FROM x": "WITH",
		"DELETE\nFROM t":                        "DELETE",
		"":                                      "",
	} {
		if got := operation(q); got != want {
			t.Errorf("operation(%q) = %q, want %q", q, got, want)
		}
	}
}
