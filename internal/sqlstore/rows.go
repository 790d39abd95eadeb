package sqlstore

import "errors"

// errStop, returned by an each callback, ends the loop early, as a break
// would: the rows are closed and each returns their iteration error.
var errStop = errors.New("sqlstore: stop")

// each calls fn for every row of a query and closes the rows. Its first
// two arguments are query's results, so that each(q.query(…), fn) reads:
// a query's error is returned as it is (query translated it already). An
// error of fn (a scan's) or of the iteration is translated; fn returning
// errStop ends the loop there.
func each(rs rows, err error, fn func(r row) error) error {
	if err != nil {
		return err
	}
	defer rs.Close()
	for rs.Next() {
		if err := fn(rs); err == errStop {
			break
		} else if err != nil {
			return translate(err)
		}
	}
	return translate(rs.Err())
}

// collect returns the rows of a query, each read by scan, like each; on
// any error it returns nil and the error.
func collect[T any](rs rows, err error, scan func(r row) (T, error)) ([]T, error) {
	var out []T
	err = each(rs, err, func(r row) error {
		v, err := scan(r)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// collectWith is collect as a function of a query's two results, so
// that a read is collectWith(scan)(q.query(...)).
func collectWith[T any](scan func(r row) (T, error)) func(rs rows, err error) ([]T, error) {
	return func(rs rows, err error) ([]T, error) { return collect(rs, err, scan) }
}

// scanString reads a row of one text column.
func scanString(r row) (string, error) {
	var s string
	err := r.Scan(&s)
	return s, err
}
