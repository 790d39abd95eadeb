package live

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"
)

type state struct {
	v    int64
	done bool
}

func (s state) Version() int64 { return s.v }
func (s state) Finished() bool { return s.done }

// Follow sends the first state, skips stale and duplicate ones, reads
// again after a gap, reports what it cannot decode, and ends after the
// finished state.
func TestFollow(t *testing.T) {
	b := New(nil, nil)
	sub := b.Subscribe("t", false, 16)
	decode := func(d []byte) (state, error) {
		if string(d) == "garbled" {
			return state{}, errors.New("garbled")
		}
		if string(d) == "done" {
			return state{v: 9, done: true}, nil
		}
		v, err := strconv.ParseInt(string(d), 10, 64)
		return state{v: v}, err
	}
	read := func(context.Context) (state, error) { return state{v: 7}, nil }
	var bad []error
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out := Follow(ctx, sub, state{v: 2}, 1, decode, read, func(err error) { bad = append(bad, err) })
	for _, d := range []string{"1", "2", "3", "garbled", "3"} {
		b.Publish(ctx, "t", []byte(d))
	}
	b.Resync() // a gap: the state is read again (version 7)
	b.Publish(ctx, "t", []byte("5"))
	b.Publish(ctx, "t", []byte("done"))
	b.Publish(ctx, "t", []byte("10"))
	var got []int64
	for s := range out {
		got = append(got, s.v)
	}
	want := []int64{2, 3, 7, 9}
	if len(got) != len(want) {
		t.Fatalf("followed %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("followed %v, want %v", got, want)
		}
	}
	if len(bad) != 1 {
		t.Fatalf("bad events reported: %v, want the garbled one", bad)
	}
}
