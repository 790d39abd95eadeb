package harness

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresBin is where initdb and pg_ctl are: HERALD_TEST_PG_BIN, else
// the newest of Debian's /usr/lib/postgresql/<version>/bin ("" if none).
func postgresBin() string {
	if dir := os.Getenv("HERALD_TEST_PG_BIN"); dir != "" {
		return dir
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int {
		va, _ := strconv.Atoi(filepath.Base(filepath.Dir(a)))
		vb, _ := strconv.Atoi(filepath.Base(filepath.Dir(b)))
		return va - vb
	})
	if len(dirs) == 0 {
		return ""
	}
	return dirs[len(dirs)-1]
}

// pgWait bounds one pg_ctl action (initdb, start, stop, restart).
const pgWait = 90 * time.Second

// Postgres is a PostgreSQL cluster of the test's own, on a port of its
// own, in a temporary directory: a test can stop, start, restart it and
// terminate its backends without touching any other server. The test's
// cleanup stops it (immediately) and removes its directory.
type Postgres struct {
	Port int
	dir  string // the data directory's parent: data/, the socket, the log
	bin  string
	as   string // the user the server runs as ("" for this process's)

	stop    *os.File      // the watchdog's standard input: closing it stops the server
	stopped chan struct{} // closed when the watchdog is done
}

// StartPostgres makes a cluster with initdb and starts it. Run as root,
// the cluster belongs to and runs as the postgres user (PostgreSQL refuses
// root). A machine without initdb skips the test, saying so.
func StartPostgres(t *testing.T) *Postgres {
	t.Helper()
	bin := postgresBin()
	if _, err := os.Stat(filepath.Join(bin, "initdb")); bin == "" || err != nil {
		t.Skipf("no initdb in %q (HERALD_TEST_PG_BIN, else /usr/lib/postgresql/*/bin): the fault suite runs a PostgreSQL cluster of its own", bin)
	}
	dir, err := os.MkdirTemp("", "herald-faults-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &Postgres{dir: dir, bin: bin}
	if os.Geteuid() == 0 {
		p.as = "postgres"
		u, err := user.Lookup(p.as)
		if err != nil {
			t.Fatalf("running as root, the cluster needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.watch(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start the cluster's watchdog: %v", err)
	}
	t.Cleanup(p.remove)
	if out, err := p.run("initdb", "-D", p.data(), "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-sync"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	p.Port = freePort(t)
	// No durability needed, and a server that starts and stops quickly.
	conf := fmt.Sprintf("port = %d\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '%s'\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 100\n", p.Port, p.dir)
	if err := appendFile(filepath.Join(p.data(), "postgresql.conf"), conf); err != nil {
		t.Fatal(err)
	}
	p.Start(t)
	return p
}

func (p *Postgres) data() string { return filepath.Join(p.dir, "data") }

// run runs one of the cluster's programs as the cluster's user.
func (p *Postgres) run(prog string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), pgWait)
	defer cancel()
	path := filepath.Join(p.bin, prog)
	var cmd *exec.Cmd
	if p.as != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", p.as, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func (p *Postgres) pgCtl(t *testing.T, action string, args ...string) {
	t.Helper()
	all := append([]string{action, "-D", p.data(), "-w", "-t", "60", "-l", filepath.Join(p.dir, "server.log")}, args...)
	if out, err := p.run("pg_ctl", all...); err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
		t.Fatalf("pg_ctl %s: %v\n%s\nserver log:\n%s", action, err, out, tailBytes(log, 20))
	}
}

// Start starts the server and waits until it accepts connections.
func (p *Postgres) Start(t *testing.T) { t.Helper(); p.pgCtl(t, "start") }

// Stop stops the server the way a fast shutdown does: every session is
// ended and the server is gone when Stop returns.
func (p *Postgres) Stop(t *testing.T) { t.Helper(); p.pgCtl(t, "stop", "-m", "fast") }

// Restart is pg_ctl restart -m fast.
func (p *Postgres) Restart(t *testing.T) { t.Helper(); p.pgCtl(t, "restart", "-m", "fast") }

// URL is the address of database db as user postgres, with the
// application_name app when not empty.
func (p *Postgres) URL(db, app string) string {
	u := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", p.Port, db)
	if app != "" {
		u += "&application_name=" + app
	}
	return u
}

// CreateDatabase makes database name and returns its URL with
// application_name app (by which TerminateBackends finds the connections).
func (p *Postgres) CreateDatabase(t *testing.T, name, app string) string {
	t.Helper()
	p.Exec(t, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	return p.URL(name, app)
}

// admin runs do on a connection to database postgres, closed when do
// returns; the whole is bounded by PollWait.
func (p *Postgres) admin(t *testing.T, do func(ctx context.Context, conn *pgx.Conn)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), PollWait)
	defer cancel()
	conn, err := pgx.Connect(ctx, p.URL("postgres", "herald-faults-admin"))
	if err != nil {
		t.Fatalf("connect to the suite's PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	do(ctx, conn)
}

// Exec runs one statement on database postgres.
func (p *Postgres) Exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	p.admin(t, func(ctx context.Context, conn *pgx.Conn) {
		if _, err := conn.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	})
}

// TerminateBackends ends every session whose application_name is app, as
// an administrator's pg_terminate_backend does, and returns how many.
func (p *Postgres) TerminateBackends(t *testing.T, app string) (n int) {
	t.Helper()
	p.admin(t, func(ctx context.Context, conn *pgx.Conn) {
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatalf("pg_terminate_backend: %v", err)
		}
	})
	return n
}

// watch starts the cluster's watchdog: a shell that waits for its
// standard input, a pipe from this process, to close, and then stops the
// server at once (immediate shutdown, then SIGKILL to the postmaster) and
// deletes the directory. remove closes the pipe; so does this process's
// death, so a test killed by its timeout leaves no server behind either
// (pg_ctl's server is not a child of the test, and would outlive it).
func (p *Postgres) watch() error {
	const script = `read _ignored
stop="$2/pg_ctl stop -D $1/data -m immediate -w -t 30"
if [ -n "$3" ]; then runuser -u "$3" -- $stop; else $stop; fi
if [ -f "$1/data/postmaster.pid" ]; then kill -9 "$(head -n 1 "$1/data/postmaster.pid")"; fi
rm -rf "$1"`
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	cmd := exec.Command("sh", "-c", script, "watchdog", p.dir, p.bin, p.as)
	cmd.Stdin = r // and no output: go test must not wait for it
	if err := cmd.Start(); err != nil {
		w.Close()
		return err
	}
	p.stop, p.stopped = w, make(chan struct{})
	go func() { cmd.Wait(); close(p.stopped) }()
	return nil
}

// remove has the watchdog stop the server and delete the directory, and
// waits for it (bounded).
func (p *Postgres) remove() {
	p.stop.Close()
	select {
	case <-p.stopped:
	case <-time.After(pgWait):
	}
	os.RemoveAll(p.dir)
}

// freePort returns a TCP port nothing listened on a moment ago. A server
// that must keep its port across restarts cannot be given port 0.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func appendFile(path, s string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func tailBytes(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}
