package groundtruth

import (
	"math"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/sim/scenario"
)

// TestMemoryByHand: every figure below is worked out on paper from the
// intervals, not by the code under test.
func TestMemoryByHand(t *testing.T) {
	const s = time.Second
	cases := []struct {
		name           string
		proc           scenario.Process
		integral, chg  float64
		defStart, defE time.Duration
	}{
		// 100 MiB over [0,60]: 6000 MiB-s; rises 100, falls 100.
		{"flat", scenario.Process{MemoryMiB: 100, Start: 0, End: 60 * s}, 6000, 200, 0, 60 * s},
		// 100 on [0,10), 300 on [10,20), 100 on [20,30), 500 on [30,60):
		// 1000 + 3000 + 1000 + 15000 = 20000. Changes: 100 up, 200, 200,
		// 400, then at the end instant 500 -> 100 (400) and 100 down.
		{"steps", scenario.Process{MemoryMiB: 100, Start: 0, End: 60 * s, Memory: []scenario.MemorySegment{
			{From: 10 * s, To: 20 * s, MiB: 300}, {From: 30 * s, To: 60 * s, MiB: 500}}}, 20000, 100 + 200 + 200 + 400 + 400 + 100, 0, 60 * s},
		// Starts in an interval: 50 on [0,10), 0 baseline after: 500;
		// 50 up, 50 down at 10 s, nothing at the end.
		{"starts in an interval", scenario.Process{Start: 0, End: 60 * s, Memory: []scenario.MemorySegment{{From: 0, To: 10 * s, MiB: 50}}}, 500, 100, 0, 60 * s},
		// Clipped to the container's window [20,40]: 300 over [20,30)
		// and 100 over [30,40]: 3000 + 1000; 300 up, 200 down, 100 down.
		{"clipped", scenario.Process{MemoryMiB: 100, Start: 0, End: 60 * s, Memory: []scenario.MemorySegment{{From: 10 * s, To: 30 * s, MiB: 300}}}, 4000, 600, 20 * s, 40 * s},
	}
	for _, c := range cases {
		got, chg := processMemory(c.proc, c.defStart, c.defE, time.Hour)
		if math.Abs(got-c.integral) > 1e-9 || math.Abs(chg-c.chg) > 1e-9 {
			t.Errorf("%s: integral %v change %v, want %v and %v", c.name, got, chg, c.integral, c.chg)
		}
	}
}
