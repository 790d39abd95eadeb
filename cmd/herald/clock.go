package main

import (
	"time"

	"github.com/herald-vpn/herald/internal/config"
)

// replicaClock is the replica's one clock, in UTC: the system clock, moved
// by HERALD_TEST_CLOCK_OFFSET. The offset is for the fault suite alone
// (test/faults runs replicas whose clocks disagree by 2 s to show that
// leases do not depend on them: docs/operations.md, Clocks); it is a
// configuration variable rather than a build-tagged hook so that the
// suite tests the very binary that ships. Leases never read this clock for
// their times (the database's clock decides, internal/sqlstore/clock.go);
// what still does is listed in docs/operations.md.
func replicaClock(cfg config.Config) func() time.Time {
	if off := cfg.TestClockOffset; off != 0 {
		return func() time.Time { return time.Now().Add(off).UTC() }
	}
	return func() time.Time { return time.Now().UTC() }
}
