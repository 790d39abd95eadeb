package main

import (
	"math"
	"strconv"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestFitLine(t *testing.T) {
	for _, c := range []struct {
		name                 string
		ts, ys               []float64
		slope, mean, resid   float64
		span, change, interc float64
	}{
		{name: "flat", ts: []float64{0, 10, 20, 30}, ys: []float64{5, 5, 5, 5}, slope: 0, mean: 5, resid: 0, span: 30, change: 0, interc: 5},
		{name: "exact rise", ts: []float64{0, 10, 20, 30}, ys: []float64{100, 101, 102, 103}, slope: 0.1, mean: 101.5, resid: 0, span: 30, change: 3, interc: 100},
		{name: "exact fall", ts: []float64{10, 20, 30}, ys: []float64{9, 7, 5}, slope: -0.2, mean: 7, resid: 0, span: 20, change: -4, interc: 11},
		// Alternating ±1 around a flat line at an even count: the fit
		// sees a small slope (the last point is high), and residuals of
		// about 1.
		{name: "noise", ts: []float64{0, 1, 2, 3}, ys: []float64{-1, 1, -1, 1}, slope: 0.4, mean: 0, resid: math.Sqrt(1.6), span: 3, change: 1.2, interc: -0.6},
		{name: "two points are not a slope", ts: []float64{0, 1}, ys: []float64{0, 10}, slope: 0, mean: 5, span: 1, interc: 5},
		{name: "no spread in time", ts: []float64{4, 4, 4}, ys: []float64{1, 2, 3}, slope: 0, mean: 2, span: 0, interc: 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fitLine(c.ts, c.ys)
			if !near(f.Slope, c.slope) || !near(f.Mean, c.mean) || !near(f.Resid, c.resid) || !near(f.Span, c.span) || !near(f.Change(), c.change) || !near(f.Intercept, c.interc) {
				t.Errorf("fitLine = slope %v mean %v resid %v span %v change %v intercept %v; want %v %v %v %v %v %v",
					f.Slope, f.Mean, f.Resid, f.Span, f.Change(), f.Intercept, c.slope, c.mean, c.resid, c.span, c.change, c.interc)
			}
		})
	}
	if f := fitLine(nil, nil); f.N != 0 || f.Slope != 0 {
		t.Errorf("fitLine of nothing = %+v", f)
	}
}

func TestFlatRule(t *testing.T) {
	// Noise that sums to zero over each cycle of 4 and has no trend of
	// its own.
	jitter := []float64{3, -3, -3, 3}
	for _, c := range []struct {
		name string
		rule flatRule
		s    sampled
		flat bool
	}{
		{name: "level memory", rule: ruleMemory, flat: true, s: ln(24, 5, 200, 0)},
		// 200 MiB rising 1 MiB a minute for 2 minutes: 2 MiB, within 10 %
		// of the mean and the 8 MiB floor.
		{name: "slow rise within the share", rule: ruleMemory, flat: true, s: ln(25, 5, 200, 1.0/60)},
		// 200 MiB rising 30 MiB over 2 minutes: a leak (the band is 10 %
		// of the mean, 215 MiB).
		{name: "leak", rule: ruleMemory, flat: false, s: ln(25, 5, 200, 30.0/120)},
		// Goroutines: 40 rising to 55 is under the floor of 20.
		{name: "small series under its floor", rule: ruleCount, flat: true, s: ln(25, 5, 40, 15.0/120)},
		{name: "goroutine leak past the floor", rule: ruleCount, flat: false, s: ln(25, 5, 40, 60.0/120)},
		// A falling series passes, however steep.
		{name: "falling", rule: ruleCount, flat: true, s: ln(25, 5, 1000, -5)},
		// Latency from 10 ms with ±3 ms of noise and a rise of 8.5 ms:
		// more than half the mean (7.1 ms) and the floor (5 ms), but
		// within three times the noise (σ 3.1 ms).
		{name: "rise hidden by noise", rule: ruleLatencyP50, flat: true, s: ln(24, 5, 10, 8.5/115, jitter...)},
		// The same rise without the noise is a trend.
		{name: "rise without noise", rule: ruleLatencyP50, flat: false, s: ln(24, 5, 10, 8.5/115)},
		// Job lag near zero: the floor of 2 s decides.
		{name: "lag within the floor", rule: ruleLag, flat: true, s: ln(24, 5, 0, 1.5/115)},
		{name: "growing lag", rule: ruleLag, flat: false, s: ln(24, 5, 0, 30.0/115)},
		// Too few samples cannot be judged, and fail.
		{name: "too few samples", rule: ruleMemory, flat: false, s: ln(minPoints-1, 5, 200, 0)},
		{name: "just enough samples", rule: ruleMemory, flat: true, s: ln(minPoints, 5, 200, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := fitLine(c.s.ts, c.s.ys)
			if got := c.rule.flat(f); got != c.flat {
				t.Errorf("flat = %v, want %v (change %.3g, band %.3g, mean %.3g, noise %.3g, n %d)", got, c.flat, f.Change(), c.rule.band(f), f.Mean, f.Resid, f.N)
			}
		})
	}
}

type sampled struct{ ts, ys []float64 }

// ln samples y = a + b·t at t = 0, step, 2·step, … (n points), plus
// noise[i % len(noise)] when noise is given.
func ln(n int, step, a, b float64, noise ...float64) sampled {
	var s sampled
	for i := range n {
		t := float64(i) * step
		y := a + b*t
		if len(noise) > 0 {
			y += noise[i%len(noise)]
		}
		s.ts, s.ys = append(s.ts, t), append(s.ys, y)
	}
	return s
}

func TestFlatRuleBand(t *testing.T) {
	f := fit{N: 10, Mean: -200, Resid: 4}
	for _, c := range []struct {
		rule flatRule
		want float64
	}{
		{flatRule{Rel: 0.1, Abs: 5, NoiseK: 3}, 20},   // the share of |mean|
		{flatRule{Rel: 0.01, Abs: 5, NoiseK: 3}, 12},  // the noise
		{flatRule{Rel: 0.01, Abs: 50, NoiseK: 3}, 50}, // the floor
	} {
		if got := c.rule.band(f); got != c.want {
			t.Errorf("%+v.band = %v, want %v", c.rule, got, c.want)
		}
	}
}

func TestInjectFailure(t *testing.T) {
	// Attempts of the same event fail independently: about a tenth of
	// 20,000 attempts, and about a hundredth of events fail twice in a
	// row.
	failed, twice := 0, 0
	for i := range 10_000 {
		id := "msg_" + strconv.Itoa(i)
		a, b := injectFailure(id, 1, 0.1), injectFailure(id, 2, 0.1)
		if a {
			failed++
		}
		if b {
			failed++
		}
		if a && b {
			twice++
		}
	}
	if failed < 1700 || failed > 2300 {
		t.Errorf("%d of 20,000 attempts failed, want about 2,000", failed)
	}
	if twice > 250 {
		t.Errorf("%d of 10,000 events failed twice in a row, want about 100", twice)
	}
	if injectFailure("msg_x", 1, 0) {
		t.Error("a share of 0 failed an attempt")
	}
}
