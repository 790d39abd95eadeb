// Package fakeledger is the per-device-token bookkeeping shared by the push
// provider fakes (fcmtest, apnstest): scripted faults, accepted messages,
// attempt and delivery counters, an outage switch and a TCP connection
// counter.
//
// A fake embeds *Ledger (through an unexported alias, so that the field
// stays unexported) to gain Fail, SetDown, Messages, MessagesFor,
// Delivered, Attempts, TotalDelivered and Connections; its handlers use the
// package functions Send, DistinctTokens and CountConnections, which are
// not methods so that they do not become part of the fake's API. All of it
// is safe for concurrent use.
package fakeledger

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
)

// Ledger records what a fake provider was asked to deliver. M is the
// fake's message type, F its fault type.
type Ledger[M, F any] struct {
	tokenOf   func(M) string
	downFault func() F

	conns atomic.Int64 // accepted TCP connections

	mu        sync.Mutex
	scripts   map[string]*script[F]
	messages  []M
	delivered map[string]int
	attempts  map[string]int
	down      bool
}

type script[F any] struct {
	remaining int // < 0: forever
	fault     F
}

// New returns an empty ledger. tokenOf tells the device token a message
// was sent to; downFault is the answer to every send while SetDown is on.
func New[M, F any](tokenOf func(M) string, downFault func() F) *Ledger[M, F] {
	return &Ledger[M, F]{
		tokenOf:   tokenOf,
		downFault: downFault,
		scripts:   map[string]*script[F]{},
		delivered: map[string]int{},
		attempts:  map[string]int{},
	}
}

// Fail makes the next times sends to token fail with f (times < 0: every
// send; 0 clears the script). Afterwards sends to token succeed again.
func (l *Ledger[M, F]) Fail(token string, times int, f F) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if times == 0 {
		delete(l.scripts, token)
		return
	}
	l.scripts[token] = &script[F]{remaining: times, fault: f}
}

// SetDown makes every send fail with the fake's outage answer while on.
func (l *Ledger[M, F]) SetDown(down bool) {
	l.mu.Lock()
	l.down = down
	l.mu.Unlock()
}

// Messages returns a copy of every accepted message, in arrival order.
func (l *Ledger[M, F]) Messages() []M {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]M(nil), l.messages...)
}

// MessagesFor returns the accepted messages for one device token.
func (l *Ledger[M, F]) MessagesFor(token string) []M {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []M
	for _, m := range l.messages {
		if l.tokenOf(m) == token {
			out = append(out, m)
		}
	}
	return out
}

// Delivered counts accepted messages for token.
func (l *Ledger[M, F]) Delivered(token string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.delivered[token]
}

// Attempts counts authenticated send requests for token, failed or not.
func (l *Ledger[M, F]) Attempts(token string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.attempts[token]
}

// TotalDelivered counts all accepted messages.
func (l *Ledger[M, F]) TotalDelivered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.messages)
}

// Connections counts TCP connections accepted so far; HTTP/2 clients
// should need very few even for large concurrent bursts.
func (l *Ledger[M, F]) Connections() int { return int(l.conns.Load()) }

// Send counts an authenticated send to token and decides its answer, in one
// step: while the ledger is down, the outage fault; else the token's
// scripted fault, if any (using up one of its times); else the message
// build returns is recorded as accepted. It returns the fault to answer
// with (nil when accepted) and the accepted message's 1-based position in
// arrival order (0 for a fault).
func Send[M, F any](l *Ledger[M, F], token string, build func() M) (fault *F, seq int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.attempts[token]++
	if l.down {
		f := l.downFault()
		return &f, 0
	}
	if sc := l.scripts[token]; sc != nil {
		f := sc.fault
		if sc.remaining > 0 {
			sc.remaining--
			if sc.remaining == 0 {
				delete(l.scripts, token)
			}
		}
		return &f, 0
	}
	l.messages = append(l.messages, build())
	l.delivered[token]++
	return nil, len(l.messages)
}

// DistinctTokens counts device tokens with at least one accepted message.
func DistinctTokens[M, F any](l *Ledger[M, F]) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.delivered)
}

// CountConnections makes the unstarted srv count its accepted TCP
// connections in l (see Connections).
func CountConnections[M, F any](l *Ledger[M, F], srv *httptest.Server) {
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			l.conns.Add(1)
		}
	}
}

// DecodeSegment decodes one base64url (unpadded) JSON segment of a JWT.
func DecodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
