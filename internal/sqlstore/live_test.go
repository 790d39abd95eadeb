package sqlstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
	"github.com/herald-vpn/herald/internal/testsupport"
)

type liveEvent struct{ topic, data string }

// A subscriber change is announced when its transaction commits: to this
// process through OnLive and, on PostgreSQL, to another process's WatchLive;
// a process never receives its own events back through NOTIFY.
func TestLiveEvents(t *testing.T) {
	sqlstoretest.Each(t, func(t *testing.T, url string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		one, _ := mustOpen(t, url)
		two, _ := mustOpen(t, url)
		postgres := strings.HasPrefix(url, "postgres")

		local := make(chan liveEvent, 10)
		one.OnLive(func(topic string, data []byte) { local <- liveEvent{topic, string(data)} })
		watch := func(db interface {
			WatchLive(context.Context, func(string, []byte), func()) error
		}) (chan liveEvent, chan struct{}) {
			got, listening := make(chan liveEvent, 10), make(chan struct{}, 10)
			go db.WatchLive(ctx, func(topic string, data []byte) { got <- liveEvent{topic, string(data)} }, func() { listening <- struct{}{} })
			return got, listening
		}
		atOne, oneListening := watch(one)
		atTwo, twoListening := watch(two)
		if postgres {
			<-oneListening
			<-twoListening
		}

		if _, err := one.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Subscribe, ChatID: 42, Username: "ann"}); err != nil {
			t.Fatal(err)
		}
		e := <-local
		if e.topic != messenger.EventsTopic || !strings.Contains(e.data, `"kind":"subscribe"`) || !strings.Contains(e.data, `"chatId":"42"`) {
			t.Fatalf("local event %+v", e)
		}
		// A change that changes nothing announces nothing: the next local
		// event is the block.
		if _, err := one.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Unblock, ChatID: 42}); err != nil {
			t.Fatal(err)
		}
		if _, err := one.ApplySubscriberChange(ctx, messenger.Change{Kind: messenger.Block, ChatID: 42}); err != nil {
			t.Fatal(err)
		}
		if e := <-local; !strings.Contains(e.data, `"kind":"block"`) {
			t.Fatalf("second local event %+v, want the block", e)
		}
		if !postgres {
			return // one process: nothing crosses
		}
		for _, want := range []string{`"kind":"subscribe"`, `"kind":"block"`} {
			if e := <-atTwo; e.topic != messenger.EventsTopic || !strings.Contains(e.data, want) {
				t.Fatalf("the other process got %+v, want %s", e, want)
			}
		}
		// Published by the other process: the first thing the first one's
		// watcher receives (its own events never came back).
		if err := two.Publish(ctx, "job:x", []byte("state\nwith a newline")); err != nil {
			t.Fatal(err)
		}
		if e := <-atOne; e != (liveEvent{"job:x", "state\nwith a newline"}) {
			t.Fatalf("first process's watcher got %+v first", e)
		}
	})
}

// NOTIFY reaches the whole database: deployments in schemas of their own
// on one server hear only their own events (another deployment's progress
// for a job of the same ID must not reach this one's subscribers).
func TestLiveEventsStayInTheirSchema(t *testing.T) {
	sqlstoretest.Require(t, "postgres")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	elsewhere, _ := mustOpen(t, sqlstoretest.NewURL(t, "postgres"))
	url := sqlstoretest.NewURL(t, "postgres")
	one, _ := mustOpen(t, url)
	two, _ := mustOpen(t, url)

	got, listening := make(chan liveEvent, 10), make(chan struct{}, 10)
	go two.WatchLive(ctx, func(topic string, data []byte) { got <- liveEvent{topic, string(data)} }, func() { listening <- struct{}{} })
	testsupport.Receive(t, listening, 10*time.Second, "the watcher to listen")
	if err := elsewhere.Publish(ctx, "job:x", []byte("another deployment's")); err != nil {
		t.Fatal(err)
	}
	if err := one.Publish(ctx, "job:x", []byte("this deployment's")); err != nil {
		t.Fatal(err)
	}
	if e := testsupport.Receive(t, got, 10*time.Second, "this deployment's event"); e != (liveEvent{"job:x", "this deployment's"}) {
		t.Fatalf("the watcher got %+v first", e)
	}
}
