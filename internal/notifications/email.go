package notifications

import "github.com/riverqueue/river"

// EmailArgs is the durable job of a send's email channel: the
// notification's subject and content, to the account's verified address,
// in the account's locale (mail.EmailNotification). The worker
// (internal/notifyemail) reads the account and its preferences when it
// runs: the address then, and the preference then, win.
type EmailArgs struct {
	AccountID string `json:"account_id"`
	Subject   string `json:"subject"`
	Content   string `json:"content"`
	Category  string `json:"category"`
	// BroadcastID is the broadcast job that queued it ("" for a send to
	// one user).
	BroadcastID string `json:"broadcast_id,omitempty"`
}

// Kind implements river.JobArgs.
func (EmailArgs) Kind() string { return "notification_email" }

// QueueEmail is the River queue of the email channel's jobs: a queue of
// its own, so that many notification emails never hold up the code
// emails (accounts.QueueEmail) a signup waits for.
const QueueEmail = "notification_email"

// InsertOpts puts the job on QueueEmail.
func (EmailArgs) InsertOpts() river.InsertOpts { return river.InsertOpts{Queue: QueueEmail} }
