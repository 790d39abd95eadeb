package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the kit started; every child is stopped at the end,
// also after an error or an interrupt.
type child struct {
	name   string
	cmd    *exec.Cmd
	log    *os.File
	exited chan struct{}
	err    error // Wait's result, valid once exited is closed
}

var (
	childrenMu sync.Mutex
	children   = map[*child]struct{}{}
)

// startChild starts bin args with exactly env, output to logPath.
func startChild(name, bin string, args, env []string, logPath string) (*child, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd, log: f, exited: make(chan struct{})}
	childrenMu.Lock()
	children[c] = struct{}{}
	childrenMu.Unlock()
	go func() {
		c.err = cmd.Wait()
		f.Close()
		close(c.exited)
	}()
	return c, nil
}

func (c *child) Pid() int { return c.cmd.Process.Pid }

// Stop sends SIGTERM and waits up to grace, then kills.
func (c *child) Stop(grace time.Duration) {
	select {
	case <-c.exited:
	default:
		_ = c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(grace):
			_ = c.cmd.Process.Kill()
			<-c.exited
		}
	}
	childrenMu.Lock()
	delete(children, c)
	childrenMu.Unlock()
}

// stopAllChildren stops whatever is still running (interrupt, error).
func stopAllChildren() {
	childrenMu.Lock()
	list := make([]*child, 0, len(children))
	for c := range children {
		list = append(list, c)
	}
	childrenMu.Unlock()
	for _, c := range list {
		c.Stop(10 * time.Second)
	}
}

// waitHTTP polls url until it answers 200, the child exits, or limit passes.
func waitHTTP(ctx context.Context, c *child, url string, limit time.Duration) error {
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(limit)
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("%s exited before it was ready (%v); see %s", c.name, c.err, c.log.Name())
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %s; see %s", c.name, limit, c.log.Name())
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// memStatus reads VmRSS and VmHWM (KiB) of pid.
func memStatus(pid int) (rss, hwm int64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(v)
		if len(f) == 0 {
			continue
		}
		n, _ := strconv.ParseInt(f[0], 10, 64)
		switch k {
		case "VmRSS":
			rss = n
		case "VmHWM":
			hwm = n
		}
	}
	return rss, hwm, nil
}

// rssSampler records the largest VmRSS of a process, sampled every 100 ms.
type rssSampler struct {
	stop chan struct{}
	done chan struct{}
	peak int64
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _, err := memStatus(pid); err == nil {
				s.peak = max(s.peak, rss)
			}
			select {
			case <-s.stop:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// Stop ends the sampling and returns the peak VmRSS seen (KiB).
func (s *rssSampler) Stop() int64 {
	close(s.stop)
	<-s.done
	return s.peak
}

// clockTick is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// procCPU reads the user + system CPU time pid has used so far.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields count from its ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	return time.Duration(utime+stime) * clockTick, nil
}

// machineCPU is the machine's CPU time so far (/proc/stat's first line),
// the steal time (what the hypervisor gave to others) and the idle time
// apart, in clock ticks.
type machineCPU struct{ total, steal, idle int64 }

func readMachineCPU() (machineCPU, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return machineCPU{}, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return machineCPU{}, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var m machineCPU
	for i, s := range f[1:9] { // user nice system idle iowait irq softirq steal
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return machineCPU{}, fmt.Errorf("/proc/stat: %w", err)
		}
		m.total += n
		switch i {
		case 3, 4: // idle, iowait
			m.idle += n
		case 7:
			m.steal = n
		}
	}
	return m, nil
}

// busy is the CPU time the machine's programs (all of them: server,
// database, load generator) used between a and b.
func busy(a, b machineCPU) time.Duration {
	return time.Duration((b.total-b.idle-b.steal)-(a.total-a.idle-a.steal)) * clockTick
}

// stealShare is the share of the machine's CPU time between a and b that
// the hypervisor stole, or -1 when unknown.
func stealShare(a, b machineCPU) float64 {
	if b.total <= a.total {
		return -1
	}
	return float64(b.steal-a.steal) / float64(b.total-a.total)
}
