package preferences_test

import (
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/apperr"
	"github.com/herald-vpn/herald/internal/preferences"
)

func TestHoldUntil(t *testing.T) {
	at := func(zone, s string) time.Time {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	quiet := func(start, end string) *preferences.QuietHours {
		q, err := preferences.NewQuietHours(start, end)
		if err != nil {
			t.Fatal(err)
		}
		return &q
	}
	for _, tc := range []struct {
		name  string
		zone  string
		q     *preferences.QuietHours
		now   string // in zone
		until string // in zone; "" when not held
	}{
		{"no quiet hours", "Europe/Berlin", nil, "2026-06-01 23:00", ""},
		{"before the window", "Europe/Berlin", quiet("22:00", "07:00"), "2026-06-01 21:59", ""},
		{"at its start", "Europe/Berlin", quiet("22:00", "07:00"), "2026-06-01 22:00", "2026-06-02 07:00"},
		{"after midnight", "Europe/Berlin", quiet("22:00", "07:00"), "2026-06-02 03:10", "2026-06-02 07:00"},
		{"at its end", "Europe/Berlin", quiet("22:00", "07:00"), "2026-06-02 07:00", ""},
		{"a window inside one day", "America/New_York", quiet("12:00", "13:30"), "2026-06-01 12:45", "2026-06-01 13:30"},
		{"UTC for no zone", "", quiet("00:00", "06:00"), "2026-06-01 05:59", "2026-06-01 06:00"},
		// Europe/Berlin springs forward on 2026-03-29 at 02:00 (to 03:00) and
		// falls back on 2026-10-25 at 03:00 (to 02:00).
		{"a night with an hour less", "Europe/Berlin", quiet("22:00", "07:00"), "2026-03-28 23:00", "2026-03-29 07:00"},
		{"a night with an hour more", "Europe/Berlin", quiet("22:00", "07:00"), "2026-10-24 23:00", "2026-10-25 07:00"},
		{"an end the clocks skip", "Europe/Berlin", quiet("01:00", "02:30"), "2026-03-29 01:30", "2026-03-29 03:00"},
		{"the repeated hour", "Europe/Berlin", quiet("01:00", "02:30"), "2026-10-25 01:30", "2026-10-25 02:30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zone := tc.zone
			if zone == "" {
				zone = "UTC"
			}
			s := preferences.Schedule{TimeZone: tc.zone, Quiet: tc.q}
			now := at(zone, tc.now)
			until, held := s.HoldUntil(now)
			if tc.until == "" {
				if held {
					t.Fatalf("held until %v, want not held", until.In(now.Location()))
				}
				return
			}
			want := at(zone, tc.until)
			if !held || !until.Equal(want) {
				t.Fatalf("HoldUntil(%v) = %v %v, want until %v", now, until.In(now.Location()), held, want)
			}
			if until.Location() != time.UTC {
				t.Errorf("until is in %v, want UTC", until.Location())
			}
		})
	}
}

func TestQuietHoursInput(t *testing.T) {
	for _, tc := range []struct{ start, end, field string }{
		{"22:00", "07:00", ""},
		{"00:00", "23:59", ""},
		{"22:00", "22:00", "quietHours.end"},
		{"24:00", "07:00", "quietHours.start"},
		{"7:00", "08:00", "quietHours.start"},
		{"22:00", "07:60", "quietHours.end"},
		{"22-00", "07:00", "quietHours.start"},
		{"", "07:00", "quietHours.start"},
	} {
		_, err := preferences.NewQuietHours(tc.start, tc.end)
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s–%s refused: %v", tc.start, tc.end, err)
			}
			continue
		}
		if ae := apperr.As(err); ae.Code != apperr.ValidationError || ae.Details["field"] != tc.field {
			t.Errorf("%s–%s: %v, want VALIDATION_ERROR on %s", tc.start, tc.end, err, tc.field)
		}
	}
	for zone, ok := range map[string]bool{"": true, "Europe/Berlin": true, "America/Argentina/Buenos_Aires": true, "UTC": true, "Mars/Olympus": false, "Local": false, "../../etc/passwd": false} {
		if err := preferences.CheckTimeZone(zone); (err == nil) != ok {
			t.Errorf("CheckTimeZone(%q) = %v, want ok %v", zone, err, ok)
		}
	}
}

// FuzzParseClock: any text is a clock or a VALIDATION_ERROR, and a clock
// writes back as itself.
func FuzzParseClock(f *testing.F) {
	for _, s := range []string{"22:00", "07:05", "24:00", "7:00", "", "ab:cd", "-1:00", "+1:00", "0x:10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := preferences.ParseClock("start", s)
		if err != nil {
			if apperr.As(err).Code != apperr.ValidationError {
				t.Fatalf("%q: %v", s, err)
			}
			return
		}
		if m < 0 || m >= 24*60 || preferences.Clock(m) != s {
			t.Fatalf("%q read as %d, written back as %q", s, m, preferences.Clock(m))
		}
	})
}
