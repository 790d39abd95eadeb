package sqlstore

import (
	"database/sql"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzLikePrefix: the admin search's pattern matches exactly the strings
// that begin with the prefix, whatever LIKE's special characters the
// prefix holds (checked on SQLite; PostgreSQL's LIKE ... ESCAPE is the
// same standard syntax). Both sides are lower case, as emails are stored.
func FuzzLikePrefix(f *testing.F) {
	for _, seed := range [][2]string{
		{"a_b@example.com", "a_"}, {"axb@example.com", "a_"}, {"50%@x.io", "50%"}, {"500@x.io", "50%"},
		{`back\slash@x.io`, `back\`}, {"ann@example.com", ""}, {"ann@example.com", "ann@example.com"},
	} {
		f.Add(seed[0], seed[1])
	}
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	f.Fuzz(func(t *testing.T, s, prefix string) {
		if !utf8.ValidString(s) || !utf8.ValidString(prefix) || strings.ContainsRune(s+prefix, 0) {
			return
		}
		s, prefix = strings.ToLower(s), strings.ToLower(prefix)
		var match bool
		if err := db.QueryRow(`SELECT ? LIKE ? ESCAPE '\'`, s, likePrefix(prefix)).Scan(&match); err != nil {
			t.Fatal(err)
		}
		if want := strings.HasPrefix(s, prefix); match != want {
			t.Fatalf("%q LIKE pattern of %q = %v, want %v", s, prefix, match, want)
		}
	})
}
