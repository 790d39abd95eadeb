// Package ownernoticetest fakes the services package ownernotice sends
// through, for the tests of its workers: each send records what it was
// given and answers the next scripted error (none once the script is
// spent); the idempotency store keeps its keys in memory.
package ownernoticetest

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/herald-vpn/herald/internal/accounts"
	"github.com/herald-vpn/herald/internal/idempotency"
	"github.com/herald-vpn/herald/internal/mail"
	"github.com/herald-vpn/herald/internal/notifications"
	"github.com/herald-vpn/herald/internal/storage"
)

// Accounts reads accounts from a map (storage.ErrNotFound for others).
type Accounts map[string]accounts.Account

func (f Accounts) AccountByID(_ context.Context, id string) (accounts.Account, error) {
	a, ok := f[id]
	if !ok {
		return accounts.Account{}, storage.ErrNotFound
	}
	return a, nil
}

// Script pops the next scripted error.
type Script struct {
	mu   sync.Mutex
	Errs []error
}

func (s *Script) next() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Errs) == 0 {
		return nil
	}
	err := s.Errs[0]
	s.Errs = s.Errs[1:]
	return err
}

// Push answers with Status (sent when "") and Outcomes; Sent holds what
// reached a device.
type Push struct {
	Script
	Status   string
	Outcomes []notifications.DeviceOutcome
	Sent     []notifications.Notification
}

func (f *Push) SendToUser(_ context.Context, userID string, n notifications.Notification, opts notifications.UserSendOptions) (notifications.UserSendResult, error) {
	if !slices.Equal(opts.Channels, []string{notifications.ChannelPush}) {
		return notifications.UserSendResult{}, errors.New("push only, please")
	}
	if err := f.next(); err != nil {
		return notifications.UserSendResult{}, err
	}
	status := f.Status
	if status == "" {
		status = notifications.UserSent
	}
	if status == notifications.UserSent || status == notifications.UserPartial {
		f.Sent = append(f.Sent, n)
	}
	return notifications.UserSendResult{UserID: userID, Status: status, Outcomes: f.Outcomes}, nil
}

// Mail records the emails sent.
type Mail struct {
	Script
	Sent []mail.Message
}

func (f *Mail) Send(_ context.Context, m mail.Message) error {
	if err := f.next(); err != nil {
		return err
	}
	f.Sent = append(f.Sent, m)
	return nil
}

// Chats records the texts sent to the linked chat; Unlinked: none is.
type Chats struct {
	Script
	Unlinked bool
	Sent     []string
}

func (f *Chats) SendToLinkedChat(_ context.Context, _ string, text string) (string, bool, error) {
	if f.Unlinked {
		return "", false, nil
	}
	if err := f.next(); err != nil {
		return "42", true, err
	}
	f.Sent = append(f.Sent, text)
	return "42", true, nil
}

// Idempotency is an idempotency service over a store in memory.
func Idempotency() *idempotency.Service {
	return idempotency.New(&memKeys{rows: map[[2]string]*memRow{}}, slog.New(slog.DiscardHandler))
}

// memKeys is an idempotency.Store in memory.
type memKeys struct {
	mu   sync.Mutex
	rows map[[2]string]*memRow
}

type memRow struct {
	idempotency.Record
	token string
}

func (m *memKeys) ClaimIdempotencyKey(_ context.Context, c idempotency.Claim) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := [2]string{c.Caller, c.Key}
	if _, ok := m.rows[k]; ok {
		return false, nil
	}
	m.rows[k] = &memRow{Record: idempotency.Record{Operation: c.Operation, RequestHash: c.RequestHash, Status: idempotency.StatusPending, ClaimedUntil: c.ClaimedUntil}, token: c.Token}
	return true, nil
}

func (m *memKeys) IdempotencyRecord(_ context.Context, caller, key string) (idempotency.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[[2]string{caller, key}]
	if !ok {
		return idempotency.Record{}, storage.ErrNotFound
	}
	return r.Record, nil
}

func (m *memKeys) CompleteIdempotencyKey(_ context.Context, caller, key, token string, response []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[[2]string{caller, key}]; ok && r.token == token {
		r.Status, r.Response = idempotency.StatusDone, response
	}
	return nil
}

func (m *memKeys) ReleaseIdempotencyKey(_ context.Context, caller, key, token string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r, ok := m.rows[[2]string{caller, key}]; ok && r.token == token {
		delete(m.rows, [2]string{caller, key})
	}
	return nil
}
