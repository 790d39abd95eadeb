package devices

import (
	"reflect"
	"testing"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		name string
		rows []PlatformTokens
		want Counts
	}{
		{"none: both platforms at zero", nil, Counts{ByPlatform: []PlatformCount{{"android", 0}, {"ios", 0}}}},
		{"both", []PlatformTokens{{"android", 3, 1, 1}, {"ios", 2, 0, 0}},
			Counts{Total: 7, ByPlatform: []PlatformCount{{"android", 5}, {"ios", 2}}, TokensValid: 5, TokensInvalid: 1, TokensMissing: 1}},
		{"ios only, and others after, by name", []PlatformTokens{{"web", 1, 0, 0}, {"ios", 0, 0, 2}, {"huawei", 0, 1, 0}},
			Counts{Total: 4, ByPlatform: []PlatformCount{{"android", 0}, {"ios", 2}, {"huawei", 1}, {"web", 1}}, TokensValid: 1, TokensInvalid: 1, TokensMissing: 2}},
	}
	for _, c := range cases {
		if got := Summarize(c.rows); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
