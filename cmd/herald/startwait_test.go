package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/jackc/pgx/v5/pgconn"
)

// Which errors at start are worth waiting out: the table holds the
// errors as the drivers build them, wrapped the way sqlstore.Open wraps
// them.
func TestStartTransientErrors(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	pg := func(code, msg string) error {
		return fmt.Errorf("connect to postgres: %w", &pgconn.PgError{Severity: "FATAL", Code: code, Message: msg})
	}
	for _, tc := range []struct {
		name      string
		err       error
		transient bool
	}{
		{"connection refused", fmt.Errorf("connect to postgres: %w", refused), true},
		{"connection reset", fmt.Errorf("connect to postgres: %w", syscall.ECONNRESET), true},
		{"no route to host", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}, true},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutError{}}, true},
		{"the attempt's deadline", fmt.Errorf("connect to postgres: %w", context.DeadlineExceeded), true},
		{"a name not published yet", &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "db", IsNotFound: true}}, true},
		{"closed during the handshake", fmt.Errorf("connect to postgres: %w", io.ErrUnexpectedEOF), true},
		{"53300 too many clients", pg("53300", "sorry, too many clients already"), true},
		{"57P03 starting up", pg("57P03", "the database system is starting up"), true},
		{"57P01 shutting down", pg("57P01", "terminating connection due to administrator command"), true},
		{"08006 connection failure", pg("08006", "connection failure"), true},
		{"28P01 wrong password", pg("28P01", `password authentication failed for user "herald"`), false},
		{"28000 unknown role", pg("28000", `role "nobody" does not exist`), false},
		{"3D000 no such database", pg("3D000", `database "nothere" does not exist`), false},
		{"42501 no permission", pg("42501", "permission denied for database herald"), false},
		{"a bad URL", fmt.Errorf("postgres URL: %w", errors.New("cannot parse `postgres://x:y@:bad`")), false},
		{"TLS refused", errors.New("server refused TLS connection"), false},
		{"a SQLite file that cannot be opened", errors.New("open sqlite /nonexistent/h.db: unable to open database file"), false},
		{"a stop", context.Canceled, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sqlstore.ConnectRetryable(tc.err); got != tc.transient {
				t.Errorf("sqlstore.ConnectRetryable(%v) = %v, want %v", tc.err, got, tc.transient)
			}
		})
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string   { return "i/o timeout" }
func (*timeoutError) Timeout() bool   { return true }
func (*timeoutError) Temporary() bool { return true }

// The same classification of what sqlstore.Open really returns: a closed
// port is waited out; a database or role that does not exist is not.
func TestStartTransientErrorsFromPostgres(t *testing.T) {
	t.Parallel()
	base := postgresBase(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		name      string
		url       string
		transient bool
	}{
		{"a closed port", withHostPort(base, closed), true},
		{"a database that does not exist", withPath(base, "/herald_no_such_database"), false},
		{"a role that does not exist", withUser(base, "herald_no_such_role"), false},
		// The driver's own error (SQLITE_CANTOPEN), which the store counts
		// as unavailable once running: at start nothing will create it.
		{"a SQLite file in a directory that does not exist", "sqlite:" + filepath.Join(t.TempDir(), "missing", "h.db"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			db, err := sqlstore.Open(ctx, tc.url, sqlstore.Options{MaxConns: 1})
			if err == nil {
				db.Close()
				t.Fatalf("opening %s succeeded", tc.url)
			}
			if got := sqlstore.ConnectRetryable(err); got != tc.transient {
				t.Errorf("sqlstore.ConnectRetryable(%v) = %v, want %v", err, got, tc.transient)
			}
		})
	}
}

// openWhenReachable tries again after a transient error, gives up at
// once on any other, stops on a stop, and past its wait says so.
func TestStartRetryLoop(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("connect to postgres: %w", syscall.ECONNREFUSED)
	opener := func(errs ...error) (func(context.Context) (*sqlstore.DB, error), *int) {
		calls := 0
		return func(context.Context) (*sqlstore.DB, error) {
			calls++
			if calls <= len(errs) {
				return nil, errs[calls-1]
			}
			return &sqlstore.DB{}, nil
		}, &calls
	}
	t.Run("transient then reachable", func(t *testing.T) {
		t.Parallel()
		var logs bytes.Buffer
		open, calls := opener(refused, refused)
		db, err := openWhenReachable(t.Context(), time.Hour, slog.New(slog.NewTextHandler(&logs, nil)), open)
		if err != nil || db == nil || *calls != 3 {
			t.Fatalf("= %v, %v after %d calls; want the database on the third", db, err, *calls)
		}
		if n := strings.Count(logs.String(), "database not reachable yet"); n != 2 {
			t.Errorf("%d retry lines, want one per failed attempt (2):\n%s", n, logs.String())
		}
	})
	t.Run("permanent", func(t *testing.T) {
		t.Parallel()
		bad := &pgconn.PgError{Code: "28P01"}
		open, calls := opener(refused, bad)
		if _, err := openWhenReachable(t.Context(), time.Hour, slog.New(slog.DiscardHandler), open); !errors.Is(err, bad) || *calls != 2 {
			t.Fatalf("= %v after %d calls, want the authentication error at the second", err, *calls)
		}
	})
	t.Run("no wait", func(t *testing.T) {
		t.Parallel()
		open, calls := opener(refused)
		if _, err := openWhenReachable(t.Context(), 0, slog.New(slog.DiscardHandler), open); !errors.Is(err, syscall.ECONNREFUSED) || *calls != 1 {
			t.Fatalf("= %v after %d calls, want the refusal of the only attempt", err, *calls)
		}
	})
	t.Run("stopped", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		open := func(context.Context) (*sqlstore.DB, error) {
			if calls++; calls == 2 {
				cancel()
			}
			return nil, refused
		}
		if _, err := openWhenReachable(ctx, time.Hour, slog.New(slog.DiscardHandler), open); !errors.Is(err, errStartInterrupted) {
			t.Fatalf("= %v, want errStartInterrupted", err)
		}
	})
	t.Run("timed out", func(t *testing.T) {
		t.Parallel()
		open := func(context.Context) (*sqlstore.DB, error) { return nil, refused }
		_, err := openWhenReachable(t.Context(), time.Second, slog.New(slog.DiscardHandler), open)
		if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "HERALD_DATABASE_START_TIMEOUT (1s") {
			t.Fatalf("= %v, want the last refusal naming HERALD_DATABASE_START_TIMEOUT", err)
		}
	})
}

// postgresBase is HERALD_TEST_POSTGRES_URL (the test is skipped without).
func postgresBase(t *testing.T) string {
	t.Helper()
	sqlstoretest.Require(t, "postgres")
	return os.Getenv("HERALD_TEST_POSTGRES_URL")
}

func withHostPort(raw, hostPort string) string {
	u, _ := url.Parse(raw)
	u.Host = hostPort
	return u.String()
}

func withPath(raw, path string) string {
	u, _ := url.Parse(raw)
	u.Path = path
	return u.String()
}

func withUser(raw, user string) string {
	u, _ := url.Parse(raw)
	u.User = url.User(user)
	return u.String()
}
