package logbuffer

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/testsupport"
)

func TestLinesWaitForTheirFlush(t *testing.T) {
	out := &testsupport.Buffer{}
	w := NewWriter(out, time.Hour)
	log := slog.New(NewHandler(slog.NewJSONHandler(w, nil), w))
	log.Info("first")
	log.Debug("not enabled")
	log.With("k", "v").Info("second")
	if got := out.String(); got != "" {
		t.Fatalf("INFO lines were written before their flush: %q", got)
	}
	log.Warn("third")
	got := out.String()
	if n := strings.Count(got, "\n"); n != 3 {
		t.Fatalf("a WARN line wrote %d lines, want the 3 logged so far:\n%s", n, got)
	}
	for i, msg := range []string{`"msg":"first"`, `"msg":"second","k":"v"`, `"msg":"third"`} {
		if !strings.Contains(strings.Split(got, "\n")[i], msg) {
			t.Errorf("line %d is not %s:\n%s", i+1, msg, got)
		}
	}
	log.Info("fourth")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"msg":"fourth"`) {
		t.Errorf("Flush did not write the held line:\n%s", out.String())
	}
	log.Info("fifth")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	log.Info("after close")
	if got := out.String(); !strings.Contains(got, `"msg":"fifth"`) || !strings.Contains(got, `"msg":"after close"`) {
		t.Errorf("Close did not write the held line, or a line after it was held:\n%s", got)
	}
}

func TestIntervalBoundsTheWait(t *testing.T) {
	out := &testsupport.Buffer{}
	w := NewWriter(out, 20*time.Millisecond)
	for round := range 2 { // the second round: the timer is re-armed after it fired
		_, _ = w.Write([]byte("line\n"))
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(out.String(), "line\n") != round+1 {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the line was not written within 10 s of a 20 ms interval: %q", round+1, out.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func TestSizeBoundsTheBuffer(t *testing.T) {
	out := &testsupport.Buffer{}
	w := NewWriter(out, time.Hour)
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range Size / len(line) {
		_, _ = w.Write(line)
	}
	if got := len(out.String()); got != Size {
		t.Fatalf("after %d bytes the destination holds %d, want all of them written", Size, got)
	}
}

func TestZeroIntervalWritesAtOnce(t *testing.T) {
	out := &testsupport.Buffer{}
	w := NewWriter(out, 0)
	slog.New(NewHandler(slog.NewTextHandler(w, nil), w)).Info("now")
	if !strings.Contains(out.String(), "msg=now") {
		t.Fatalf("with no interval the line was held: %q", out.String())
	}
}
