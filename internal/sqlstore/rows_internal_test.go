package sqlstore

import (
	"database/sql"
	"errors"
	"slices"
	"testing"

	"github.com/herald-vpn/herald/internal/storage"
)

// fakeRows yields vals; scanErr fails the scan of row failAt (0-based,
// -1: none); err is the iteration's error.
type fakeRows struct {
	vals    []string
	i       int
	failAt  int
	scanErr error
	err     error
	closed  int
}

func (f *fakeRows) Next() bool {
	if f.i >= len(f.vals) {
		return false
	}
	f.i++
	return true
}

func (f *fakeRows) Scan(dest ...any) error {
	if f.i-1 == f.failAt {
		return f.scanErr
	}
	*dest[0].(*string) = f.vals[f.i-1]
	return nil
}

func (f *fakeRows) Err() error { return f.err }
func (f *fakeRows) Close()     { f.closed++ }

func TestCollect(t *testing.T) {
	queryErr := errors.New("query failed, already translated")
	for _, tc := range []struct {
		name     string
		rows     *fakeRows
		queryErr error
		want     []string
		wantErr  error
	}{
		{"all rows", &fakeRows{vals: []string{"a", "b", "c"}, failAt: -1}, nil, []string{"a", "b", "c"}, nil},
		{"no rows", &fakeRows{failAt: -1}, nil, nil, nil},
		{"scan error translated", &fakeRows{vals: []string{"a", "b"}, failAt: 1, scanErr: sql.ErrNoRows}, nil, nil, storage.ErrNotFound},
		{"iteration error translated", &fakeRows{vals: []string{"a"}, failAt: -1, err: sql.ErrNoRows}, nil, nil, storage.ErrNotFound},
		{"query error as it is", nil, queryErr, nil, queryErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rs rows
			if tc.rows != nil {
				rs = tc.rows
			}
			got, err := collect(rs, tc.queryErr, scanString)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) || !slices.Equal(got, tc.want) {
				t.Fatalf("collect = %q, %v; want %q, %v", got, err, tc.want, tc.wantErr)
			}
			if tc.queryErr == queryErr && err != queryErr {
				t.Fatalf("query error %v came back as %v", queryErr, err)
			}
			if tc.rows != nil && tc.rows.closed != 1 {
				t.Fatalf("rows closed %d times, want once", tc.rows.closed)
			}
		})
	}
}

func TestEachStop(t *testing.T) {
	rs := &fakeRows{vals: []string{"a", "b", "c"}, failAt: -1, err: sql.ErrNoRows}
	var seen []string
	err := each(rs, nil, func(r row) error {
		s, err := scanString(r)
		if err != nil {
			return err
		}
		seen = append(seen, s)
		if s == "b" {
			return errStop
		}
		return nil
	})
	// A stop is a break: the rows' own error is still reported.
	if !errors.Is(err, storage.ErrNotFound) || !slices.Equal(seen, []string{"a", "b"}) || rs.closed != 1 {
		t.Fatalf("each = %v after %q, closed %d times", err, seen, rs.closed)
	}
}
