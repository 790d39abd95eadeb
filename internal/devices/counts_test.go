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
		{"none: the four platforms at zero", nil, Counts{ByPlatform: []PlatformCount{{"android", 0}, {"ios", 0}, {"web", 0}, {"huawei", 0}}}},
		{"both", []PlatformTokens{{"android", 3, 1, 1}, {"ios", 2, 0, 0}},
			Counts{Total: 7, ByPlatform: []PlatformCount{{"android", 5}, {"ios", 2}, {"web", 0}, {"huawei", 0}}, TokensValid: 5, TokensInvalid: 1, TokensMissing: 1}},
		{"web, huawei and ios, and others after, by name", []PlatformTokens{{"web", 1, 0, 0}, {"ios", 0, 0, 2}, {"zune", 0, 1, 0}, {"huawei", 2, 1, 0}, {"blackberry", 0, 0, 1}},
			Counts{Total: 8, ByPlatform: []PlatformCount{{"android", 0}, {"ios", 2}, {"web", 1}, {"huawei", 3}, {"blackberry", 1}, {"zune", 1}}, TokensValid: 3, TokensInvalid: 2, TokensMissing: 3}},
	}
	for _, c := range cases {
		if got := Summarize(c.rows); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
