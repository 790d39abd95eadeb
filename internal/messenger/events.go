package messenger

import (
	"context"
	"encoding/json"
	"time"

	"github.com/herald-vpn/herald/internal/live"
)

// EventsTopic is the live topic of subscriber changes.
const EventsTopic = "messenger"

// eventBuffer is how many subscriber events may wait for a slow live
// subscriber before it is dropped.
const eventBuffer = 256

// Event is one change of a chat's subscription, as live subscribers see
// it: what the update did (Kind) and the chat's row after it.
type Event struct {
	Kind       ChangeKind
	Subscriber Subscriber
}

type eventJSON struct {
	Kind            ChangeKind `json:"kind"`
	ChatID          string     `json:"chatId"`
	Username        string     `json:"username,omitempty"`
	FirstName       string     `json:"firstName,omitempty"`
	StartPayload    string     `json:"startPayload,omitempty"`
	Status          string     `json:"status"`
	SubscribedSince time.Time  `json:"subscribedSince"`
	At              time.Time  `json:"at"`
	UserID          string     `json:"userId,omitempty"`
}

// EncodeEvent is the live event of change kind leaving the chat as s; the
// store publishes it in the transaction that records the change.
func EncodeEvent(kind ChangeKind, s Subscriber) []byte {
	b, _ := json.Marshal(eventJSON{kind, s.ChatID, s.Username, s.FirstName, s.StartPayload, string(s.Status), s.SubscribedSince, s.UpdatedAt, s.UserID})
	return b
}

func decodeEvent(b []byte) (Event, error) {
	var e eventJSON
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, err
	}
	return Event{Kind: e.Kind, Subscriber: Subscriber{ChatID: e.ChatID, Username: e.Username, FirstName: e.FirstName, StartPayload: e.StartPayload,
		Status: SubscriberStatus(e.Status), SubscribedSince: e.SubscribedSince, UpdatedAt: e.At, UserID: e.UserID}}, nil
}

// Events streams subscriber changes committed from now on, on any
// replica, until ctx ends. A subscriber that falls eventBuffer events
// behind is dropped: the channel closes early.
func (s *Service) Events(ctx context.Context) <-chan Event {
	sub := s.live.Subscribe(EventsTopic, false, eventBuffer)
	out := make(chan Event)
	go func() {
		defer close(out)
		defer sub.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case data, ok := <-sub.C:
				if !ok {
					return
				}
				if data == nil {
					continue // a gap: nothing to read again, changes are not state
				}
				e, err := decodeEvent(data)
				if err != nil {
					s.log.WarnContext(ctx, "messenger event unreadable", "err", err)
					continue
				}
				select {
				case out <- e:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// Live is the broker subscriber events travel on.
func (s *Service) Live() *live.Broker { return s.live }
