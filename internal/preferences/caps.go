package preferences

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/herald-vpn/herald/internal/storage"
)

// MaxCap bounds a category's cap.
const MaxCap = 1000

// ParseCap reads a cap as configured after a category's name and its
// colon: "N/day", N from 1 to MaxCap. The window is a day (CapWindow);
// the unit is written so that the configuration says what it means.
func ParseCap(spec string) (int, error) {
	n, unit, ok := strings.Cut(spec, "/")
	if !ok || unit != "day" {
		return 0, fmt.Errorf("a cap is N/day, not %q", spec)
	}
	limit, err := strconv.Atoi(n)
	if err != nil || limit < 1 || limit > MaxCap || strings.TrimSpace(n) != n || strings.HasPrefix(n, "+") {
		return 0, fmt.Errorf("a cap is 1 to %d a day, not %q", MaxCap, n)
	}
	return limit, nil
}

// CapOf is the cap a send of category is under: the category's cap, or
// 0 (no cap) for a category without one, a critical category, an
// urgent send, or a category the catalogue does not have.
func (c Catalogue) CapOf(category string, urgent bool) int {
	k, ok := c.Find(category)
	if !ok || k.Critical || urgent {
		return 0
	}
	return k.Cap
}

// CapWindow is the window a send at now is counted in: the calendar day
// on the user's wall clock (their time zone, UTC when none), as
// "2006-01-02". A cap of N a day is N between the user's midnights, the
// day the user sees, whatever the hour the sends came.
func (s Schedule) CapWindow(now time.Time) string {
	return now.In(s.location()).Format(time.DateOnly)
}

// CapUse is one send counted against a user's cap: at most Limit sends
// of Category in Window for Account. SendID names the send, so that
// counting it again (a retried job, a repeated request) answers the first
// decision and counts nothing.
type CapUse struct {
	AccountID string
	Category  string
	Window    string
	SendID    string
	Limit     int
}

// Capped reports whether a send finding count sends of its category
// already counted in its window is over a cap of limit (0 is no cap).
func Capped(count, limit int) bool { return limit > 0 && count >= limit }

// CapStore keeps the caps' counts and decisions.
type CapStore interface {
	storage.Transactor
	// LockCapCount is how many sends the account's cap of category let
	// through in window, locked until the unit of work ends (InTx), so
	// that a concurrent send of the same account and category waits.
	LockCapCount(ctx context.Context, accountID, category, window string) (int, error)
	// CapDecision is the decision recorded for use's send; found false
	// when it was never counted.
	CapDecision(ctx context.Context, use CapUse) (allowed, found bool, err error)
	// RecordCapUse records use's decision and counts an allowed send, in
	// the unit of work of LockCapCount.
	RecordCapUse(ctx context.Context, use CapUse, allowed bool) error
}

// UseCap counts the send use names against its cap in one unit of work
// that locks the count of the user's category and window: allowed when
// the cap had room (the send is then counted), or the decision recorded
// for the same send before (counting it again counts nothing). Two
// replicas counting at once wait for each other on the lock, so no more
// than use.Limit sends pass.
func UseCap(ctx context.Context, store CapStore, use CapUse) (bool, error) {
	var allowed bool
	err := store.InTx(ctx, func(ctx context.Context) error {
		count, err := store.LockCapCount(ctx, use.AccountID, use.Category, use.Window)
		if err != nil {
			return err
		}
		prior, found, err := store.CapDecision(ctx, use)
		if err != nil || found {
			allowed = prior
			return err
		}
		allowed = !Capped(count, use.Limit)
		return store.RecordCapUse(ctx, use, allowed)
	})
	return allowed, err
}
