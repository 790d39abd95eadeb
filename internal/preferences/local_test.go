package preferences_test

import (
	"testing"
	"time"

	"github.com/herald-vpn/herald/internal/preferences"
)

// "At 09:00 in each recipient's time zone" in three zones, on the night
// Europe's clocks jump forward (New York's jumped two weeks before), and
// a wall time the jump skips.
func TestLocalInstant(t *testing.T) {
	day := time.Date(2027, 3, 28, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		zone    string
		minutes int
		want    time.Time
	}{
		{"Asia/Tokyo", 9 * 60, time.Date(2027, 3, 28, 0, 0, 0, 0, time.UTC)},
		{"Europe/Berlin", 9 * 60, time.Date(2027, 3, 28, 7, 0, 0, 0, time.UTC)},       // CEST, the day it begins
		{"America/New_York", 9 * 60, time.Date(2027, 3, 28, 13, 0, 0, 0, time.UTC)},   // EDT
		{"", 9 * 60, time.Date(2027, 3, 28, 9, 0, 0, 0, time.UTC)},                    // no zone: UTC
		{"Europe/Berlin", 2*60 + 30, time.Date(2027, 3, 28, 1, 0, 0, 0, time.UTC)},    // skipped: the jump
		{"Europe/Berlin", 1*60 + 59, time.Date(2027, 3, 28, 0, 59, 0, 0, time.UTC)},   // just before it
		{"Pacific/Kiritimati", 9 * 60, time.Date(2027, 3, 27, 19, 0, 0, 0, time.UTC)}, // UTC+14: the earliest
	} {
		if got := (preferences.Schedule{TimeZone: tc.zone}).LocalInstant(day, tc.minutes); !got.Equal(tc.want) {
			t.Errorf("%s at %s on %s = %v, want %v", tc.zone, preferences.Clock(tc.minutes), day.Format(time.DateOnly), got, tc.want)
		}
	}
}
