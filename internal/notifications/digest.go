package notifications

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
	"github.com/herald-vpn/herald/internal/texts"
	"github.com/riverqueue/river"
)

// DigestKeep is how many of a digest's latest sends it keeps whole: the
// digest names the newest few (texts.DigestNamed) and counts the rest, and
// a digest of one send is that send.
const DigestKeep = 20

// DigestEntry is one send folded into a digest.
type DigestEntry struct {
	Subject  string          `json:"subject"`
	Content  string          `json:"content"`
	Data     json.RawMessage `json:"data,omitempty"` // kept as JSON: large numbers stay exact
	Options  PushOptions     `json:"options"`
	Channels []string        `json:"channels,omitempty"`
}

// Digest is a user's sends of one category within a window, sent as one
// notification when the window ends (DueAt).
type Digest struct {
	ID        string
	AccountID string
	Category  string
	OpenedAt  time.Time
	DueAt     time.Time
	// Count is every send folded in; Entries the latest DigestKeep of
	// them, oldest first.
	Count   int
	Entries []DigestEntry
}

// Add is the digest with e folded in.
func (d Digest) Add(e DigestEntry) Digest {
	d.Count++
	d.Entries = append(slices.Clone(d.Entries), e)
	if n := len(d.Entries); n > DigestKeep {
		d.Entries = d.Entries[n-DigestKeep:]
	}
	return d
}

// Folded is the one notification the digest sends, in locale, and the
// channels it goes to (every channel one of its sends asked for). A
// digest of one send is that send. Of more, the title says how many and
// the body names the latest subjects; the data says it is a digest
// ("digest": count, "category"), and the options are the latest send's.
func (d Digest) Folded(locale string) (Notification, []string, error) {
	if len(d.Entries) == 0 {
		return Notification{}, nil, errors.New("an empty digest")
	}
	var channels []string
	for _, e := range d.Entries {
		if len(e.Channels) == 0 { // none named is push alone
			e.Channels = []string{ChannelPush}
		}
		for _, c := range e.Channels {
			if !slices.Contains(channels, c) {
				channels = append(channels, c)
			}
		}
	}
	latest := d.Entries[len(d.Entries)-1]
	if d.Count == 1 {
		data, err := DecodeData(latest.Data)
		if err != nil {
			return Notification{}, nil, err
		}
		return Notification{Subject: latest.Subject, Content: latest.Content, Data: data, Options: latest.Options}, channels, nil
	}
	subjects := make([]string, 0, len(d.Entries))
	for i := len(d.Entries) - 1; i >= 0; i-- {
		subjects = append(subjects, d.Entries[i].Subject)
	}
	title, body := texts.Digest(locale, d.Count, subjects)
	n := Notification{Subject: title, Content: body, Options: latest.Options,
		Data: map[string]any{"digest": json.Number(fmt.Sprint(d.Count)), "category": d.Category}}
	return n, channels, nil
}

// DigestArgs is the River job that sends a digest when its window ends.
type DigestArgs struct {
	DigestID string `json:"digest_id"`
}

// Kind implements river.JobArgs.
func (DigestArgs) Kind() string { return "notification_digest" }

// digest folds a send into the user's open digest of its category,
// opening one due a window from now when there is none, and answers the
// send digested. Its inbox item, asked for, is kept now: the inbox lists
// every send; the digest folds what interrupts.
func (s *Service) digest(ctx context.Context, userID string, n Notification, opts UserSendOptions, category string, window time.Duration) (UserSendResult, error) {
	data, err := n.encodeData()
	if err != nil {
		return UserSendResult{}, err
	}
	res := UserSendResult{UserID: userID, Status: UserDigested, Outcomes: []DeviceOutcome{}}
	if opts.Inbox {
		settings, err := s.store.NotificationSettings(ctx, userID)
		if err != nil {
			return UserSendResult{}, err
		}
		kept, err := s.keepInInbox(ctx, userID, n, category, settings, &res.Skipped)
		if err != nil {
			return UserSendResult{}, err
		}
		if kept != nil {
			res.Outcomes = append(res.Outcomes, *kept)
		}
	}
	e := DigestEntry{Subject: n.Subject, Content: n.Content, Data: data, Options: n.Options, Channels: opts.Channels}
	d, err := s.store.AddToDigest(ctx, userID, category, e, s.cfg.Now().Add(window), func(id string) river.JobArgs { return DigestArgs{DigestID: id} })
	if err != nil {
		return UserSendResult{}, err
	}
	due := d.DueAt.UTC()
	res.HeldUntil = &due
	res.Message = fmt.Sprintf("Folded into the user's %s digest (%d so far); it is sent at %s.", category, d.Count, due.Format(time.RFC3339))
	return res, nil
}

// DigestWorker sends digests when their window ends; register it with
// river.AddWorker.
type DigestWorker struct {
	river.WorkerDefaults[DigestArgs]
	Service *Service
}

// Work implements river.Worker: it closes the digest (a send arriving
// now opens the next), sends it as SendToUser sends (the preferences,
// devices and quiet hours of now; the inbox items were kept already), and
// deletes it. A crash between the send and the delete sends it again on
// River's retry, as any send to a user may be repeated after a crash; a
// digest gone was sent.
func (w *DigestWorker) Work(ctx context.Context, job *river.Job[DigestArgs]) error {
	s := w.Service
	d, err := s.store.StartDigest(ctx, job.Args.DigestID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	acct, err := s.store.AccountByID(ctx, d.AccountID)
	if errors.Is(err, storage.ErrNotFound) {
		return s.store.DeleteDigest(ctx, d.ID)
	} else if err != nil {
		return err
	}
	n, channels, err := d.Folded(acct.Locale)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "digest dropped", "digest_id", d.ID, "error", err)
		return s.store.DeleteDigest(ctx, d.ID)
	}
	// The send is named by the digest: a retried job counts once against
	// the user's cap, and a whole digest counts as one send.
	res, err := s.sendToUser(ctx, d.AccountID, n, UserSendOptions{Channels: channels, Category: d.Category, digest: true}, "digest:"+d.ID)
	if ae, ok := refusedSend(err); ok {
		// The user or the category is gone: nothing to retry.
		s.cfg.Logger.WarnContext(ctx, "digest dropped", "digest_id", d.ID, "user_id", d.AccountID, "code", ae.Code)
		return s.store.DeleteDigest(ctx, d.ID)
	}
	if err != nil {
		return err
	}
	s.cfg.Logger.InfoContext(ctx, "digest sent", "digest_id", d.ID, "user_id", d.AccountID, "category", d.Category, "sends", d.Count, "status", res.Status)
	return s.store.DeleteDigest(ctx, d.ID)
}
