package collector

import "time"

// Clock is where the collector gets time from. It never calls time.Now
// itself: `collect` passes WallClock, `simulate`, `demo` and tests pass the
// simulator's virtual clock, and the code in between is the same.
type Clock interface {
	Now() time.Time
}

// WallClock is the real clock, in UTC.
type WallClock struct{}

// Now returns the current wall time in UTC.
func (WallClock) Now() time.Time { return time.Now().UTC() }
