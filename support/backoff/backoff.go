// Package backoff computes the jittered exponential waits every retry loop
// in gpuledger uses (pod-resources reconnects, ClickHouse retries, the
// outbox shipper), so they all spread out the same way after an outage.
package backoff

import (
	"math/rand/v2"
	"time"
)

// Nominal is the wait before retry number attempt (0-based) without
// jitter: base doubled attempt times, capped at max. A max below base
// caps at max.
func Nominal(attempt int, base, max time.Duration) time.Duration {
	d := base
	for i := 0; i < attempt && d < max; i++ {
		d *= 2
	}
	return min(d, max)
}

// Jittered is Nominal drawn uniformly from its upper half ("equal
// jitter": half fixed, half random), so that collectors on many nodes
// retrying after the same outage do not come back in step. The result is
// always within [Nominal/2, Nominal].
func Jittered(attempt int, base, max time.Duration) time.Duration {
	d := Nominal(attempt, base, max)
	if d <= 1 {
		return d
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
