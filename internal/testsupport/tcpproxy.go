package testsupport

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TCPProxy forwards a loopback port to a server (PostgreSQL, Redis) and
// breaks the link on demand. Cut closes every connection and stops
// listening (new connections are refused); Blackhole keeps listening but
// never forwards (connections wait forever); Restore forwards again on
// the same port. Silence keeps every connection open but drops what it
// carries, both ways, until Heal (a middlebox that drops packets without
// a reset); Delay adds latency to every answer.
type TCPProxy struct {
	Addr, target string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	hang  bool
	// pipes are the connections forwarded to the server and still open
	// (both sides); a pipe is tainted once the silence dropped a byte of
	// it.
	pipes  map[*pipe]bool
	silent atomic.Bool
	delay  atomic.Int64 // time.Duration added before each answer is forwarded
	// delayed counts the answers held back by delay.
	delayed atomic.Int64
	// dropped counts the reads the silence dropped.
	dropped atomic.Int64
}

type pipe struct {
	tainted atomic.Bool
	port    int // the upstream connection's local port (pg_stat_activity.client_port)
}

// NewTCPProxy listens on a free loopback port and forwards to target
// (host:port); the test's cleanup cuts it.
func NewTCPProxy(t testing.TB, target string) *TCPProxy {
	t.Helper()
	p := &TCPProxy{target: target, conns: map[net.Conn]bool{}, pipes: map[*pipe]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

func (p *TCPProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns[c] = true
			hang := p.hang
			p.mu.Unlock()
			if hang {
				continue // held open, never answered, closed by Cut
			}
			go p.pipe(c)
		}
	}()
}

func (p *TCPProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	pp := &pipe{port: up.LocalAddr().(*net.TCPAddr).Port}
	p.mu.Lock()
	p.conns[up] = true
	p.pipes[pp] = true
	p.mu.Unlock()
	done := make(chan struct{})
	go func() { p.forward(up, c, pp, false); up.Close(); close(done) }()
	p.forward(c, up, pp, true)
	c.Close()
	<-done
	p.mu.Lock()
	delete(p.pipes, pp)
	p.mu.Unlock()
}

// forward copies src to dst, dropping what arrives during a silence and
// holding each answer back by the added latency.
func (p *TCPProxy) forward(dst, src net.Conn, pp *pipe, answers bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if d := time.Duration(p.delay.Load()); answers && d > 0 {
				time.Sleep(d)
				p.delayed.Add(1)
			}
			if p.silent.Load() {
				pp.tainted.Store(true)
				p.dropped.Add(1)
			} else if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Silence drops every byte, both ways, on open and new connections
// alike, until Heal; no connection is closed.
func (p *TCPProxy) Silence() { p.silent.Store(true) }

// Heal ends a Silence.
func (p *TCPProxy) Heal() { p.silent.Store(false) }

// Delay holds every answer back by d (0: none) before forwarding it.
func (p *TCPProxy) Delay(d time.Duration) { p.delay.Store(int64(d)) }

// Delayed counts the answers held back by Delay so far.
func (p *TCPProxy) Delayed() int64 { return p.delayed.Load() }

// Dropped counts what the silence dropped so far (reads, either way), on
// connections still open or closed since.
func (p *TCPProxy) Dropped() int64 { return p.dropped.Load() }

// TaintedPorts are the local ports of the open upstream connections the
// silence dropped bytes of.
func (p *TCPProxy) TaintedPorts() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ports []int
	for pp := range p.pipes {
		if pp.tainted.Load() {
			ports = append(ports, pp.port)
		}
	}
	return ports
}

// OpenPipes counts the connections forwarded to the server still open,
// and those of them the silence dropped bytes of.
func (p *TCPProxy) OpenPipes() (open, tainted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for pp := range p.pipes {
		open++
		if pp.tainted.Load() {
			tainted++
		}
	}
	return open, tainted
}

func (p *TCPProxy) closeAll() {
	for c := range p.conns {
		c.Close()
		delete(p.conns, c)
	}
}

// Cut refuses new connections and breaks the open ones.
func (p *TCPProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	p.closeAll()
}

// Blackhole breaks the open connections and accepts new ones that never
// answer, as a server behind a dead network path would.
func (p *TCPProxy) Blackhole(t testing.TB) {
	t.Helper()
	p.reopen(t, true)
}

// Restore forwards again on the same address.
func (p *TCPProxy) Restore(t testing.TB) {
	t.Helper()
	p.reopen(t, false)
}

// reopen breaks every connection and listens again on the same address,
// new connections forwarded or (hang) never answered.
func (p *TCPProxy) reopen(t testing.TB, hang bool) {
	t.Helper()
	p.Cut()
	p.mu.Lock()
	p.hang = hang
	p.mu.Unlock()
	p.listen(t)
}

func (p *TCPProxy) listen(t testing.TB) {
	t.Helper()
	var ln net.Listener
	var err error
	for range 50 {
		if ln, err = net.Listen("tcp", p.Addr); err == nil {
			p.serve(ln)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("listen again on %s: %v", p.Addr, err)
}
