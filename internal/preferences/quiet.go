package preferences

import (
	"fmt"
	"time"
	// The zones travel with the binary: a container without
	// /usr/share/zoneinfo still knows Europe/Berlin.
	_ "time/tzdata"

	"github.com/herald-vpn/herald/internal/apperr"
)

// QuietHours are a daily window, in the user's time zone, inside which
// non-critical sends are held until it ends. Start and End are minutes
// after local midnight; Start > End wraps midnight (22:00–07:00).
type QuietHours struct {
	Start, End int
}

// Schedule is when a user may be reached: their time zone (IANA name, ""
// for UTC) and their quiet hours (nil for none).
type Schedule struct {
	TimeZone string
	Quiet    *QuietHours
}

// MaxTimeZoneLen bounds a time zone's name.
const MaxTimeZoneLen = 64

// CheckTimeZone validates an IANA time zone name ("" is UTC).
func CheckTimeZone(name string) error {
	if name == "" {
		return nil
	}
	if len(name) > MaxTimeZoneLen || name == "Local" {
		return apperr.Invalid("timeZone", "an IANA time zone such as Europe/Berlin", fmt.Sprintf("%.64q", name))
	}
	if _, err := time.LoadLocation(name); err != nil {
		return apperr.Invalid("timeZone", "an IANA time zone such as Europe/Berlin", fmt.Sprintf("%.64q", name))
	}
	return nil
}

// location is the schedule's zone; UTC for none (or one the zone
// database no longer has).
func (s Schedule) location() *time.Location {
	if s.TimeZone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(s.TimeZone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ParseClock reads "HH:MM" (00:00 to 23:59) as minutes after midnight.
func ParseClock(field, s string) (int, error) {
	digit := func(i int) int {
		if c := s[i]; c >= '0' && c <= '9' {
			return int(c - '0')
		}
		return 100 // out of every range below
	}
	if len(s) != 5 || s[2] != ':' {
		return 0, apperr.Invalid(field, "a time of day as HH:MM", fmt.Sprintf("%.16q", s))
	}
	h, m := digit(0)*10+digit(1), digit(3)*10+digit(4)
	if h > 23 || m > 59 {
		return 0, apperr.Invalid(field, "a time of day as HH:MM", fmt.Sprintf("%.16q", s))
	}
	return h*60 + m, nil
}

// Clock writes minutes after midnight as "HH:MM".
func Clock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

// NewQuietHours checks a window: both ends HH:MM, and not empty.
func NewQuietHours(start, end string) (QuietHours, error) {
	s, err := ParseClock("quietHours.start", start)
	if err != nil {
		return QuietHours{}, err
	}
	e, err := ParseClock("quietHours.end", end)
	if err != nil {
		return QuietHours{}, err
	}
	if s == e {
		return QuietHours{}, apperr.Invalid("quietHours.end", "a time other than the start", end)
	}
	return QuietHours{Start: s, End: e}, nil
}

// HoldUntil reports whether a non-critical send at now falls inside the
// quiet hours, and if so the instant they end: the next local End. Local
// times are read on the wall clock of the user's zone, so a window keeps
// its hours across a change of daylight saving time; an End that does not
// exist on that day (the hour clocks skip) is the first instant after it.
func (s Schedule) HoldUntil(now time.Time) (time.Time, bool) {
	if s.Quiet == nil {
		return time.Time{}, false
	}
	q := *s.Quiet
	local := now.In(s.location())
	minute := local.Hour()*60 + local.Minute()
	var inside bool
	if q.Start < q.End {
		inside = minute >= q.Start && minute < q.End
	} else {
		inside = minute >= q.Start || minute < q.End
	}
	if !inside {
		return time.Time{}, false
	}
	day := local
	if q.Start > q.End && minute >= q.Start {
		day = local.AddDate(0, 0, 1) // the window ends tomorrow
	}
	end := time.Date(day.Year(), day.Month(), day.Day(), q.End/60, q.End%60, 0, 0, s.location())
	if end.Hour()*60+end.Minute() != q.End {
		// No such wall time that day (the clocks skipped it): the first
		// instant after the skip, where the new offset begins.
		end, _ = end.ZoneBounds()
	}
	if !end.After(now) {
		// A wall-clock End repeated by a fall-back hour that is already
		// past; the window is over.
		return time.Time{}, false
	}
	return end.UTC(), true
}

// LocalInstant is the instant the schedule's zone reads date (a civil
// date, its year, month and day) at minutes after midnight: when a
// broadcast "at 09:00 in each recipient's time zone" is due for this
// user. A wall time the clocks skip that day (02:30 the night they jump
// from 02:00 to 03:00) is the instant they jump, as for quiet hours; a
// wall time they repeat is one of its two instants.
func (s Schedule) LocalInstant(date time.Time, minutes int) time.Time {
	loc := s.location()
	t := time.Date(date.Year(), date.Month(), date.Day(), minutes/60, minutes%60, 0, 0, loc)
	if t.Hour()*60+t.Minute() != minutes {
		t, _ = t.ZoneBounds()
	}
	return t.UTC()
}
