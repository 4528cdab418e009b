package whatif

import (
	"math"
	"testing"
)

// Latencies outside 2^minExp..2^maxExp seconds, and values that are not
// positive, go to the end buckets and are counted; the edges themselves
// are in range.
func TestHistClamps(t *testing.T) {
	for _, tc := range []struct {
		x       float64
		bucket  int
		clamped uint64
	}{
		{math.Ldexp(1, minExp), 0, 0},
		{math.Ldexp(1, minExp) * 1.5, subN / 2, 0},
		{math.Nextafter(math.Ldexp(1, maxExp), 0), nBucket - 1, 0},
		{math.Ldexp(1, maxExp), nBucket - 1, 1},
		{1e-9, 0, 1},
		{5e-324, 0, 1},
		{0, 0, 1},
		{-1, 0, 1},
		{math.NaN(), 0, 1},
		{math.Inf(1), nBucket - 1, 1},
		{1, (-minExp) * subN, 0},
	} {
		h := newHist()
		h.add(tc.x)
		if h.counts[tc.bucket] != 1 || h.clamped != tc.clamped || h.n != 1 {
			t.Errorf("add(%v): bucket %d holds %d, clamped %d; want 1 there, clamped %d", tc.x, tc.bucket, h.counts[tc.bucket], h.clamped, tc.clamped)
		}
	}
}
