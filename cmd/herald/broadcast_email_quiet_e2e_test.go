package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/sqlstore/sqlstoretest"
)

// broadcastEmailScheduledAt answers when the notification_email job that
// broadcast jobID queued for account is scheduled, read from the
// server's database.
func broadcastEmailScheduledAt(t *testing.T, h *herald, d sqlstoretest.Dialect, jobID, account string) time.Time {
	t.Helper()
	db := h.store(t)
	var at time.Time
	var err error
	if d == "postgres" {
		err = db.Pool().QueryRow(context.Background(), `SELECT scheduled_at FROM river_job WHERE kind = 'notification_email' AND args->>'broadcast_id' = $1 AND args->>'account_id' = $2`, jobID, account).Scan(&at)
	} else {
		err = db.SQL().QueryRowContext(context.Background(), `SELECT scheduled_at FROM river_job WHERE kind = 'notification_email' AND json_extract(args, '$.broadcast_id') = ? AND json_extract(args, '$.account_id') = ?`, jobID, account).Scan(&at)
	}
	if err != nil {
		t.Fatalf("the email job of broadcast %s for %s: %v", jobID, account, err)
	}
	return at.UTC()
}

// broadcastEmailState answers the River state of the notification_email
// job broadcast jobID queued for account.
func broadcastEmailState(t *testing.T, h *herald, d sqlstoretest.Dialect, jobID, account string) string {
	t.Helper()
	db := h.store(t)
	var state string
	var err error
	if d == "postgres" {
		err = db.Pool().QueryRow(context.Background(), `SELECT state::text FROM river_job WHERE kind = 'notification_email' AND args->>'broadcast_id' = $1 AND args->>'account_id' = $2`, jobID, account).Scan(&state)
	} else {
		err = db.SQL().QueryRowContext(context.Background(), `SELECT state FROM river_job WHERE kind = 'notification_email' AND json_extract(args, '$.broadcast_id') = ? AND json_extract(args, '$.account_id') = ?`, jobID, account).Scan(&state)
	}
	if err != nil {
		t.Fatalf("the email job of broadcast %s for %s: %v", jobID, account, err)
	}
	return state
}

// A broadcast's email obeys quiet hours, through the real server on both
// databases: a product broadcast on push and email to a user inside their
// quiet hours holds the phone and queues the email scheduled at the end
// of the window (River's row; the fake SMTP server gets nothing). The
// broadcast is cancelled and the window's end brought forward (the email
// job's scheduled_at moved to now): the job runs, finds the broadcast
// cancelled and sends nothing. An urgent one emails at once.
func TestBroadcastEmailQuietHoursE2E(t *testing.T) {
	forEachDialect(t, func(t *testing.T, d sqlstoretest.Dialect) {
		f := newSendsFixture(t, d, nil)
		h := f.h
		now := time.Now().UTC()
		start, end := now.Add(-time.Hour).Format("15:04"), now.Add(2*time.Hour).Format("15:04")
		windowEnd := now.Add(2 * time.Hour).Truncate(time.Minute)
		expectOK(t, "set quiet hours", scheduleOp(t, h, restDoor.name, map[string]any{"timeZone": "UTC", "quietHours": map[string]any{"enabled": true, "start": start, "end": end}}, f.access), http.StatusOK)
		const reader = "reader@example.com"
		before := h.SMTP.Count(reader)

		broadcast := func(urgent bool) string {
			t.Helper()
			b := restCall(t, h, http.MethodPost, "/api/v1/notifications/broadcasts", map[string]any{"notification": notify("Tip", "A tip", nil), "category": "product",
				"channels": []string{"push", "email"}, "urgent": urgent}, withAPIKey(f.key))
			expectOK(t, "a product broadcast on push and email", b, http.StatusAccepted)
			return jsonPath(b.data, "jobId").(string)
		}
		id := broadcast(false)
		var j map[string]any
		eventually(t, func() bool {
			r := restCall(t, h, http.MethodGet, "/api/v1/notifications/broadcasts/"+id, nil, withAPIKey(f.key))
			expectOK(t, "read the job", r, http.StatusOK)
			j = r.data.(map[string]any)
			return asInt(t, jsonPath(j, "email", "queued")) == 1
		}, "the broadcast never queued the reader's email")
		if at := broadcastEmailScheduledAt(t, h, d, id, f.userID); !at.Equal(windowEnd) {
			t.Fatalf("the reader's email scheduled at %v, want the end of their quiet hours %v (job %v)", at, windowEnd, j)
		}
		if asInt(t, j["held"]) != 1 || h.SMTP.Count(reader) != before {
			t.Fatalf("job %v, %d emails; want the phone held and no email", j, h.SMTP.Count(reader)-before)
		}

		c := restCall(t, h, http.MethodDelete, "/api/v1/notifications/broadcasts/"+id, nil, withAPIKey(f.key))
		expectOK(t, "cancel the held broadcast", c, http.StatusOK)
		execSQL(t, h, d, `UPDATE river_job SET scheduled_at = created_at WHERE kind = 'notification_email'`)
		eventually(t, func() bool { return broadcastEmailState(t, h, d, id, f.userID) == "completed" }, "the held email's job never ran once due")
		if n := h.SMTP.Count(reader); n != before {
			t.Fatalf("%d emails to the reader after the cancelled broadcast's email job ran, want none", n-before)
		}

		uid := broadcast(true)
		completedJob(t, h, uid, withAPIKey(f.key))
		if at := broadcastEmailScheduledAt(t, h, d, uid, f.userID); !at.Before(windowEnd.Add(-time.Hour)) {
			t.Fatalf("the urgent broadcast's email scheduled at %v, want at once", at)
		}
		h.SMTP.WaitForMessages(t, reader, before+1, mailWait)
		if n := h.SMTP.Count(reader); n != before+1 {
			t.Fatalf("%d emails to the reader, want only the urgent broadcast's", n-before)
		}
	})
}
