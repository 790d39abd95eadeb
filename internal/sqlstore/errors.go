package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

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
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		return storage.ErrNotFound
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
		case "40001", "40P01", "55P03", "57P01", "53300": // serialization, deadlock, lock, shutdown, too many connections
			return fmt.Errorf("%w (%s)", storage.ErrBusy, pe.Code)
		}
		return fmt.Errorf("postgres: %w", err)
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %v", storage.ErrBusy, err)
	}
	return err
}
