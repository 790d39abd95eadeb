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
