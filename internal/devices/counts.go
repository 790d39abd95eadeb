package devices

import (
	"cmp"
	"slices"
)

// Counts are the active devices at a glance, for the operator console.
// Every active device is in exactly one of TokensValid, TokensInvalid and
// TokensMissing.
type Counts struct {
	Total int
	// ByPlatform lists android, ios, web and huawei (zero included), then any other
	// platform found, by name.
	ByPlatform    []PlatformCount
	TokensValid   int // PushTokenStatus TokenValid
	TokensInvalid int // a token a provider called dead
	// TokensMissing are the devices whose token moved to another device
	// (their PushTokenStatus is TokenInvalid, their PushToken empty).
	TokensMissing int
}

// PlatformCount is the active devices of one platform.
type PlatformCount struct {
	Platform string
	Count    int
}

// PlatformTokens is what the store counts of one platform's active
// devices: each token state.
type PlatformTokens struct {
	Platform                string
	Valid, Invalid, Missing int
}

// Summarize adds up the store's per-platform counts.
func Summarize(rows []PlatformTokens) Counts {
	c := Counts{ByPlatform: []PlatformCount{{Platform: PlatformAndroid}, {Platform: PlatformIOS}, {Platform: PlatformWeb}, {Platform: PlatformHuawei}}}
	var others []PlatformCount
	for _, r := range rows {
		n := r.Valid + r.Invalid + r.Missing
		c.Total += n
		c.TokensValid += r.Valid
		c.TokensInvalid += r.Invalid
		c.TokensMissing += r.Missing
		switch r.Platform {
		case PlatformAndroid:
			c.ByPlatform[0].Count += n
		case PlatformIOS:
			c.ByPlatform[1].Count += n
		case PlatformWeb:
			c.ByPlatform[2].Count += n
		case PlatformHuawei:
			c.ByPlatform[3].Count += n
		default:
			others = append(others, PlatformCount{Platform: r.Platform, Count: n})
		}
	}
	slices.SortFunc(others, func(a, b PlatformCount) int { return cmp.Compare(a.Platform, b.Platform) })
	c.ByPlatform = append(c.ByPlatform, others...)
	return c
}
