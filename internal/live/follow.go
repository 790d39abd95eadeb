package live

import "context"

// State is a thing whose changes are followed live, such as a job: each
// state has a version that grows with every change, and a state may be the
// last one.
type State interface {
	Version() int64
	Finished() bool
}

// Follow turns sub's events into the states of one thing for a subscriber:
// first, when its version is above after, then each newer state, decoded
// from the event or, after a gap (a nil event), read again. States at or
// below the newest sent are skipped, so duplicates and late events are
// harmless. The channel is closed after a finished state, when sub ends, or
// when ctx ends; sub is closed then. An event that cannot be decoded or
// read is given to bad and skipped.
func Follow[T State](ctx context.Context, sub *Sub, first T, after int64,
	decode func([]byte) (T, error), read func(context.Context) (T, error), bad func(error)) <-chan T {
	out := make(chan T)
	go func() {
		defer close(out)
		defer sub.Close()
		last := after
		// emit sends s if it is news, and reports whether to go on.
		emit := func(s T) bool {
			if v := s.Version(); v > last {
				select {
				case out <- s:
				case <-ctx.Done():
					return false
				}
				last = v
			}
			return !s.Finished()
		}
		if !emit(first) {
			return
		}
		for {
			select {
			case <-ctx.Done():
				return
			case data, ok := <-sub.C:
				if !ok {
					return
				}
				var s T
				var err error
				if data == nil {
					s, err = read(ctx)
				} else {
					s, err = decode(data)
				}
				if err != nil {
					if ctx.Err() == nil {
						bad(err)
					}
					continue
				}
				if !emit(s) {
					return
				}
			}
		}
	}()
	return out
}

// Codec writes the state of one kind of thing into an event and reads it
// back, on whichever replica receives it. The doors' wire types give the
// codecs (internal/view), so that an event carries what a client is shown.
type Codec[T any] struct {
	Encode func(T) ([]byte, error)
	Decode func([]byte) (T, error)
}
