package main

// The load generator: a closed loop of N workers, each on its own
// kept-alive HTTP/1.1 connection, writing a prebuilt request and reading
// the answer with a minimal parser (status line, Content-Length or chunked
// body, Connection: close). It costs far less CPU than net/http's client,
// which matters when the generator shares two cores with the server.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// loadResult is what a closed loop measured in its window.
type loadResult struct {
	Window    time.Duration
	Completed int             // operations that ended inside the window
	OK        int             // of which succeeded (HTTP 2xx)
	Statuses  map[int]int     // HTTP status (0: transport error) → count, for the window
	Latencies []time.Duration // of the operations counted, sorted
	FirstErr  string
	// ServerCPU is the user + system CPU time the server process used in
	// the window (0 when not measured); Steal the machine's share of CPU
	// time stolen by the hypervisor in the window (-1 when unknown).
	ServerCPU time.Duration
	// MachineCPU is the CPU time every program on the machine used in the
	// window: the server, the database and the load generator.
	MachineCPU time.Duration
	Steal      float64
	// LoggedErrors counts the ERROR lines of the server's log (Herald only).
	LoggedErrors     int
	FirstLoggedError string
}

func (r loadResult) PerSec() float64 {
	if r.Window <= 0 {
		return 0
	}
	return float64(r.OK) / r.Window.Seconds()
}

func (r loadResult) P99() time.Duration { return percentile(r.Latencies, 99) }

// CPUPerOp is the server's and the whole machine's CPU time per
// successful operation, 0 when not measured.
func (r loadResult) CPUPerOp() (server, machine time.Duration) {
	if r.OK == 0 {
		return 0, 0
	}
	return r.ServerCPU / time.Duration(r.OK), r.MachineCPU / time.Duration(r.OK)
}

// Failures is a short description of every non-2xx outcome, "" for none.
func (r loadResult) Failures() string {
	if r.Completed == r.OK {
		return ""
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(r.Statuses)) {
		if s >= 200 && s < 300 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d × %s", r.Statuses[s], statusName(s)))
	}
	msg := fmt.Sprint(parts)
	if r.FirstErr != "" {
		msg += " (first: " + r.FirstErr + ")"
	}
	return msg
}

// statusName names an HTTP status as the kit counts it: 0 is an
// operation that got no answer.
func statusName(s int) string {
	if s == 0 {
		return "transport error"
	}
	return strconv.Itoa(s)
}

// statusNames is a count by status with the statuses named.
func statusNames[N int | int64](m map[int]N) map[string]N {
	out := make(map[string]N, len(m))
	for s, n := range m {
		out[statusName(s)] = n
	}
	return out
}

// op is one operation of a worker: it returns an HTTP-like status (200 for
// success of a non-HTTP operation) or an error.
type op func() (int, error)

// closedLoop runs workers operations back to back for warmup + window and
// counts the operations that end inside the window (after the warm-up);
// the rate is those successes divided by the window, which is unbiased in
// a steady state. Operations in flight at the end are waited for, not
// counted. newOp is called once per worker; its cleanup runs at the end.
// When serverPID is not 0, the CPU time that process used in the window is
// measured too.
func closedLoop(ctx context.Context, workers int, warmup, window time.Duration, serverPID int, newOp func(i int) (op, func(), error)) (loadResult, error) {
	ops := make([]op, workers)
	var cleanups []func()
	defer func() {
		for _, c := range cleanups {
			c()
		}
	}()
	for i := range workers {
		o, c, err := newOp(i)
		if err != nil {
			return loadResult{}, err
		}
		ops[i] = o
		if c != nil {
			cleanups = append(cleanups, c)
		}
	}
	type workerOut struct {
		lat      []time.Duration
		statuses map[int]int
		firstErr string
	}
	outs := make([]workerOut, workers)
	start := time.Now()
	from, until := start.Add(warmup), start.Add(warmup+window)
	var wg sync.WaitGroup
	res := loadResult{Window: window, Statuses: map[int]int{}, Steal: -1}
	wg.Add(1)
	go func() {
		defer wg.Done()
		res.ServerCPU, res.MachineCPU, res.Steal = cpuInWindow(ctx, serverPID, from, until)
	}()
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &outs[i]
			w.statuses = map[int]int{}
			for ctx.Err() == nil {
				t0 := time.Now()
				if !t0.Before(until) {
					return
				}
				status, err := ops[i]()
				t1 := time.Now()
				if err != nil {
					status = 0
					if w.firstErr == "" {
						w.firstErr = err.Error()
					}
				}
				if t1.Before(from) || t1.After(until) {
					continue
				}
				w.statuses[status]++
				w.lat = append(w.lat, t1.Sub(t0))
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return loadResult{}, err
	}
	for _, w := range outs {
		res.Latencies = append(res.Latencies, w.lat...)
		for s, n := range w.statuses {
			res.Statuses[s] += n
			res.Completed += n
			if s >= 200 && s < 300 {
				res.OK += n
			}
		}
		if res.FirstErr == "" {
			res.FirstErr = w.firstErr
		}
	}
	slices.Sort(res.Latencies)
	return res, nil
}

// cpuInWindow measures, between the instants from and until, the CPU time
// pid used (0 when pid is 0 or unreadable), the CPU time the whole machine
// used, and the machine's steal share (-1 when unknown).
func cpuInWindow(ctx context.Context, pid int, from, until time.Time) (server, machine time.Duration, steal float64) {
	sleepUntil := func(t time.Time) bool {
		select {
		case <-time.After(time.Until(t)):
			return true
		case <-ctx.Done():
			return false
		}
	}
	if !sleepUntil(from) {
		return 0, 0, -1
	}
	s0 := sampleCPU(pid)
	if !sleepUntil(until) {
		return 0, 0, -1
	}
	s1 := sampleCPU(pid)
	if s0.procErr == nil && s1.procErr == nil {
		server = s1.proc - s0.proc
	}
	if s0.machineErr != nil || s1.machineErr != nil {
		return server, 0, -1
	}
	return server, busy(s0.machine, s1.machine), stealShare(s0.machine, s1.machine)
}

// cpuSample is the CPU time a process and the machine have used so far.
type cpuSample struct {
	proc       time.Duration
	procErr    error // also when there is no process (pid 0)
	machine    machineCPU
	machineErr error
}

func sampleCPU(pid int) cpuSample {
	var s cpuSample
	if pid == 0 {
		s.procErr = errors.New("no process")
	} else {
		s.proc, s.procErr = procCPU(pid)
	}
	s.machine, s.machineErr = readMachineCPU()
	return s
}

// rawConn is one kept-alive HTTP/1.1 connection sending the same request.
type rawConn struct {
	addr    string
	req     []byte
	timeout time.Duration
	c       net.Conn
	br      *bufio.Reader
}

// newRawConn prepares a connection to addr that will send req (a complete
// HTTP/1.1 request); it dials on first use.
func newRawConn(addr string, req []byte, timeout time.Duration) *rawConn {
	return &rawConn{addr: addr, req: req, timeout: timeout}
}

// Do sends the request and reads the whole answer, redialling when the
// server closed the connection.
func (rc *rawConn) Do() (int, error) {
	if rc.c == nil {
		c, err := net.DialTimeout("tcp", rc.addr, rc.timeout)
		if err != nil {
			return 0, err
		}
		rc.c = c
		if rc.br == nil {
			rc.br = bufio.NewReaderSize(c, 64<<10)
		} else {
			rc.br.Reset(c)
		}
	}
	_ = rc.c.SetDeadline(time.Now().Add(rc.timeout))
	if _, err := rc.c.Write(rc.req); err != nil {
		rc.Close()
		return 0, err
	}
	status, closeConn, err := readResponse(rc.br)
	if err != nil || closeConn {
		rc.Close()
	}
	return status, err
}

func (rc *rawConn) Close() {
	if rc.c != nil {
		rc.c.Close()
		rc.c = nil
	}
}

// httpRequest builds a request's bytes. body nil means none.
func httpRequest(method, host, path string, headers map[string]string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: herald-bench\r\n", method, path, host)
	for k, v := range headers {
		fmt.Fprintf(&b, "%s: %s\r\n", k, v)
	}
	if body != nil {
		fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
	}
	b.WriteString("\r\n")
	b.Write(body)
	return b.Bytes()
}

var errMalformed = errors.New("malformed HTTP response")

// readResponse reads one HTTP/1.1 response from br and discards its body.
// closeConn reports a "Connection: close" answer or a body delimited by
// the end of the connection.
func readResponse(br *bufio.Reader) (status int, closeConn bool, err error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return 0, false, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, true, errMalformed
	}
	status, err = strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, true, errMalformed
	}
	length := int64(-1)
	chunked := false
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return status, true, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return status, true, errMalformed
		}
		v = bytes.TrimSpace(v)
		switch {
		case bytes.EqualFold(k, []byte("Content-Length")):
			length, err = strconv.ParseInt(string(v), 10, 64)
			if err != nil {
				return status, true, errMalformed
			}
		case bytes.EqualFold(k, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(v, []byte("chunked"))
		case bytes.EqualFold(k, []byte("Connection")):
			closeConn = bytes.EqualFold(v, []byte("close"))
		}
	}
	switch {
	case chunked:
		for {
			line, err = br.ReadSlice('\n')
			if err != nil {
				return status, true, err
			}
			size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
			n, err := strconv.ParseInt(string(bytes.TrimSpace(size)), 16, 64)
			if err != nil {
				return status, true, errMalformed
			}
			if n == 0 {
				break
			}
			if _, err := br.Discard(int(n) + 2); err != nil {
				return status, true, err
			}
		}
		for { // trailers, then the blank line
			line, err = br.ReadSlice('\n')
			if err != nil {
				return status, true, err
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
		}
	case length >= 0:
		if _, err := br.Discard(int(length)); err != nil {
			return status, true, err
		}
	case status == 204 || status == 304 || status/100 == 1:
	default:
		if _, err := io.Copy(io.Discard, br); err != nil {
			return status, true, err
		}
		closeConn = true
	}
	return status, closeConn, nil
}
