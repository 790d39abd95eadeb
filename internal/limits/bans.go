package limits

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/cursor"
	"github.com/herald-vpn/herald/internal/storage"
)

// Operators' bans: what the API (banAddress, liftBan, bans) and the CLI
// (herald bans) allow.
const (
	// DefaultBanReason is the reason of a ban given none.
	DefaultBanReason = "banned by an operator"
	MaxBanReasonLen  = 500
	DefaultBansPage  = 50
	MaxBansPage      = 500
)

// BanPosition is where a page of bans starts: after this ban in the
// listing order (newest first, then by address, descending).
type BanPosition struct {
	CreatedAt time.Time
	IP        string
}

// BanAdminStore is what the operators' ban API needs of the store;
// sqlstore implements it. Errors are the storage package's.
type BanAdminStore interface {
	// AddBan stores a ban; banning a banned address keeps the first ban.
	AddBan(ctx context.Context, b Ban) error
	// BanByIP returns the ban of a subject; ErrNotFound when there is none.
	BanByIP(ctx context.Context, ip string) (Ban, error)
	// ListBansAfter returns up to limit bans, newest first, after the
	// position (nil: from the start).
	ListBansAfter(ctx context.Context, after *BanPosition, limit int) ([]Ban, error)
	// LiftBan removes a ban; ErrNotFound when there was none.
	LiftBan(ctx context.Context, ip string) error
}

// Bans is the operators' view of bans. A ban added or lifted here holds
// on every replica within its gate's refresh (a few seconds), as one the
// gate adds itself.
type Bans struct {
	store BanAdminStore
	now   func() time.Time
}

// NewBans returns the service; now defaults to time.Now.
func NewBans(store BanAdminStore, now func() time.Time) *Bans {
	if now == nil {
		now = time.Now
	}
	return &Bans{store: store, now: now}
}

// BanPage is one page of bans.
type BanPage = cursor.Page[Ban]

// banPosition is banCursor's payload: the last ban of a page.
type banPosition struct {
	CreatedAt time.Time `json:"t"`
	IP        string    `json:"ip"`
}

var banCursor = cursor.New[banPosition]("ban")

// List returns bans, newest first, first at a time (default 50, at most
// 500). VALIDATION_ERROR for a bad first or cursor.
func (b *Bans) List(ctx context.Context, first int, after string) (BanPage, error) {
	first, err := cursor.PageSize(first, DefaultBansPage, MaxBansPage)
	if err != nil {
		return BanPage{}, err
	}
	p, err := banCursor.After(after)
	if err != nil {
		return BanPage{}, apperr.Invalid("after", "a cursor from an earlier page", after)
	}
	var pos *BanPosition
	if after != "" {
		pos = &BanPosition{CreatedAt: p.CreatedAt, IP: p.IP}
	}
	list, err := b.store.ListBansAfter(ctx, pos, first+1)
	if err != nil {
		return BanPage{}, err
	}
	return cursor.Cut(banCursor, list, first, func(x Ban) banPosition { return banPosition{CreatedAt: x.CreatedAt.UTC(), IP: x.IP} })
}

// Add bans an address: an IPv4 address, or an IPv6 address whose /64 is
// banned (an IPv6 /64 may be given as such), as the gate counts clients.
// reason "" is DefaultBanReason. Banning a banned address answers its ban
// as it is (the first reason stays). VALIDATION_ERROR naming ip or reason.
func (b *Bans) Add(ctx context.Context, ip, reason string) (Ban, error) {
	subject, err := banSubject(ip)
	if err != nil {
		return Ban{}, err
	}
	reason = strings.TrimSpace(reason)
	if utf8.RuneCountInString(reason) > MaxBanReasonLen || !utf8.ValidString(reason) || strings.IndexFunc(reason, unicode.IsControl) >= 0 {
		return Ban{}, apperr.Invalid("reason", fmt.Sprintf("at most %d characters, no control characters", MaxBanReasonLen), "invalid")
	}
	if reason == "" {
		reason = DefaultBanReason
	}
	ban := Ban{IP: subject, Reason: reason, CreatedAt: b.now().UTC()}
	if err := b.store.AddBan(ctx, ban); err != nil {
		return Ban{}, err
	}
	stored, err := b.store.BanByIP(ctx, subject)
	if errors.Is(err, storage.ErrNotFound) {
		return ban, nil // lifted at once by someone else: this was the ban
	}
	return stored, err
}

// Lift lifts the ban of an address (an IPv6 address lifts its /64) and
// returns what was banned. BAN_NOT_FOUND when it is not banned;
// VALIDATION_ERROR naming ip.
func (b *Bans) Lift(ctx context.Context, ip string) (string, error) {
	subject, err := banSubject(ip)
	if err != nil {
		return "", err
	}
	if err := b.store.LiftBan(ctx, subject); errors.Is(err, storage.ErrNotFound) {
		return "", apperr.Newf(apperr.BanNotFound, "%s is not banned.", subject)
	} else if err != nil {
		return "", err
	}
	return subject, nil
}

// banSubject is BanSubject for the API: VALIDATION_ERROR naming ip.
func banSubject(ip string) (string, error) {
	ip = strings.TrimSpace(ip)
	s, err := BanSubject(ip)
	if err != nil {
		received := ip
		if len(received) > 64 || !utf8.ValidString(received) {
			received = "not an address"
		}
		return "", apperr.Invalid("ip", "an IPv4 address, an IPv6 address or an IPv6 /64", received)
	}
	return s, nil
}
