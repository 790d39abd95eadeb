package harness

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/herald-vpn/herald/internal/testsupport"
)

// Redis is a redis-server of the test's own, on a port of its own, with
// nothing saved to disk: a test can stop, start and flush it without
// touching any other server. The test's cleanup kills it.
type Redis struct {
	Port int

	t      *testing.T
	cmd    *exec.Cmd
	exited chan struct{}
	logs   *testsupport.Buffer
}

// StartRedis starts redis-server. A machine without it skips the test,
// saying so.
func StartRedis(t *testing.T) *Redis {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("no redis-server on PATH: the fault suite runs a Redis of its own")
	}
	r := &Redis{t: t, Port: freePort(t)}
	t.Cleanup(r.kill)
	r.Start(t)
	return r
}

// URL is the address of database 0.
func (r *Redis) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port) }

// Start runs the server and waits until it answers PING.
func (r *Redis) Start(t *testing.T) {
	t.Helper()
	r.logs = &testsupport.Buffer{}
	r.exited = make(chan struct{})
	r.cmd = exec.Command("redis-server", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no")
	r.cmd.Stdout, r.cmd.Stderr = r.logs, r.logs
	r.cmd.SysProcAttr = dieWithParent()
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	exited := r.exited
	go func() { r.cmd.Wait(); close(exited) }()
	testsupport.Eventually(t, PollWait, func() bool {
		select {
		case <-exited:
			t.Fatalf("redis-server exited at start:\n%s", r.logs.String())
		default:
		}
		return r.Do(context.Background(), "PING") == nil
	}, "redis-server on port %d does not answer PING:\n%s", r.Port, r.logs.String())
}

// Stop ends the server (SIGKILL: what is in memory is lost, as in a
// crash) and waits until it is gone.
func (r *Redis) Stop(t *testing.T) {
	t.Helper()
	r.cmd.Process.Signal(syscall.SIGKILL)
	testsupport.Receive(t, r.exited, KillWait, "redis-server's exit after SIGKILL")
}

// Restart is Stop then Start on the same port.
func (r *Redis) Restart(t *testing.T) {
	t.Helper()
	r.Stop(t)
	r.Start(t)
}

// FlushAll empties every database, as FLUSHALL does.
func (r *Redis) FlushAll(t *testing.T) {
	t.Helper()
	if err := r.Do(context.Background(), "FLUSHALL"); err != nil {
		t.Fatalf("FLUSHALL: %v", err)
	}
}

// Do runs one command and returns its error.
func (r *Redis) Do(ctx context.Context, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.Port), MaxRetries: -1})
	defer c.Close()
	return c.Do(ctx, args...).Err()
}

func (r *Redis) kill() {
	if r.cmd != nil && r.cmd.Process != nil {
		r.cmd.Process.Kill()
		select {
		case <-r.exited:
		case <-time.After(KillWait):
		}
	}
}
