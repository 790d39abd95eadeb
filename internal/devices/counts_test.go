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
		{"none: the three platforms at zero", nil, Counts{ByPlatform: []PlatformCount{{"android", 0}, {"ios", 0}, {"web", 0}}}},
		{"both", []PlatformTokens{{"android", 3, 1, 1}, {"ios", 2, 0, 0}},
			Counts{Total: 7, ByPlatform: []PlatformCount{{"android", 5}, {"ios", 2}, {"web", 0}}, TokensValid: 5, TokensInvalid: 1, TokensMissing: 1}},
		{"web and ios, and others after, by name", []PlatformTokens{{"web", 1, 0, 0}, {"ios", 0, 0, 2}, {"zune", 0, 1, 0}, {"huawei", 0, 1, 0}},
			Counts{Total: 5, ByPlatform: []PlatformCount{{"android", 0}, {"ios", 2}, {"web", 1}, {"huawei", 1}, {"zune", 1}}, TokensValid: 1, TokensInvalid: 2, TokensMissing: 2}},
	}
	for _, c := range cases {
		if got := Summarize(c.rows); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
