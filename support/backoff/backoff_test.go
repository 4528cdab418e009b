package backoff

import (
	"testing"
	"time"
)

// The waits double from base, stop at max, and each draw lies in the
// upper half of its nominal value; over many draws both ends of the half
// are approached, so the jitter is real.
func TestJitteredDoublesCapsAndSpreads(t *testing.T) {
	const base, top = 100 * time.Millisecond, 3 * time.Second
	nominal := []time.Duration{100, 200, 400, 800, 1600, 3000, 3000, 3000}
	for attempt, ms := range nominal {
		want := ms * time.Millisecond
		if got := Nominal(attempt, base, top); got != want {
			t.Fatalf("Nominal(%d) = %v, want %v", attempt, got, want)
		}
		lo, hi := want, time.Duration(0)
		for range 2000 {
			d := Jittered(attempt, base, top)
			if d < want/2 || d > want {
				t.Fatalf("Jittered(%d) = %v, want within [%v, %v]", attempt, d, want/2, want)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		if spread := hi - lo; spread < want/4 {
			t.Errorf("Jittered(%d): 2000 draws span only %v of %v", attempt, spread, want/2)
		}
	}
	if got := Nominal(1000, time.Second, time.Minute); got != time.Minute {
		t.Errorf("Nominal after many attempts = %v, want the cap", got)
	}
	for _, d := range []time.Duration{0, 1} {
		if got := Jittered(3, d, d); got != d {
			t.Errorf("Jittered with base and max %v = %v", d, got)
		}
	}
}
