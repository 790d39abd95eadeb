// Package logbuffer batches a process's log lines: a server logs a line per
// request, and a write system call per line was a measurable part of a
// cheap request's cost. Lines are held at most Interval (or until the
// buffer holds Size bytes) and then written together; a line at WARN or
// above is written at once with everything before it, so that what an
// operator must see is never late, and Close writes the rest at shutdown.
// A process that dies without Flush (kill -9, a crash) loses at most
// Interval of INFO and DEBUG lines.
package logbuffer

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Size is how many bytes the buffer holds before it writes them.
const Size = 64 << 10

// Writer holds what is written to it for at most interval.
type Writer struct {
	out      io.Writer
	interval time.Duration

	mu    sync.Mutex
	buf   []byte
	timer *time.Timer // armed while buf holds bytes
	err   error       // the last failed write's, reported by Flush
}

// NewWriter returns a Writer that writes to out at most interval after a
// line was written to it. An interval of zero or less writes every line
// at once.
func NewWriter(out io.Writer, interval time.Duration) *Writer {
	return &Writer{out: out, interval: interval}
}

// Write holds p (one whole log line, as slog's handlers write them).
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.interval <= 0 {
		return w.out.Write(p)
	}
	w.buf = append(w.buf, p...)
	if len(w.buf) >= Size {
		w.flushLocked()
		return len(p), nil
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(w.interval, func() { _ = w.Flush() })
	} else if len(w.buf) == len(p) {
		w.timer.Reset(w.interval)
	}
	return len(p), nil
}

// Flush writes what is held.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushLocked()
	err := w.err
	w.err = nil
	return err
}

func (w *Writer) flushLocked() {
	if len(w.buf) == 0 {
		return
	}
	if _, err := w.out.Write(w.buf); err != nil {
		w.err = err
	}
	// Keep the memory unless a burst grew it past twice the buffer's size.
	if cap(w.buf) > 2*Size {
		w.buf = nil
	} else {
		w.buf = w.buf[:0]
	}
}

// Close writes what is held, and every line after it at once: a process
// that is stopping logs its last lines with nothing left to flush them.
func (w *Writer) Close() error {
	w.mu.Lock()
	w.interval = 0
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	return w.Flush()
}

// Handler writes records through next and flushes the Writer after a
// record at WARN or above.
type Handler struct {
	next slog.Handler
	w    *Writer
}

// NewHandler wraps next, whose output is w.
func NewHandler(next slog.Handler, w *Writer) *Handler { return &Handler{next: next, w: w} }

func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	err := h.next.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		if ferr := h.w.Flush(); err == nil {
			err = ferr
		}
	}
	return err
}

func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &Handler{next: h.next.WithAttrs(attrs), w: h.w}
}

func (h *Handler) WithGroup(name string) slog.Handler {
	return &Handler{next: h.next.WithGroup(name), w: h.w}
}
