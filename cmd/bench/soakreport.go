package main

// The soak's report: each series' slope and verdict, each operation's
// counts, the broadcasts and webhooks, and every failed check; printed as
// Markdown and written as JSON.

import (
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"
)

type soakReport struct {
	Commit           string
	Database         string
	CPUs             int
	Go               string
	Started, End     time.Time
	Duration         string
	Warmup           string
	Interval         string
	BroadcastEvery   string
	HeraldPID        int
	Capacity         float64        `json:",omitempty"` // ops/s of the mix answered and finished (CapacityAnswered over the load and its drain)
	CapacityAnswered float64        `json:",omitempty"` // ops/s the closed loop of the mix was answered
	CapacityDrain    string         `json:",omitempty"` // how long the jobs the closed loop left took to finish
	CapacityStatuses map[string]int `json:",omitempty"`
	Rate             float64        // ops/s of the soak
	Audience         int            // imported devices every broadcast reaches
	Ops              map[string]*opReport
	Series           []seriesReport
	Broadcasts       []*broadcastRun
	Webhooks         webhookReport
	WebhookFailShare float64
	LoggedErrors     int
	FirstLoggedError string `json:",omitempty"`
	FinalRSSKiB      int64
	HWMKiB           int64
	FinalFDs         int
	SampleError      string `json:",omitempty"`
	Failures         []string
}

type opReport struct {
	Done, OK, Unavailable, Errors, Late int64
	Statuses                            map[string]int64
	FirstError                          string `json:",omitempty"`
}

type webhookReport struct {
	Expected, Attempts, Delivered, Injected, BadSignatures, Duplicates int
	Missing                                                            []string `json:",omitempty"`
	FirstBadSignature                                                  string   `json:",omitempty"`
}

type seriesReport struct {
	Name    string
	Unit    string
	Samples int // after the warm-up
	Mean    float64
	First   float64 // the line at the first judged sample
	Last    float64 // the line at the last
	Slope   float64 // per hour
	Change  float64 // over the judged part of the run
	Noise   float64 // residuals' standard deviation
	Allowed float64 // the largest rise the rule allows
	Judged  bool
	Flat    bool
	Values  [][2]float64 // every sample, warm-up included: [seconds, value]
}

// judge fits every series after the warm-up, and lists each failed check.
func (r *soakReport) judge(o *soakOptions, l *soakLoad, recv *webhookReceiver, sm *soakSampler, missing []string) {
	fail := func(format string, args ...any) { r.Failures = append(r.Failures, fmt.Sprintf(format, args...)) }
	warm := o.warmup.Seconds()
	for _, s := range sm.all() {
		var ts, vs []float64
		sr := seriesReport{Name: s.Name, Unit: s.Unit}
		for i := range s.T {
			sr.Values = append(sr.Values, [2]float64{math.Round(s.T[i]*10) / 10, s.V[i]})
			if s.T[i] >= warm {
				ts, vs = append(ts, s.T[i]), append(vs, s.V[i])
			}
		}
		f := fitLine(ts, vs)
		sr.Samples, sr.Mean, sr.Noise, sr.Change = f.N, f.Mean, f.Resid, f.Change()
		sr.Slope = f.Slope * 3600
		if f.N > 0 {
			sr.First, sr.Last = f.Intercept+f.Slope*ts[0], f.Intercept+f.Slope*ts[f.N-1]
		}
		sr.Judged = s.Rule != (flatRule{})
		if sr.Judged {
			sr.Allowed = s.Rule.band(f)
			sr.Flat = s.Rule.flat(f)
			if !sr.Flat {
				if f.N < minPoints {
					fail("%s: %d samples after the warm-up, fewer than the %d a slope is judged on", s.Name, f.N, minPoints)
				} else {
					fail("%s rose by %s over the run (%s → %s), more than the %s allowed", s.Name, num(f.Change(), s.Unit), num(sr.First, s.Unit), num(sr.Last, s.Unit), num(sr.Allowed, s.Unit))
				}
			}
		}
		r.Series = append(r.Series, sr)
	}
	for _, must := range []string{"rss", "open files", "goroutines", "database connections", "job lag", "p99 read"} {
		if !slices.ContainsFunc(r.Series, func(s seriesReport) bool { return s.Name == must }) {
			fail("no samples of %s (%s)", must, sm.sampleError)
		}
	}
	r.SampleError = sm.sampleError

	l.mu.Lock()
	for name, st := range l.stats {
		op := &opReport{Done: st.Done, OK: st.OK, Unavailable: st.Unavailable, Errors: st.Errors, Late: st.Behind, FirstError: st.FirstError, Statuses: statusNames(st.Statuses)}
		r.Ops[name] = op
		if st.Errors > 0 {
			fail("%s: %d errors (%v), the first: %s", name, st.Errors, op.Statuses, firstLine(st.FirstError))
		}
		if st.Unavailable > 0 {
			fail("%s: %d answers 503 SERVICE_UNAVAILABLE at %.0f %% of capacity", name, st.Unavailable, 100*o.share)
		}
		if st.Behind > 0 {
			fail("%s: %d operations could not start on time (the kit's workers were all busy: the server fell behind)", name, st.Behind)
		}
		if name != "broadcast" && name != "remove" && st.OK == 0 {
			fail("%s: no operation succeeded", name)
		}
	}
	r.Broadcasts = l.casts
	l.mu.Unlock()
	if len(r.Broadcasts) == 0 {
		fail("no broadcast ran (-broadcast-every %s)", o.broadcastEvery)
	}
	for _, b := range r.Broadcasts {
		if b.Err != "" {
			fail("broadcast: %s", b.Err)
			continue
		}
		for kind, s := range map[string]subscriberResult{"graphql-ws": b.WS, "SSE": b.SSE} {
			switch {
			case s.Err != "":
				fail("broadcast %s, %s subscriber: %s", b.JobID, kind, s.Err)
			case !s.Completed || s.Events == 0:
				fail("broadcast %s, %s subscriber: the stream ended after %d events without the final state", b.JobID, kind, s.Events)
			// Devices the load registered and removed while the job ran
			// may or may not be reached; the imported ones must be.
			case s.Final.Status != "completed" || s.Final.Sent < int64(r.Audience) || s.Final.Sent > b.TotalRecipients:
				fail("broadcast %s, %s subscriber: final state %s with %d sent, want at least the %d imported devices and at most the %d recipients", b.JobID, kind, s.Final.Status, s.Final.Sent, r.Audience, b.TotalRecipients)
			}
		}
	}
	total, ok, injected, bad := recv.counts()
	r.Webhooks = webhookReport{Expected: len(l.expectedEvents()), Attempts: int(total), Delivered: int(ok), Injected: int(injected),
		BadSignatures: int(bad), Duplicates: recv.duplicates(), FirstBadSignature: recv.firstBad}
	slices.Sort(missing)
	if len(missing) > 0 {
		r.Webhooks.Missing = missing[:min(len(missing), 20)]
		fail("webhooks: %d of %d events never delivered within the drain (%s), e.g. %s", len(missing), r.Webhooks.Expected, o.drain, strings.Join(r.Webhooks.Missing[:min(3, len(missing))], "; "))
	}
	if bad > 0 {
		fail("webhooks: %d deliveries with a bad signature or body, the first: %s", bad, recv.firstBad)
	}
	if r.Webhooks.Expected == 0 {
		fail("webhooks: no event was expected (no device registered, no broadcast)")
	}
	if r.LoggedErrors > 0 {
		fail("Herald logged %d ERROR lines, the first: %s", r.LoggedErrors, r.FirstLoggedError)
	}
}

// num formats a value of a series with its unit.
func num(v float64, unit string) string {
	s := ""
	switch a := math.Abs(v); {
	case a >= 100:
		s = fmt.Sprintf("%.0f", v)
	case a >= 10:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.2f", v)
	}
	if unit != "" {
		if unit == "/s" {
			return s + unit
		}
		return s + " " + unit
	}
	return s
}

func (r *soakReport) print(w *os.File) {
	fmt.Fprintf(w, "\nHerald %s soak on %s, %d CPUs, %s: %s at %s ops/s", r.Commit, r.Database, r.CPUs, r.Go, r.Duration, rate(r.Rate))
	if r.Capacity > 0 {
		fmt.Fprintf(w, " (%.0f %% of the %s ops/s measured: %s answered, their jobs finished %s later)", 100*r.Rate/r.Capacity, rate(r.Capacity), rate(r.CapacityAnswered), r.CapacityDrain)
	}
	fmt.Fprintf(w, "; samples every %s, slopes over the samples after %s of warm-up; a broadcast every %s.\n\n", r.Interval, r.Warmup, r.BroadcastEvery)
	fmt.Fprintln(w, "| Series | Mean | Line: first → last | Slope per hour | Change over the run | Noise (σ) | Allowed rise | Verdict |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for _, s := range r.Series {
		if !s.Judged {
			continue
		}
		v := "flat"
		switch {
		case !s.Flat:
			v = "RISING"
		case s.Change < -s.Allowed:
			v = "flat (falling)"
		}
		fmt.Fprintf(w, "| %s | %s | %s → %s | %+.3g | %+.3g | %s | %s | %s |\n", s.Name, num(s.Mean, s.Unit), num(s.First, s.Unit), num(s.Last, s.Unit), s.Slope, s.Change, num(s.Noise, s.Unit), num(s.Allowed, s.Unit), v)
	}
	fmt.Fprintln(w, "\n| Operation | OK | Mean rate | 503 | Other errors | Late |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|")
	for _, name := range slices.Sorted(maps.Keys(r.Ops)) {
		op := r.Ops[name]
		mean := "–"
		for _, s := range r.Series {
			if s.Name == "rate "+name && s.Samples > 0 {
				mean = num(s.Mean, "/s")
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d |\n", name, thousands(op.OK), mean, op.Unavailable, op.Errors, op.Late)
	}
	wh := r.Webhooks
	fmt.Fprintf(w, "\nWebhooks: %d events expected, %d attempts, %d delivered, %d injected 500s (%.1f %% of attempts), %d duplicates, %d bad signatures, %d missing.\n",
		wh.Expected, wh.Attempts, wh.Delivered, wh.Injected, 100*float64(wh.Injected)/math.Max(1, float64(wh.Attempts)), wh.Duplicates, wh.BadSignatures, len(wh.Missing))
	fmt.Fprintf(w, "Broadcasts: %d", len(r.Broadcasts))
	for _, b := range r.Broadcasts {
		fmt.Fprintf(w, "; %d recipients, graphql-ws %d events (%s), SSE %d events (%s)", b.TotalRecipients, b.WS.Events, b.WS.Final.Status, b.SSE.Events, b.SSE.Final.Status)
	}
	fmt.Fprintf(w, ".\nHerald at the end: RSS %s (VmHWM %s), %d open files; %d ERROR log lines.\n", mib(r.FinalRSSKiB), mib(r.HWMKiB), r.FinalFDs, r.LoggedErrors)
	if len(r.Failures) == 0 {
		fmt.Fprintln(w, "\nPASS: every slope flat, no error but the injected ones, every event delivered.")
		return
	}
	fmt.Fprintln(w, "\nFAIL:")
	for _, f := range r.Failures {
		fmt.Fprintln(w, "- "+f)
	}
}
