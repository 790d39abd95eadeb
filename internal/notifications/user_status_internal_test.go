package notifications

import "testing"

// A send's status counts a queued email as done; a send that reached
// nobody says what each channel asked lacked.
func TestUserStatus(t *testing.T) {
	pushSent := DeviceOutcome{DeviceID: "d1", Platform: "android", Channel: ChannelPush, Status: OutcomeSent}
	pushFailed := DeviceOutcome{DeviceID: "d2", Platform: "android", Channel: ChannelPush, Status: OutcomeFailed}
	queued := DeviceOutcome{Platform: ChannelEmail, Channel: ChannelEmail, Status: OutcomeQueued}
	for _, tc := range []struct {
		what     string
		outcomes []DeviceOutcome
		skipped  SkipCounts
		missing  missing
		status   string
		message  string
	}{
		{"email alone", []DeviceOutcome{queued}, SkipCounts{}, missing{}, UserSent, "Notification sent to 1 of 1 recipients. The email is queued: it goes out in the background."},
		{"push and email", []DeviceOutcome{pushSent, queued}, SkipCounts{}, missing{}, UserSent, "Notification sent to 2 of 2 recipients. The email is queued: it goes out in the background."},
		{"a push failed", []DeviceOutcome{pushFailed, queued}, SkipCounts{}, missing{}, UserPartial, "Notification sent to 1 of 2 recipients. The email is queued: it goes out in the background."},
		{"push alone", []DeviceOutcome{pushSent, pushFailed}, SkipCounts{}, missing{}, UserPartial, "Notification sent to 1 of 2 devices."},
		{"all failed", []DeviceOutcome{pushFailed}, SkipCounts{}, missing{}, UserFailed, "Notification sent to none of 1 devices."},
		{"opted out", nil, SkipCounts{OptedOut: 1}, missing{push: true}, UserNoRecipients, "The user turned product notifications off on the channels asked; nothing was sent."},
		{"capped", nil, SkipCounts{Capped: 2}, missing{push: true}, UserNoRecipients, "The user already had the day's cap of product notifications; nothing was sent."},
		{"capped and opted out", nil, SkipCounts{Capped: 1, OptedOut: 1}, missing{push: true}, UserNoRecipients, "The user already had the day's cap of product notifications; nothing was sent."},
		{"capped, kept in the inbox", []DeviceOutcome{{Platform: ChannelInbox, Channel: ChannelInbox, Status: OutcomeSent}}, SkipCounts{Capped: 1}, missing{push: true}, UserSent,
			"Kept in the user's inbox; the other channels were skipped: the user already had the day's cap of product notifications."},
		{"no address", nil, SkipCounts{}, missing{email: true}, UserNoRecipients, "The user has no verified email address; nothing was sent."},
		{"no device", nil, SkipCounts{}, missing{push: true}, UserNoRecipients, "The user has no device with a valid push token; nothing was sent."},
		{"nothing on three", nil, SkipCounts{}, missing{push: true, telegram: true, email: true}, UserNoRecipients,
			"The user has no device with a valid push token, no linked Telegram chat and no verified email address; nothing was sent."},
	} {
		status, message := userStatus(tc.outcomes, tc.skipped, "product", tc.missing)
		if status != tc.status || message != tc.message {
			t.Errorf("%s: %s %q, want %s %q", tc.what, status, message, tc.status, tc.message)
		}
	}
}
