package main

// The soak's judgement of a series sampled over time: a least-squares line
// through the samples after the warm-up, and a rule that calls its slope
// flat or not.

import "math"

// fit is the least-squares line y = intercept + slope·t through a series,
// with what the flatness rule needs.
type fit struct {
	N         int
	Mean      float64
	Slope     float64 // per second
	Intercept float64
	// Resid is the residuals' standard deviation around the line: the
	// series' own noise once its trend is taken out.
	Resid float64
	// Span is the time from the first sample to the last, seconds.
	Span float64
}

// Change is what the line rises (negative: falls) from the first sample's
// time to the last's.
func (f fit) Change() float64 { return f.Slope * f.Span }

// fitLine fits ts (seconds) and ys; fewer than 3 points or no spread in
// time gives a fit with N < 3 and zero slope.
func fitLine(ts, ys []float64) fit {
	n := min(len(ts), len(ys))
	f := fit{N: n}
	if n == 0 {
		return f
	}
	var st, sy float64
	for i := range n {
		st += ts[i]
		sy += ys[i]
	}
	mt, my := st/float64(n), sy/float64(n)
	f.Mean = my
	f.Span = ts[n-1] - ts[0]
	var stt, sty float64
	for i := range n {
		dt := ts[i] - mt
		stt += dt * dt
		sty += dt * (ys[i] - my)
	}
	if n < 3 || stt == 0 {
		f.Intercept = my
		return f
	}
	f.Slope = sty / stt
	f.Intercept = my - f.Slope*mt
	var ss float64
	for i := range n {
		r := ys[i] - (f.Intercept + f.Slope*ts[i])
		ss += r * r
	}
	f.Resid = math.Sqrt(ss / float64(n-2))
	return f
}

// flatRule says how far a series may rise over the run and still count as
// flat: the largest of Rel × |mean|, Abs (in the series' unit: a floor for
// small or near-zero series such as goroutines or job lag), and NoiseK ×
// the residuals' standard deviation (a change the series' own noise
// hides is not a trend one can claim).
type flatRule struct {
	Rel    float64
	Abs    float64
	NoiseK float64
}

// band is the rise the rule allows for f.
func (r flatRule) band(f fit) float64 {
	return max(r.Rel*math.Abs(f.Mean), r.Abs, r.NoiseK*f.Resid)
}

// flat judges f: a series passes when its line rises by no more than the
// band over the run. A falling line passes: what a soak looks for is
// growth (a leak, a backlog, a slowdown), and a series that settles after
// the warm-up falls. Fewer than minPoints samples cannot be judged and
// fail, so that a run too short to say anything does not pass.
func (r flatRule) flat(f fit) bool {
	if f.N < minPoints || math.IsNaN(f.Slope) {
		return false
	}
	return f.Change() <= r.band(f)
}

// minPoints is the fewest samples a slope is judged on.
const minPoints = 6
