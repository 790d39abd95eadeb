package api

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/text/language"
)

func TestAcceptedLanguages(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   []string
	}{
		{"", nil},
		{"de", []string{"de"}},
		{"de-AT,de;q=0.9,en;q=0.8", []string{"de-AT", "de", "en"}},
		{"en;q=0.5, fr, de;q=0.7", []string{"fr", "de", "en"}},
		{"fr-CH, fr;q=0.9, en;q=0.8, de;q=0.7, *;q=0.5", []string{"fr-CH", "fr", "en", "de"}},
		{"DE-at", []string{"de-AT"}},
		{"en;q=0, de", []string{"de"}},
		{"*", nil},
		{"en;q=1.5, de;q=abc, fr;q=0.123, it;q=0.1234", []string{"fr"}},
		{"en;q=1.000,de;q=0.", []string{"en"}},
		{"en ; q=0.2 , de ; Q=0.3", []string{"de", "en"}},
		{"de, de, DE", []string{"de"}},
		{"en_US, 123, -, x-, a-b-c-d-e-f-g-h-i-j-k-l-m-n-o-p-q-r-s, ü, de", []string{"de"}},
		{";;;,,,;q=1", nil},
		{"de;level=1;q=0.4, en", []string{"en", "de"}},
		{"a,b,c,d,e,f,g,h,i,j", nil},                                                                // one letter is no language
		{"ar,bg,cs,da,de,el,en,es,et,fi", []string{"ar", "bg", "cs", "da", "de", "el", "en", "es"}}, // at most 8
	} {
		if got := AcceptedLanguages(tc.header); !slices.Equal(got, tc.want) {
			t.Errorf("AcceptedLanguages(%q) = %q, want %q", tc.header, got, tc.want)
		}
	}
}

// A huge header is read only in part, and an entry cut by the bound is
// dropped rather than misread.
func TestAcceptedLanguagesBounded(t *testing.T) {
	h := "de;q=0.9," + strings.Repeat(" ", maxAcceptLanguageLen-len("de;q=0.9,")-3) + ",en-GB"
	if got := AcceptedLanguages(h); !slices.Equal(got, []string{"de"}) {
		t.Errorf("got %q, want [de] (en-GB is cut by the bound)", got)
	}
	many := strings.Repeat("zz;q=0.1,", maxLanguageRanges) + "de"
	if got := AcceptedLanguages(many); slices.Contains(got, "de") {
		t.Errorf("got %q: entries past %d must not be read", got, maxLanguageRanges)
	}
}

func FuzzAcceptedLanguages(f *testing.F) {
	for _, s := range []string{"", "de-AT,de;q=0.9,en;q=0.8", "*;q=0.5", "en;q=1.5", "zh-Hant-TW, x-klingon", "i-klingon", "en-u-co-phonebk;q=0.3", "sr-Latn-RS,und"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got := AcceptedLanguages(header)
		if len(got) > maxAcceptedLanguages {
			t.Fatalf("%d languages, want at most %d", len(got), maxAcceptedLanguages)
		}
		seen := map[string]bool{}
		for _, tag := range got {
			if seen[tag] {
				t.Fatalf("%q twice in %q", tag, got)
			}
			seen[tag] = true
			parsed, err := language.Parse(tag)
			if err != nil || parsed.String() != tag || parsed == language.Und {
				t.Fatalf("%q is not a canonical tag (%v)", tag, err)
			}
			if len(tag) > maxLanguageTagLen+8 {
				t.Fatalf("%q is too long", tag)
			}
		}
		if again := AcceptedLanguages(header); !slices.Equal(got, again) {
			t.Fatalf("not deterministic: %q then %q", got, again)
		}
	})
}
