package graph

import (
	"context"
	"errors"
	"sync"

	"github.com/herald-vpn/herald/internal/messenger"
	"github.com/herald-vpn/herald/internal/sessions"
)

// The fields resolved per record of a list, UserRecord's sessions and
// messengerChat (the only ones: every other field of a listed type is read
// with its page), are read for a whole page at once. Each operation carries
// the pages of accounts its answer lists; the first account of a page to
// ask for a field loads it for every account of the page, in one store
// call, and the others read what it loaded. So a page costs one query per
// field asked for, whatever its size. An account listed by no page (user,
// or a mutation's answer) is a page of one.

type pagesKey struct{}

// recordPages are the pages of accounts one operation lists, by account
// id.
type recordPages struct {
	mu   sync.Mutex
	byID map[string]*recordPage
}

// withRecordPages gives an operation its (empty) pages.
func withRecordPages(ctx context.Context) context.Context {
	return context.WithValue(ctx, pagesKey{}, &recordPages{byID: map[string]*recordPage{}})
}

// listPage records ids as one page of the operation's answer.
func listPage(ctx context.Context, ids []string) {
	ps, _ := ctx.Value(pagesKey{}).(*recordPages)
	if ps == nil {
		return
	}
	p := &recordPage{ids: ids}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	for _, id := range ids {
		ps.byID[id] = p
	}
}

// pageOf is the page the account id was listed in, or a page of its own.
func pageOf(ctx context.Context, id string) *recordPage {
	ps, _ := ctx.Value(pagesKey{}).(*recordPages)
	if ps == nil {
		return &recordPage{ids: []string{id}}
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p := ps.byID[id]
	if p == nil {
		p = &recordPage{ids: []string{id}}
		ps.byID[id] = p
	}
	return p
}

// recordPage is one page of accounts and what has been loaded for it.
type recordPage struct {
	ids      []string
	sessions loadOnce[map[string][]sessions.Session]
	chats    loadOnce[map[string]messenger.Subscriber]
}

// sessionsOf is the live sessions of the account id of the page, loaded
// for the whole page the first time.
func (p *recordPage) sessionsOf(ctx context.Context, s *sessions.Service, id string) ([]sessions.Session, error) {
	all, err := p.sessions.get(func() (map[string][]sessions.Session, error) { return s.ListOf(ctx, p.ids) })
	return all[id], err
}

// chatOf is the chat linked to the account id of the page (found false
// when none), loaded for the whole page the first time.
func (p *recordPage) chatOf(ctx context.Context, m *messenger.Service, id string) (messenger.Subscriber, bool, error) {
	all, err := p.chats.get(func() (map[string]messenger.Subscriber, error) { return m.ChatsOf(ctx, p.ids) })
	sub, found := all[id]
	return sub, found, err
}

// loadOnce is a value loaded by its first caller, for every caller.
type loadOnce[T any] struct {
	once sync.Once
	v    T
	err  error
}

var errLoadUnfinished = errors.New("graph: a page's batch load did not finish")

func (l *loadOnce[T]) get(load func() (T, error)) (T, error) {
	l.once.Do(func() {
		l.err = errLoadUnfinished // stays if load panics
		l.v, l.err = load()
	})
	return l.v, l.err
}
