package messenger

import (
	"context"

	"github.com/herald-vpn/herald/internal/webhooks"
)

// SubscriberChanged is the data of messenger.subscriber.subscribed,
// .unsubscribed and .blocked, its type named by Status (its JSON is the
// event's data, fields in the order of their JSON names).
type SubscriberChanged struct {
	ChatID       string           `json:"chatId"`
	StartPayload *string          `json:"startPayload,omitempty"` // only when subscribed ("" included)
	Status       SubscriberStatus `json:"status"`
}

// subscriberEvents are the event types of the statuses that have one.
var subscriberEvents = map[SubscriberStatus]string{Subscribed: webhooks.SubscriberSubscribed,
	Unsubscribed: webhooks.SubscriberUnsubscribed, Blocked: webhooks.SubscriberBlocked}

func (e SubscriberChanged) EventType() string { return subscriberEvents[e.Status] }

// StatusEvent is the event of a chat's subscriber going from before (nil:
// unknown so far) to after; false when the status did not change or has
// no event.
func StatusEvent(before *Subscriber, after Subscriber) (SubscriberChanged, bool) {
	if before != nil && before.Status == after.Status {
		return SubscriberChanged{}, false
	}
	if _, ok := subscriberEvents[after.Status]; !ok {
		return SubscriberChanged{}, false
	}
	e := SubscriberChanged{ChatID: after.ChatID, Status: after.Status}
	if after.Status == Subscribed {
		payload := after.StartPayload
		e.StartPayload = &payload
	}
	return e, true
}

// ApplyUpdate records a Telegram update and applies its change (nil:
// none) in one unit of work of st (Store.ApplyTelegramUpdate), with the
// subscriber's event when its status changed (StatusEvent).
func ApplyUpdate(ctx context.Context, st Store, updateID int64, change *Change) (Outcome, error) {
	return applyWithEvent(ctx, st, func(ctx context.Context) (Outcome, error) { return st.ApplyTelegramUpdate(ctx, updateID, change) })
}

// ApplyChange is ApplyUpdate for a change that comes from no update.
func ApplyChange(ctx context.Context, st Store, change Change) (Outcome, error) {
	return applyWithEvent(ctx, st, func(ctx context.Context) (Outcome, error) { return st.ApplySubscriberChange(ctx, change) })
}

func applyWithEvent(ctx context.Context, st Store, apply func(ctx context.Context) (Outcome, error)) (Outcome, error) {
	var out Outcome
	err := st.InTx(ctx, func(ctx context.Context) error {
		var err error
		if out, err = apply(ctx); err != nil || !out.Changed || out.After == nil {
			return err
		}
		if ev, ok := StatusEvent(out.Before, *out.After); ok {
			return st.Emit(ctx, ev)
		}
		return nil
	})
	return out, err
}
