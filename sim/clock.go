package sim

import (
	"sync/atomic"
	"time"
)

// Clock is the simulated node's virtual clock. It is safe for concurrent
// use: the pod-resources server reads it from its own goroutines while the
// driver advances it.
type Clock struct {
	start time.Time
	off   atomic.Int64 // nanoseconds since start
}

func newClock(start time.Time) *Clock {
	return &Clock{start: start.UTC()}
}

// Now returns the current simulated time in UTC.
func (c *Clock) Now() time.Time { return c.start.Add(c.offset()) }

func (c *Clock) offset() time.Duration { return time.Duration(c.off.Load()) }

func (c *Clock) set(off time.Duration) { c.off.Store(int64(off)) }
