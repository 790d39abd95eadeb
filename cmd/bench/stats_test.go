package main

import (
	"bufio"
	"math"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{50, 50 * time.Millisecond}, {99, 99 * time.Millisecond}, {100, 100 * time.Millisecond}, {0.1, time.Millisecond}} {
		if got := percentile(d, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if got := percentile(d[:1], 99); got != time.Millisecond {
		t.Errorf("p99 of one value = %v", got)
	}
	if got := percentile(nil, 99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
	// 1,000 values: p99 is the 990th.
	var k []time.Duration
	for i := 1; i <= 1000; i++ {
		k = append(k, time.Duration(i))
	}
	if got := percentile(k, 99); got != 990 {
		t.Errorf("p99 of 1..1000 = %v, want 990", got)
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median odd = %v", got)
	}
	xs := []float64{4, 1, 3, 2}
	if got := median(xs); got != 2.5 {
		t.Errorf("median even = %v", got)
	}
	if xs[0] != 4 {
		t.Error("median sorted its argument")
	}
	if !math.IsNaN(median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
	if got := rate(13.44); got != "13.4" {
		t.Errorf("rate(13.44) = %q", got)
	}
	if got := rate(4363.6); got != "4,364" {
		t.Errorf("rate(4363.6) = %q", got)
	}
	if _, s := ratio(1, 0); s != "–" {
		t.Errorf("ratio by zero = %q", s)
	}
}

func TestReadResponse(t *testing.T) {
	raw := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\ncontent-length: 5\r\n\r\nhello" +
		"HTTP/1.1 429 Too Many Requests\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nTrailer: 1\r\n\r\n" +
		"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
	br := bufio.NewReader(strings.NewReader(raw))
	for i, want := range []struct {
		status int
		close  bool
	}{{200, false}, {429, false}, {500, true}} {
		status, closeConn, err := readResponse(br)
		if err != nil || status != want.status || closeConn != want.close {
			t.Fatalf("response %d: status %d close %v err %v; want %d %v", i, status, closeConn, err, want.status, want.close)
		}
	}
	if _, _, err := readResponse(br); err == nil {
		t.Fatal("reading past the end did not fail")
	}
}

func TestPairedRatio(t *testing.T) {
	h := map[int]float64{1: 50, 2: 90, 3: 30}
	c := map[int]float64{1: 100, 2: 100, 3: 50, 4: 1}
	// Rounds 1-3 pair up: 0.5, 0.9, 0.6; round 4 has no Herald run.
	if x, s := pairedRatio(h, c); x != 0.6 || s != "0.60" {
		t.Errorf("pairedRatio = %v %q, want 0.6", x, s)
	}
	if _, s := pairedRatio(h, map[int]float64{}); s != "–" {
		t.Errorf("pairedRatio without pairs = %q", s)
	}
}
