package view_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/view"
)

// A job's progress event is read back as the job the doors show, and the
// events of replicas of the previous version (which left empty fields out
// and kept times to the nanosecond) read as the same state: a rolling
// upgrade loses no progress.
func TestNotificationJobWire(t *testing.T) {
	wire := view.NotificationJobWire()
	started := time.Date(2026, 11, 29, 10, 0, 1, 500, time.UTC)
	job := notifications.Job{ID: "j1", Status: notifications.StatusRunning, Subject: "Hi", Content: "not carried", TotalRecipients: 5, Sent: 2,
		Failed: 1, InvalidTokens: 1, CreatedAt: time.Date(2026, 11, 29, 10, 0, 0, 999, time.UTC), StartedAt: &started,
		Channels: []string{"push", "email"}, Email: notifications.EmailCounts{Queued: 3, OptedOut: 1, Capped: 2, NoEmailAddress: 4}}
	data, err := wire.Encode(job)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != job.Version() || got.Finished() {
		t.Fatalf("decoded version %d (finished %v), want %d", got.Version(), got.Finished(), job.Version())
	}
	if a, b := mustJSON(t, view.NewNotificationJob(got)), mustJSON(t, view.NewNotificationJob(job)); a != b {
		t.Fatalf("the decoded job shows\n%s\nthe job shows\n%s", a, b)
	}
	// A page of emails is a new state: live progress announces it.
	more := job
	more.Email.NoEmailAddress++
	if more.Version() <= job.Version() {
		t.Fatalf("an account more in the email part: version %d, not above %d", more.Version(), job.Version())
	}

	previous := `{"id":"j1","status":"completed","subject":"Hi","totalRecipients":5,"sent":4,"failed":1,"invalidTokens":0,` +
		`"createdAt":"2026-11-29T10:00:00.000000999Z","startedAt":"2026-11-29T10:00:01.0000005Z","finishedAt":"2026-11-29T10:00:09Z"}`
	old, err := wire.Decode([]byte(previous))
	if err != nil {
		t.Fatalf("an event of the previous version: %v", err)
	}
	if !old.Finished() || old.Sent != 4 || old.Error != "" || old.StartedAt == nil || old.SendAt != nil {
		t.Fatalf("an event of the previous version read as %+v", old)
	}
	// What the previous version decoded its events into.
	var before struct {
		ID                                           string
		Status, Subject                              string
		TotalRecipients, Sent, Failed, InvalidTokens int
		CreatedAt                                    time.Time
		StartedAt, FinishedAt                        *time.Time
		Error                                        string
	}
	if err := json.Unmarshal(data, &before); err != nil || before.ID != "j1" || before.Sent != 2 || before.StartedAt == nil || before.Error != "" {
		t.Fatalf("the previous version reads this version's event as %+v (%v)", before, err)
	}
}

// The same for a messenger broadcast.
func TestMessengerBroadcastWire(t *testing.T) {
	wire := view.MessengerBroadcastWire()
	b := messenger.Broadcast{ID: "b1", Status: "failed", Message: "not carried", TotalRecipients: 3, Sent: 1, Blocked: 1, Failed: 1,
		CreatedAt: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), Error: "bot token revoked"}
	data, err := wire.Encode(b)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version() != b.Version() || !got.Finished() || got.Error != b.Error {
		t.Fatalf("decoded %+v, want the state of %+v", got, b)
	}
	previous := `{"id":"b1","status":"running","totalRecipients":3,"sent":1,"failed":0,"blocked":2,"createdAt":"2026-11-29T10:00:00.5Z"}`
	old, err := wire.Decode([]byte(previous))
	if err != nil || old.Finished() || old.Sent != 1 || old.Blocked != 2 || old.Error != "" || old.StartedAt != nil {
		t.Fatalf("an event of the previous version read as %+v (%v)", old, err)
	}
	if _, err := wire.Decode([]byte(`{"id":`)); err == nil {
		t.Fatal("a garbled event decoded")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
