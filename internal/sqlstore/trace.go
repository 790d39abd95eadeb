package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/tracing"
	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// tracedQuerier gives each query a client span holding the statement (its
// text only: arguments are never recorded). A row's span ends when it is
// scanned, a result set's when it is closed, since that is when the
// database work is done.
type tracedQuerier struct {
	next   querier
	tracer trace.Tracer
	system string
}

// traced wraps q when the store traces.
func (db *DB) traced(q querier) querier {
	if db.tracer == nil {
		return q
	}
	return tracedQuerier{next: q, tracer: db.tracer, system: string(db.dialect)}
}

func (t tracedQuerier) start(ctx context.Context, q string) (context.Context, trace.Span) {
	op := operation(q)
	return t.tracer.Start(ctx, "db "+op, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.system.name", t.system), attribute.String("db.operation.name", op), attribute.String("db.query.text", q)))
}

func (t tracedQuerier) exec(ctx context.Context, q string, args ...any) (int64, error) {
	ctx, span := t.start(ctx, q)
	n, err := t.next.exec(ctx, q, args...)
	tracing.End(span, err)
	return n, err
}

func (t tracedQuerier) queryRow(ctx context.Context, q string, args ...any) row {
	ctx, span := t.start(ctx, q)
	return tracedRow{row: t.next.queryRow(ctx, q, args...), span: span}
}

func (t tracedQuerier) query(ctx context.Context, q string, args ...any) (rows, error) {
	ctx, span := t.start(ctx, q)
	rs, err := t.next.query(ctx, q, args...)
	if err != nil {
		tracing.End(span, err)
		return nil, err
	}
	return &tracedRows{rows: rs, span: span}, nil
}

type tracedRow struct {
	row
	span trace.Span
}

func (r tracedRow) Scan(dest ...any) error {
	err := r.row.Scan(dest...)
	if errors.Is(err, storage.ErrNotFound) || errors.Is(err, sql.ErrNoRows) || errors.Is(err, pgx.ErrNoRows) {
		tracing.End(r.span, nil) // no row is an answer, not a failure
	} else {
		tracing.End(r.span, err)
	}
	return err
}

type tracedRows struct {
	rows
	span  trace.Span
	ended bool
}

func (r *tracedRows) Close() {
	r.rows.Close()
	if !r.ended {
		r.ended = true
		tracing.End(r.span, r.rows.Err())
	}
}

// operation is a statement's first keyword (SELECT, INSERT…), after any
// leading comment lines.
func operation(q string) string {
	q = strings.TrimSpace(q)
	for strings.HasPrefix(q, "--") {
		_, rest, _ := strings.Cut(q, "\n")
		q = strings.TrimSpace(rest)
	}
	op, _, _ := strings.Cut(q, " ")
	op, _, _ = strings.Cut(op, "\n")
	return strings.ToUpper(op)
}
