package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// translate turns driver errors into the store's own, so that no SQL error
// text reaches a client and the domain can branch on meaning. Errors it does
// not know keep their text for the log, wrapped once.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrUnavailable) || errors.Is(err, storage.ErrBusy) {
		return err // translated already
	}
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return storage.ErrNotFound
	}
	// A caller that went away is not an outage.
	if errors.Is(err, context.Canceled) {
		return err
	}
	// A connection that could not be made in time (the pool's acquire
	// timeout) is an outage; any other deadline is the caller's.
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) {
		return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if unavailable(err) {
		return fmt.Errorf("%w: %v", storage.ErrUnavailable, err)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return fmt.Errorf("%w (%s)", storage.ErrConflict, se.Error())
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w (%s)", storage.ErrBusy, se.Error())
		}
		return fmt.Errorf("sqlite: %w", err)
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w (%s)", storage.ErrConflict, pe.ConstraintName)
		case "22021", "22P05": // character_not_in_repertoire (a NUL or bad UTF-8), untranslatable_character
			return fmt.Errorf("%w (%s)", storage.ErrInvalidText, pe.Code)
		case "40001", "40P01", "55P03", "53300": // serialization, deadlock, lock not available, too many connections
			return fmt.Errorf("%w (%s)", storage.ErrBusy, pe.Code)
		}
		return fmt.Errorf("postgres: %w", err)
	}
	return err
}

// ConnectRetryable reports whether an error opening a PostgreSQL database
// may go away by itself, so that a server starting may wait and try again:
// the database unreachable (unavailable), full (too many clients), or an
// attempt that ran out of time. Everything else (a bad URL, TLS refused, a
// wrong password or user, a database that does not exist) needs the
// operator, and so does a SQLite file that cannot be opened: nothing
// starts it later.
func ConnectRetryable(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	if _, ok := errors.AsType[*sqlite.Error](err); ok {
		return false
	}
	if pe, ok := errors.AsType[*pgconn.PgError](err); ok && pe.Code == "53300" { // too_many_connections
		return true
	}
	return errors.Is(err, context.DeadlineExceeded) || unavailable(err)
}

// unavailable reports whether err means the database cannot be reached:
// a lost connection, a server shutting down, starting up or
// failing over, a connection closed under the query, or an I/O failure
// of the SQLite file.
func unavailable(err error) bool {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection exception
			return true
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin shutdown, crash shutdown, cannot connect now
			return true
		case pe.Code == "25006": // read_only_sql_transaction: a standby after a failover
			return true
		}
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL, sqlite3.SQLITE_CANTOPEN:
			return true
		}
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// A connection closed under the query, and failures before the query
	// was sent: the connection is gone, not the statement wrong.
	return errors.Is(err, pgconn.ErrConnClosed) || pgconn.SafeToRetry(err)
}
