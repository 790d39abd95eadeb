package main

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p % of the
// values are less than or equal to it. sorted must be in ascending order;
// an empty slice gives 0.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// median returns the median of xs (the mean of the two middle values for an
// even count); NaN for none. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// thousands formats n with comma separators: 1234567 → "1,234,567".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rate formats a per-second figure: thousands separators from 100 up, one
// decimal below.
func rate(x float64) string {
	switch {
	case math.IsNaN(x):
		return "–"
	case x >= 100:
		return thousands(int64(math.Round(x)))
	default:
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
}

// ms formats a duration in milliseconds with one decimal.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}

// mib formats kibibytes as mebibytes.
func mib(kib int64) string {
	return fmt.Sprintf("%d MiB", (kib+512)/1024)
}

// ratio is h/c with two decimals, or "–" when either is missing.
func ratio(h, c float64) (float64, string) {
	if math.IsNaN(h) || math.IsNaN(c) || c == 0 {
		return math.NaN(), "–"
	}
	r := h / c
	return r, strconv.FormatFloat(r, 'f', 2, 64)
}

// cpuPerOp formats a CPU time per operation given in microseconds.
func cpuPerOp(us float64) string {
	if us >= 10000 {
		return fmt.Sprintf("%.0f ms", us/1000)
	}
	return fmt.Sprintf("%.0f µs", us)
}
