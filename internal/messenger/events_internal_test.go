package messenger

import (
	"testing"
	"time"
)

// A live event carries the whole row, the linked account included.
func TestEventRoundTrip(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sub := Subscriber{ChatID: "7", Username: "ann", FirstName: "Ann", StartPayload: "promo", Status: Subscribed,
		SubscribedSince: at.Add(-time.Hour), UpdatedAt: at, UserID: "u1"}
	got, err := decodeEvent(EncodeEvent(Subscribe, sub))
	if err != nil || got.Kind != Subscribe || got.Subscriber != sub {
		t.Fatalf("round trip: %+v %v, want %+v", got, err, sub)
	}
}

// FuzzSubscriberEvent decodes a live subscriber event as another
// replica's arrives (the data of a NOTIFY payload): decoding never panics,
// and an event that decodes encodes to one that decodes to the same.
func FuzzSubscriberEvent(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Add(EncodeEvent(Subscribe, Subscriber{ChatID: "7", Username: "ann", FirstName: "Ann", StartPayload: "promo", Status: Subscribed,
		SubscribedSince: at.Add(-time.Hour), UpdatedAt: at, UserID: "u1"}))
	f.Add(EncodeEvent(Block, Subscriber{ChatID: "-1001", Status: Blocked, UpdatedAt: at}))
	for _, seed := range []string{
		`{}`, `null`, `[]`, ``, "\x00", `{"kind":1}`, `{"subscribedSince":"10000-01-01T00:00:00Z"}`,
		`{"at":"2026-01-02T03:04:05+24:00"}`, `{"chatId":"\ud800","username":"\xff"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEvent(data)
		if err != nil {
			return // Events skips it
		}
		if _, err := e.Subscriber.SubscribedSince.MarshalJSON(); err != nil {
			return // a time no replica writes (an offset of ±24:00)
		}
		if _, err := e.Subscriber.UpdatedAt.MarshalJSON(); err != nil {
			return
		}
		first := EncodeEvent(e.Kind, e.Subscriber)
		again, err := decodeEvent(first)
		if err != nil {
			t.Fatalf("event %q decoded to %+v, whose encoding %s does not decode: %v", data, e, first, err)
		}
		if second := EncodeEvent(again.Kind, again.Subscriber); string(second) != string(first) {
			t.Fatalf("event %q changed in a round trip:\n first  %s\n second %s", data, first, second)
		}
	})
}
